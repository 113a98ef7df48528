package rest

import (
	"sync"

	"github.com/gin-gonic/gin"
)

// jsonContentType is the Content-Type of every JSON answer, as gin's c.JSON sets it.
const jsonContentType = "application/json; charset=utf-8"

// bodies recycles the buffers that writeJSON writes answers into.
var bodies = sync.Pool{New: func() any { return new([]byte) }}

// writeJSON answers with status and the JSON that appendJSON appends to a recycled buffer:
// the pets of the API are written by hand (models.Pet.AppendJSON), not by reflection.
func writeJSON(c *gin.Context, status int, appendJSON func([]byte) []byte) {
	buf := bodies.Get().(*[]byte)
	*buf = appendJSON((*buf)[:0])
	c.Data(status, jsonContentType, *buf)
	if cap(*buf) <= 64<<10 { // a rare huge answer is left to the collector
		bodies.Put(buf)
	}
}
