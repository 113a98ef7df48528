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

// heldBody is the size of net/http's buffer before it sends a response in chunks
// (bufferBeforeChunkingSize): a body up to it, written at once, is held until the handler
// returns, and net/http then sends its Content-Length itself.
const heldBody = 2048

// writeJSON answers with status and the JSON that appendJSON appends to a recycled buffer:
// the pets of the API are written by hand (models.Pet.AppendJSON), not by reflection. The
// answer carries the headers and body gin's c.Data would write, set without looking their
// names up again in canonical form. Content-Length is set only for a body larger than
// heldBody, which would otherwise go in chunks; net/http sends it for a smaller one, last
// among the headers: a list's answer then has eight header fields of the handler's, not nine,
// and its header map stays a small one (up to eight entries), which costs a third of what a
// larger one does to fill and less to copy and iterate when net/http writes it.
func writeJSON(c *gin.Context, status int, appendJSON func([]byte) []byte) {
	buf := bodies.Get().(*[]byte)
	*buf = appendJSON((*buf)[:0])
	h := c.Writer.Header()
	if len(h["Content-Type"]) == 0 {
		h["Content-Type"] = jsonContentTypes
	}
	if len(*buf) > heldBody {
		h["Content-Length"] = []string{strconv.Itoa(len(*buf))}
	}
	c.Writer.WriteHeader(status)
	_, _ = c.Writer.Write(*buf)
	if cap(*buf) <= 64<<10 { // a rare huge answer is left to the collector
		bodies.Put(buf)
	}
}
