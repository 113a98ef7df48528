package rest

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"petstore/internal/etag"
)

// Cache-Control of the answers that carry a validator. Every answer is private: it needs a key,
// and its rate-limit headers are the caller's own, so that a shared cache must neither store
// nor replay it. A full page that another follows and a single pet never change while nothing
// but the API writes the pets (Deps.Immutable): a client may keep them for good. Anything
// else, the last page of a listing above all, must be revalidated at each use.
const (
	cacheImmutable  = "private, max-age=31536000, immutable"
	cacheRevalidate = "private, no-cache"
)

// writeValidated answers 200 with body, the JSON of a read, with its ETag (derived from body
// and the Link values that go with it) and Cache-Control cc, or 304 Not Modified with the same
// headers and no body when the request's If-None-Match matches the ETag (etag.NoneMatch).
// Headers already set (the rate limit's, Link, the deprecation's) go with either.
func writeValidated(c *gin.Context, body []byte, link []string, cc string) {
	tag := etag.Of(body, strings.Join(link, ", "))
	h := c.Writer.Header()
	h["Etag"] = []string{tag}
	h["Cache-Control"] = []string{cc}
	if link != nil {
		h["Link"] = link
	}
	if etag.NoneMatch(c.Request.Header, tag) {
		c.Status(http.StatusNotModified)
		c.Writer.WriteHeaderNow()
		return
	}
	writeJSON(c, http.StatusOK, body)
}
