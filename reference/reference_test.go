package reference_test

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"petstore/reference"
)

// pagePath is where rest/routes.go mounts the reference.
const pagePath = "/v1/docs"

var srcRefs = regexp.MustCompile(`(?i)\s(?:src|href)\s*=\s*"([^"]*)"`)

func get(t *testing.T, h http.Handler, method, target string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	return rec
}

func TestReferencePage(t *testing.T) {
	h := reference.Handler("/v1/openapi.json")
	rec := get(t, h, http.MethodGet, pagePath)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: got %d; want 200", pagePath, rec.Code)
	}
	for name, want := range map[string]string{
		"Content-Type":           "text/html; charset=utf-8",
		"Cache-Control":          "no-cache",
		"X-Content-Type-Options": "nosniff",
		"Referrer-Policy":        "no-referrer",
	} {
		if got := rec.Header().Get(name); got != want {
			t.Errorf("%s: got %q; want %q", name, got, want)
		}
	}
	body := rec.Body.String()
	if !strings.Contains(body, `data-document="/v1/openapi.json"`) {
		t.Error("the page does not name its document in data-document")
	}
	scripts := 0
	for _, m := range srcRefs.FindAllStringSubmatch(body, -1) {
		ref := m[1]
		if strings.HasPrefix(ref, "data:") || !strings.Contains(ref, "/assets/") {
			continue // the favicon, and the links to the document, playground and schema
		}
		if strings.Contains(ref, "//") {
			t.Errorf("the page refers to %s; want same-origin references only", ref)
			continue
		}
		asset := get(t, h, http.MethodGet, "/v1/"+ref)
		if asset.Code != http.StatusOK || asset.Header().Get("Cache-Control") != "public, max-age=31536000, immutable" {
			t.Errorf("GET /v1/%s: got %d %q; want 200, cached for a year", ref, asset.Code, asset.Header().Get("Cache-Control"))
		}
		if strings.HasSuffix(ref, ".js") {
			scripts++
		}
	}
	if scripts != 2 {
		t.Errorf("the page loads %d scripts; want Scalar's and ours", scripts)
	}
	for _, link := range []string{`href="playground"`, `href="graphql/schema.graphql"`, `href="/v1/openapi.json"`} {
		if !strings.Contains(body, link) {
			t.Errorf("the page lacks the link %s", link)
		}
	}
}

// TestReferenceSecurityPolicy pins the policy: anything looser than this must be argued for.
func TestReferenceSecurityPolicy(t *testing.T) {
	csp := get(t, reference.Handler("/v1/openapi.json"), http.MethodGet, pagePath).Header().Get("Content-Security-Policy")
	want := map[string]string{
		"default-src":     "'none'",
		"script-src":      "'self'",
		"style-src":       "'self' 'unsafe-inline'",
		"img-src":         "'self' data:",
		"connect-src":     "'self'",
		"base-uri":        "'none'",
		"form-action":     "'none'",
		"frame-ancestors": "'none'",
	}
	got := map[string]string{}
	for _, d := range strings.Split(csp, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		got[name] = value
	}
	if len(got) != len(want) {
		t.Errorf("the policy %q has %d directives; want %d", csp, len(got), len(want))
	}
	for name, value := range want {
		if got[name] != value {
			t.Errorf("%s: got %q; want %q", name, got[name], value)
		}
	}
}

func TestReferenceRefusals(t *testing.T) {
	h := reference.Handler("/v1/openapi.json")
	if rec := get(t, h, http.MethodPost, pagePath); rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: got %d Allow %q; want 405 with Allow: GET, HEAD", rec.Code, rec.Header().Get("Allow"))
	}
	if rec := get(t, h, http.MethodGet, pagePath+"/assets/nope.js"); rec.Code != http.StatusNotFound {
		t.Errorf("an unknown asset: got %d; want 404", rec.Code)
	}
	if rec := get(t, h, http.MethodHead, pagePath); rec.Code != http.StatusOK || rec.Body.Len() != 0 {
		t.Errorf("HEAD: got %d with %d bytes; want 200 and no body", rec.Code, rec.Body.Len())
	}
}

func TestReferenceHandlerRefusesOtherOrigins(t *testing.T) {
	for _, doc := range []string{"", "https://api.example.com/v1/openapi.json", "//api.example.com/v1/openapi.json"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Handler(%q): got no panic; want one", doc)
				}
			}()
			reference.Handler(doc)
		}()
	}
}

// discard is a ResponseWriter that keeps the status and counts the body.
type discard struct {
	header http.Header
	code   int
	n      int
}

func (d *discard) Header() http.Header         { return d.header }
func (d *discard) WriteHeader(code int)        { d.code = code }
func (d *discard) Write(p []byte) (int, error) { d.n += len(p); return len(p), nil }

// liveHeap returns the bytes of live heap objects after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestAssetsStayOffTheHeap: the page's assets are served from where the binary embeds them.
// Scalar's build alone is 4.3 MB: copied onto the heap, it would stay resident there for the
// life of the process, and in a large heap count three times over in the collector's goal.
func TestAssetsStayOffTheHeap(t *testing.T) {
	before := liveHeap()
	h := reference.Handler("/v1/openapi.json")
	served := 0
	for _, m := range srcRefs.FindAllStringSubmatch(get(t, h, http.MethodGet, pagePath).Body.String(), -1) {
		if !strings.Contains(m[1], "/assets/") {
			continue
		}
		w := &discard{header: http.Header{}, code: http.StatusOK}
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/"+m[1], nil))
		if w.code != http.StatusOK {
			t.Fatalf("GET /v1/%s: got %d", m[1], w.code)
		}
		served += w.n
	}
	grown := int64(liveHeap()) - int64(before)
	runtime.KeepAlive(h)
	if served < 4<<20 {
		t.Fatalf("the page's assets are %d bytes; want Scalar's 4 MB or more", served)
	}
	if grown > 512<<10 {
		t.Errorf("the handler, having served its page and %d bytes of assets, holds %d bytes of heap; want at most 512 KiB", served, grown)
	}
}
