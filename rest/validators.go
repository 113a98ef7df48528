package rest

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"petstore/internal/etag"
)

// writeValidated answers 200 with body, the JSON of a read, with its ETag (derived from body
// and the Link values that go with it) and Cache-Control cc (etag.Immutable or
// etag.Revalidate), or 304 Not Modified with the same headers and no body when the request's
// If-None-Match matches the ETag (etag.Set). Headers already set (the rate limit's, Link, the
// deprecation's) go with either.
func writeValidated(c *gin.Context, body []byte, link []string, cc string) {
	h := c.Writer.Header()
	if link != nil {
		h["Link"] = link
	}
	if etag.Set(h, c.Request.Header, body, strings.Join(link, ", "), cc) {
		c.Status(http.StatusNotModified)
		c.Writer.WriteHeaderNow()
		return
	}
	writeJSON(c, http.StatusOK, body)
}
