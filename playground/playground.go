// Package playground serves GraphiQL from assets embedded in the binary, so that the
// playground works on a machine with no internet access.
//
// The page loads nothing from another origin: GraphiQL, React and ReactDOM are vendored under
// vendor/ (refreshed from npm by update-assets.sh), and the page's Content-Security-Policy
// allows scripts, styles and requests to its own origin only (see contentSecurityPolicy).
package playground

import (
	"bytes"
	"crypto/rand"
	"html/template"
	"net/http"
	"net/url"
	"path"
	"strings"

	"petstore/internal/webasset"
)

// page is the playground's HTML; it takes a pageData.
var page = template.Must(template.ParseFS(files, "page.html"))

type pageData struct {
	Endpoint   string
	Documents  string // the server's PETSTORE_DOCUMENTS: "listed" and "ids" get a notice
	StyleNonce string // lets GraphiQL's dialogs add their <style> elements
	Asset      func(embedded string) (string, error)
}

// Handler returns the playground for the GraphQL endpoint at endpoint (a URL path such as
// "/v1/graphql", or an absolute URL). Mounted at a path P, it serves the page at P and its
// scripts and style sheets at P/assets/NAME, so both routes must lead to it; any other asset
// name is a 404. The page sends "Authorization: Bearer <key>" with the key typed into its key
// field. Its schema comes from the SDL at endpoint + "/schema.graphql", fetched without a key
// (GraphiQL introspects, with the key, where that fails). Handler panics on an endpoint that is
// empty or not a URL.
func Handler(endpoint string) http.Handler {
	return HandlerWith(endpoint, Options{})
}

// Options are what the page says of the server beside its endpoint.
type Options struct {
	// Documents is which GraphQL documents the server runs (graph.DocumentsMode): under
	// "listed" the page explains that only the exact text of a listed document runs, under
	// "ids" that nothing typed in it runs, and how an app registers its documents.
	Documents string
}

// HandlerWith is Handler for a server that opts describe.
func HandlerWith(endpoint string, opts Options) http.Handler {
	u, err := url.Parse(endpoint)
	if endpoint == "" || err != nil {
		panic("playground: the GraphQL endpoint must be a URL path or URL, got " + endpoint)
	}
	connect := "'self'"
	if u.Host != "" && u.Scheme != "" {
		connect += " " + u.Scheme + "://" + u.Host
	} else if u.Host != "" {
		connect += " " + u.Host
	}
	return &handler{endpoint: endpoint, documents: opts.Documents, connect: connect, assets: webasset.Load(files, "playground")}
}

type handler struct {
	endpoint  string
	documents string
	connect   string // the origins the page may send requests to
	assets    *webasset.Set
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.assets.ServePage(w, r, "the playground", h.servePage)
}

// servePage writes the HTML page. Its asset addresses are relative to the page's own address, so
// the page also works behind a proxy that mounts the service under a prefix.
func (h *handler) servePage(w http.ResponseWriter, r *http.Request) {
	base := path.Base(r.URL.Path)
	nonce := rand.Text()
	var buf bytes.Buffer
	err := page.Execute(&buf, pageData{
		Endpoint:   h.endpoint,
		Documents:  h.documents,
		StyleNonce: nonce,
		Asset:      func(p string) (string, error) { return h.assets.URL(base, p) },
	})
	if err != nil {
		http.Error(w, "the playground page failed to render", http.StatusInternalServerError)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("Content-Security-Policy", contentSecurityPolicy(h.connect, nonce))
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(buf.Bytes())
}

// contentSecurityPolicy returns the page's policy: scripts, styles and images from its own
// origin only, and requests to connect (the endpoint's origin). Two exceptions, both needed by
// GraphiQL 4: its style sheet inlines its fonts and a few images as data: URLs, and its dialogs
// (settings, shortcuts) add a <style> element, which carries styleNonce (a fresh one for every
// page) because playground.js hands it to them; no 'unsafe-inline' is needed.
func contentSecurityPolicy(connect, styleNonce string) string {
	return strings.Join([]string{
		"default-src 'none'",
		"script-src 'self'",
		"style-src 'self' 'nonce-" + styleNonce + "'",
		"img-src 'self' data:",
		"font-src data:",
		"connect-src " + connect,
		"base-uri 'none'",
		"form-action 'none'",
		"frame-ancestors 'none'",
	}, "; ")
}
