// Package reference serves the REST API reference: the served OpenAPI document rendered by
// Scalar's API reference, embedded in the binary, so that it works with no internet access.
//
// The page loads nothing from another origin: Scalar's standalone build is vendored under
// vendor/ (refreshed from npm by update-assets.sh), and the page's Content-Security-Policy
// allows scripts and requests to its own origin only (see contentSecurityPolicy). Its "try it"
// client sends requests to the server that serves the page, with the API key typed into it.
package reference

import (
	"bytes"
	"html/template"
	"net/http"
	"path"
	"strings"

	"petstore/internal/webasset"
)

// page is the reference's HTML; it takes a pageData.
var page = template.Must(template.ParseFS(files, "page.html"))

type pageData struct {
	Document string
	Asset    func(embedded string) (string, error)
}

// Handler returns the reference page of the OpenAPI document at document, a URL path on the
// same origin such as "/v1/openapi.json" (or one relative to the page). Mounted at a path P, it
// serves the page at P and its scripts and style sheets at P/assets/NAME, so both routes must
// lead to it; any other asset name is a 404. Requests made from the page go to the base of the
// document's address (/v1 for /v1/openapi.json). Handler panics on an empty document address or
// one with a scheme or host: the page's policy allows its own origin only.
func Handler(document string) http.Handler {
	if document == "" || strings.Contains(document, "//") || strings.Contains(document, ":") {
		panic("reference: the OpenAPI document must be a same-origin URL path, got " + document)
	}
	return &handler{document: document, assets: webasset.Load(files, "reference")}
}

type handler struct {
	document string
	assets   *webasset.Set
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.assets.ServePage(w, r, "the API reference", h.servePage)
}

// servePage writes the HTML page. Its asset addresses are relative to the page's own address, so
// the page also works behind a proxy that mounts the service under a prefix.
func (h *handler) servePage(w http.ResponseWriter, r *http.Request) {
	base := path.Base(r.URL.Path)
	var buf bytes.Buffer
	err := page.Execute(&buf, pageData{
		Document: h.document,
		Asset:    func(p string) (string, error) { return h.assets.URL(base, p) },
	})
	if err != nil {
		http.Error(w, "the API reference page failed to render", http.StatusInternalServerError)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("Content-Security-Policy", contentSecurityPolicy)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(buf.Bytes())
}

// contentSecurityPolicy is the page's policy: scripts, style sheets and requests to its own
// origin only, and no frames, forms, workers or fonts at all. One exception, needed by
// Scalar: inline styles ('unsafe-inline' in style-src), because its build adds several <style>
// elements (only one of which takes a nonce) and sets style attributes. Styles cannot run
// script, and connect-src keeps them from sending anything away. The favicon is a data: URL.
// Scalar's bundled zod probes for eval once and falls back when the policy refuses it.
var contentSecurityPolicy = strings.Join([]string{
	"default-src 'none'",
	"script-src 'self'",
	"style-src 'self' 'unsafe-inline'",
	"img-src 'self' data:",
	"connect-src 'self'",
	"base-uri 'none'",
	"form-action 'none'",
	"frame-ancestors 'none'",
}, "; ")
