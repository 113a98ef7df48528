package playground_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"petstore/playground"
)

// pagePath is where rest/routes.go mounts the playground.
const pagePath = "/v1/playground"

var (
	// htmlRefs finds the addresses the browser fetches from HTML: src and href attributes.
	htmlRefs = regexp.MustCompile(`(?i)\s(?:src|href)\s*=\s*"([^"]*)"`)
	// cssRefs finds the addresses the browser fetches from CSS: url(...) and @import "...".
	cssRefs = regexp.MustCompile(`(?i)url\(\s*(?:"([^"]*)"|'([^']*)'|([^)'"\s]*))\s*\)|@import\s+(?:"([^"]*)"|'([^']*)')`)
	// absolute matches any absolute URL: with a scheme or protocol-relative.
	absolute = regexp.MustCompile(`(?i)https?://|^//`)
)

func get(t *testing.T, h http.Handler, target string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// pageRefs returns every address the page refers to with src or href, resolved against it.
func pageRefs(t *testing.T, body string) []*url.URL {
	t.Helper()
	base, _ := url.Parse("http://petstore.test" + pagePath)
	var refs []*url.URL
	for _, m := range htmlRefs.FindAllStringSubmatch(body, -1) {
		u, err := base.Parse(m[1])
		if err != nil {
			t.Fatalf("the page refers to %q: %v", m[1], err)
		}
		refs = append(refs, u)
	}
	return refs
}

func TestPlaygroundPage(t *testing.T) {
	h := playground.Handler("/v1/graphql")
	rec := get(t, h, pagePath)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: got %d; want 200", pagePath, rec.Code)
	}
	if got := rec.Header().Get("Content-Type"); got != "text/html; charset=utf-8" {
		t.Errorf("Content-Type: got %q; want text/html; charset=utf-8", got)
	}
	if got := rec.Header().Get("Cache-Control"); got != "no-cache" {
		t.Errorf("Cache-Control: got %q; want no-cache", got)
	}
	body := rec.Body.String()
	if loc := absolute.FindStringIndex(body); loc != nil {
		t.Errorf("the page holds the absolute URL %q; want same-origin references only", body[loc[0]:min(loc[1]+40, len(body))])
	}
	for _, want := range []string{`id="api-key"`, `data-endpoint="/v1/graphql"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	scripts, styles := 0, 0
	for _, ref := range pageRefs(t, body) {
		if ref.Scheme == "data" || ref.Host == "petstore.test" && ref.Path == "/v1/docs" { // the REST reference
			continue
		}
		if ref.Host != "petstore.test" || !strings.HasPrefix(ref.Path, pagePath+"/assets/") {
			t.Errorf("the page refers to %s; want %s/assets/...", ref, pagePath)
			continue
		}
		switch {
		case strings.HasSuffix(ref.Path, ".js"):
			scripts++
		case strings.HasSuffix(ref.Path, ".css"):
			styles++
		}
	}
	if scripts != 5 || styles != 2 {
		t.Errorf("the page loads %d scripts and %d style sheets; want React, ReactDOM, GraphiQL, graphql-ws, ours (5) and GraphiQL's, ours (2)", scripts, styles)
	}
}

func TestPlaygroundSecurityPolicy(t *testing.T) {
	h := playground.Handler("/v1/graphql")
	first, second := get(t, h, pagePath), get(t, h, pagePath)
	csp := first.Header().Get("Content-Security-Policy")
	allowed := regexp.MustCompile(`^(?:'self'|'none'|data:|'nonce-[A-Za-z0-9+/=_-]{16,}')$`)
	directives := map[string]bool{}
	for _, d := range strings.Split(csp, ";") {
		fields := strings.Fields(d)
		if len(fields) == 0 {
			continue
		}
		directives[fields[0]] = true
		for _, src := range fields[1:] {
			if !allowed.MatchString(src) {
				t.Errorf("the policy allows %s in %s; want only 'self', 'none', data: and a nonce", src, fields[0])
			}
		}
	}
	for _, want := range []string{"default-src", "script-src", "style-src", "connect-src", "frame-ancestors"} {
		if !directives[want] {
			t.Errorf("the policy %q has no %s", csp, want)
		}
	}
	nonce := regexp.MustCompile(`'nonce-([^']+)'`).FindStringSubmatch(csp)
	if nonce == nil || !strings.Contains(first.Body.String(), `data-style-nonce="`+nonce[1]+`"`) {
		t.Errorf("the page does not hand its style nonce to its script; policy %q", csp)
	}
	if csp == second.Header().Get("Content-Security-Policy") {
		t.Error("two pages got the same policy; want a fresh nonce for every page")
	}
	remote := get(t, playground.Handler("https://api.example.com/v1/graphql"), pagePath)
	if got := remote.Header().Get("Content-Security-Policy"); !strings.Contains(got, "connect-src 'self' https://api.example.com;") {
		t.Errorf("an endpoint on another origin: got policy %q; want its origin in connect-src", got)
	}
}

