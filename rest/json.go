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

// jsonContentTypes is the Content-Type header value of every JSON answer, shared as gin shares
// its own.
var jsonContentTypes = []string{jsonContentType}

// writeJSON answers with status and the JSON that appendJSON appends to a recycled buffer:
// the pets of the API are written by hand (models.Pet.AppendJSON), not by reflection. It
// writes what gin's c.Data would, the same headers and body, without looking the header
// names up again in their canonical form.
func writeJSON(c *gin.Context, status int, appendJSON func([]byte) []byte) {
	buf := bodies.Get().(*[]byte)
	*buf = appendJSON((*buf)[:0])
	h := c.Writer.Header()
	if len(h["Content-Type"]) == 0 {
		h["Content-Type"] = jsonContentTypes
	}
	h["Content-Length"] = []string{strconv.Itoa(len(*buf))}
	c.Writer.WriteHeader(status)
	_, _ = c.Writer.Write(*buf)
	if cap(*buf) <= 64<<10 { // a rare huge answer is left to the collector
		bodies.Put(buf)
	}
}
