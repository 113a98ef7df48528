package rest

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"petstore/apierr"
)

// atRoot answers every request for /, which has no resource of its own: a browser's GET or
// HEAD is sent to the REST reference when docs (it is served), anything else gets a 404 Error
// body that says where the API and its descriptions are. Other paths go on to the next handler.
//
// The redirect is a 303 See Other: RFC 9110 gives it to a target with no representation of
// its own whose Location is descriptive of it, which is what / and the reference are.
func atRoot(docs bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.Request.URL.Path != "/" {
			return
		}
		c.Header("Vary", "Accept") // one address, two answers: caches must keep them apart
		m := c.Request.Method
		if docs && (m == http.MethodGet || m == http.MethodHead) && wantsHTML(c.Request) {
			seeOther(c, "v1/docs")
			return
		}
		where := "the API is under /v1, described by /v1/openapi.json"
		if docs {
			where = "the API is under /v1; its reference page is /v1/docs, its OpenAPI document /v1/openapi.json"
		}
		writeError(c, apierr.New(apierr.NotFound, "no such resource: %s /; %s", m, where))
	}
}

// toPlayground sends a browser that opens the GraphQL endpoint itself (a GET without a query
// string that accepts text/html and is no WebSocket upgrade) to the playground, and lets every
// other request go on to GraphQL. It runs before the request is identified, so that the
// answer, like the playground's, needs no key and is charged to no budget.
//
// It redirects rather than serving the page in place: the page keeps one address, whose
// relative asset paths and ?query= links work, and whose address bar a user can share.
func toPlayground(c *gin.Context) {
	r := c.Request
	if r.URL.RawQuery != "" || r.Header.Get("Upgrade") != "" || !wantsHTML(r) {
		return
	}
	c.Header("Vary", "Accept")
	seeOther(c, "playground")
}

// seeOther answers 303 with location, a path relative to the request's (not made absolute, as
// http.Redirect would), so that the redirect also works behind a proxy that mounts the service
// under a prefix. The answer has no body.
func seeOther(c *gin.Context, location string) {
	c.Header("Location", location)
	c.Status(http.StatusSeeOther)
	c.Abort()
}

// wantsHTML reports whether r's Accept names text/html with a quality above zero: a browser
// opening an address. API clients send no Accept, */* or JSON types, none of which counts.
func wantsHTML(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for _, item := range strings.Split(v, ",") {
			media, params, _ := strings.Cut(item, ";")
			if strings.EqualFold(strings.TrimSpace(media), "text/html") {
				return !zeroQuality(params)
			}
		}
	}
	return false
}

// zeroQuality reports whether the parameters of an Accept item (after its media type) hold
// q=0, which refuses the type.
func zeroQuality(params string) bool {
	for _, p := range strings.Split(params, ";") {
		k, v, _ := strings.Cut(p, "=")
		if strings.EqualFold(strings.TrimSpace(k), "q") {
			q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return err == nil && q == 0
		}
	}
	return false
}
