package rest

import (
	"encoding/json"
	"strconv"

	"github.com/gin-gonic/gin"
)

// jsonContentType is the Content-Type of every JSON answer, as gin's c.JSON sets it.
const jsonContentType = "application/json; charset=utf-8"

// jsonContentTypes is the value of a Content-Type header of JSON; net/http copies it when the
// header is written, so that answers can share it.
var jsonContentTypes = []string{jsonContentType}

// writeJSON answers with status and body, JSON written by marshalJSON. It sets the two headers in the map, with the canonical names, as
// c.Data would, and Content-Length, which c.Data does not: net/http would send a body larger
// than its buffer (2 KiB) in chunks without it.
func writeJSON(c *gin.Context, status int, body []byte) {
	h := c.Writer.Header()
	h["Content-Type"] = jsonContentTypes
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	c.Status(status)
	_, _ = c.Writer.Write(body)
}

// marshalJSON returns v as encoding/json writes it. The values the handlers write (pets and
// lists of them) hold only strings, integers and a status: they always marshal.
func marshalJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // a pet that cannot be marshalled is a bug; gin's recovery answers 500
	}
	return b
}