func TestPlaygroundAssets(t *testing.T) {
	h := playground.Handler("/v1/graphql")
	page := get(t, h, pagePath).Body.String()
	for _, ref := range pageRefs(t, page) {
		if ref.Scheme == "data" || ref.Host != "petstore.test" || ref.Path == "/v1/docs" { // the host fails TestPlaygroundPage
			continue
		}
		t.Run(ref.Path[strings.LastIndex(ref.Path, "/")+1:], func(t *testing.T) {
			rec := get(t, h, ref.Path)
			if rec.Code != http.StatusOK {
				t.Fatalf("GET %s: got %d; want 200", ref.Path, rec.Code)
			}
			want := "text/javascript; charset=utf-8"
			if strings.HasSuffix(ref.Path, ".css") {
				want = "text/css; charset=utf-8"
			}
			if got := rec.Header().Get("Content-Type"); got != want {
				t.Errorf("Content-Type: got %q; want %q", got, want)
			}
			if got := rec.Header().Get("Cache-Control"); !strings.Contains(got, "immutable") || !strings.Contains(got, "max-age=31536000") {
				t.Errorf("Cache-Control: got %q; want a year, immutable", got)
			}
			if got := rec.Header().Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options: got %q; want nosniff", got)
			}
			if rec.Body.Len() == 0 {
				t.Error("empty body")
			}
			if strings.HasSuffix(ref.Path, ".css") {
				checkStyleSheet(t, h, ref, rec.Body.String())
			}
		})
	}
}

// checkStyleSheet fails t for every url() or @import of css that is not a data: URL and does not
// resolve to an asset the handler serves.
func checkStyleSheet(t *testing.T, h http.Handler, sheet *url.URL, css string) {
	t.Helper()
	for _, m := range cssRefs.FindAllStringSubmatch(css, -1) {
		ref := strings.Join(m[1:], "")
		if strings.HasPrefix(strings.ToLower(ref), "data:") || strings.HasPrefix(ref, "#") {
			continue
		}
		if absolute.MatchString(ref) {
			t.Errorf("%s refers to %s; want same-origin references only", sheet.Path, ref)
			continue
		}
		u, err := sheet.Parse(ref)
		if err != nil || get(t, h, u.Path).Code != http.StatusOK {
			t.Errorf("%s refers to %s, which the playground does not serve", sheet.Path, ref)
		}
	}
}

func TestPlaygroundAssetsCompressed(t *testing.T) {
	h := playground.Handler("/v1/graphql")
	var script string
	for _, ref := range pageRefs(t, get(t, h, pagePath).Body.String()) {
		if strings.Contains(ref.Path, "/graphiql.min.") && strings.HasSuffix(ref.Path, ".js") {
			script = ref.Path
		}
	}
	plain := get(t, h, script)
	zipped := get(t, h, script, "Accept-Encoding", "br, gzip")
	if got := zipped.Header().Get("Content-Encoding"); got != "gzip" {
		t.Fatalf("Content-Encoding with Accept-Encoding: gzip: got %q; want gzip", got)
	}
	zr, err := gzip.NewReader(zipped.Body)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(body, plain.Body.Bytes()) {
		t.Errorf("the gzipped body does not unzip to the plain one (err %v)", err)
	}
	if plain.Header().Get("ETag") == zipped.Header().Get("ETag") {
		t.Error("the plain and the gzipped body share an ETag; want one each")
	}
	if got := get(t, h, script, "Accept-Encoding", "gzip;q=0").Header().Get("Content-Encoding"); got != "" {
		t.Errorf("Content-Encoding with gzip;q=0: got %q; want none", got)
	}
	again := get(t, h, script, "If-None-Match", plain.Header().Get("ETag"))
	if again.Code != http.StatusNotModified {
		t.Errorf("GET with the ETag: got %d; want 304", again.Code)
	}
}

func TestPlaygroundRefusals(t *testing.T) {
	h := playground.Handler("/v1/graphql")
	tests := []struct {
		name   string
		method string
		target string
		want   int
	}{
		{"unknown asset", http.MethodGet, pagePath + "/assets/nope.js", http.StatusNotFound},
		{"asset without its hash", http.MethodGet, pagePath + "/assets/graphiql.min.js", http.StatusNotFound},
		{"vendored licence", http.MethodGet, pagePath + "/assets/LICENSE", http.StatusNotFound},
		{"page template", http.MethodGet, pagePath + "/assets/page.html", http.StatusNotFound},
		{"path traversal", http.MethodGet, pagePath + "/assets/../playground.go", http.StatusNotFound},
		{"empty asset name", http.MethodGet, pagePath + "/assets/", http.StatusNotFound},
		{"POST", http.MethodPost, pagePath, http.StatusMethodNotAllowed},
		{"HEAD", http.MethodHead, pagePath, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.target, nil))
			if rec.Code != tt.want {
				t.Errorf("%s %s: got %d; want %d", tt.method, tt.target, rec.Code, tt.want)
			}
			if tt.method == http.MethodHead && rec.Body.Len() != 0 {
				t.Errorf("HEAD: got a %d-byte body; want none", rec.Body.Len())
			}
		})
	}
}

func TestPlaygroundHandlerPanicsWithoutEndpoint(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error(`Handler(""): got no panic; want one`)
		}
	}()
	playground.Handler("")
}
