package rest

import (
	"strconv"
	"sync"

	"github.com/gin-gonic/gin"
)

// jsonContentType is the Content-Type of every JSON answer, as gin's c.JSON sets it.
const jsonContentType = "application/json; charset=utf-8"

// bodies recycles the buffers that writeJSON writes answers into.
var bodies = sync.Pool{New: func() any { return new([]byte) }}

// writeJSON answers with status and the JSON that appendJSON appends to a recycled buffer:
// the pets of the API are written by hand (models.Pet.AppendJSON), not by reflection.
//
// It answers as c.Data(status, jsonContentType, body) does (status, then Content-Type unless
// one is set, Content-Length, the body; a failed write is noted in c.Errors and aborts), without
// its allocations: the Content-Type value is one shared slice, never written to (net/http only
// reads it, and an append to a full slice copies it), and the header names are canonical already.
func writeJSON(c *gin.Context, status int, appendJSON func([]byte) []byte) {
	buf := bodies.Get().(*[]byte)
	*buf = appendJSON((*buf)[:0])
	c.Status(status)
	h := c.Writer.Header()
	if len(h["Content-Type"]) == 0 {
		h["Content-Type"] = jsonContentTypeValue
	}
	if len(*buf) > 0 {
		h["Content-Length"] = []string{strconv.Itoa(len(*buf))}
	}
	if _, err := c.Writer.Write(*buf); err != nil {
		_ = c.Error(err)
		c.Abort()
	}
	if cap(*buf) <= 64<<10 { // a rare huge answer is left to the collector
		bodies.Put(buf)
	}
}

// jsonContentTypeValue is the Content-Type header value of writeJSON's answers.
var jsonContentTypeValue = []string{jsonContentType}
