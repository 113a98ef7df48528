package e2e

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"petstore/app"
)

// Cache-Control of the answers: a page that another follows and a single pet never change
// (while the page cache is on); anything else must be revalidated.
const (
	immutable  = "private, max-age=31536000, immutable"
	revalidate = "private, no-cache"
)

// conditional is get(path) with If-None-Match fields.
func conditional(path string, ifNoneMatch ...string) request {
	r := get(path)
	r.header = http.Header{"If-None-Match": ifNoneMatch}
	return r
}

// remaining returns X-RateLimit-Remaining of resp.
func remaining(t *testing.T, resp response) int {
	t.Helper()
	n, err := strconv.Atoi(resp.header.Get("X-RateLimit-Remaining"))
	if err != nil {
		t.Fatalf("X-RateLimit-Remaining %q: %v", resp.header.Get("X-RateLimit-Remaining"), err)
	}
	return n
}

// TestConditionalList: a page of GET /v1/pets carries an ETag; If-None-Match with it (weak or
// strong, alone, in a list, or "*") answers 304 with the 200's headers and no body, charged
// like any request; a tag that does not match, or a malformed field, gets the page.
func TestConditionalList(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, api *testAPI) {
		for i := range 3 {
			if r := api.do(t, post("/v1/pets", fmt.Sprintf(`{"name":"p%d","categoryId":1}`, i))); r.status != 201 {
				t.Fatalf("seed: %d %s", r.status, r.body)
			}
		}
		const page = "/v1/pets?limit=2"
		awayFromMinuteEdge(t) // the requests below count one minute's budget
		full := api.do(t, get(page))
		tag := full.header.Get("ETag")
		if full.status != 200 || len(tag) < 3 || tag[0] != '"' {
			t.Fatalf("GET %s: %d, ETag %q; want 200 and a strong tag", page, full.status, tag)
		}
		if cc := full.header.Get("Cache-Control"); cc != immutable {
			t.Errorf("Cache-Control of a page that another follows: got %q; want %q", cc, immutable)
		}
		again := api.do(t, get(page))
		if again.header.Get("ETag") != tag || again.body != full.body {
			t.Errorf("the same page twice: ETag %q then %q", tag, again.header.Get("ETag"))
		}
		if other := newTestAPI(t, api.db).do(t, get(page)); other.header.Get("ETag") != tag {
			t.Errorf("the same page from another instance: ETag %q; want %q", other.header.Get("ETag"), tag)
		}
		last := remaining(t, again)
		for _, tt := range []struct {
			name   string
			fields []string
			want   int
		}{
			{"the tag", []string{tag}, 304},
			{"weak", []string{"W/" + tag}, 304},
			{"in a list", []string{`"other", ` + tag}, 304},
			{"across fields", []string{`"other"`, tag}, 304},
			{"star", []string{"*"}, 304},
			{"another tag", []string{`"other"`}, 200},
			{"malformed", []string{tag[1 : len(tag)-1]}, 200},
			{"star in a list", []string{"*, " + tag}, 200},
		} {
			t.Run(tt.name, func(t *testing.T) {
				resp := api.do(t, conditional(page, tt.fields...))
				if resp.status != tt.want {
					t.Fatalf("If-None-Match %q: got %d; want %d", tt.fields, resp.status, tt.want)
				}
				if n := remaining(t, resp); n != last-1 {
					t.Errorf("X-RateLimit-Remaining: got %d; want %d (the request charged)", n, last-1)
				}
				last--
				for _, h := range []string{"ETag", "Cache-Control", "Link"} {
					if got, want := resp.header.Get(h), full.header.Get(h); got != want {
						t.Errorf("%s: got %q; want %q", h, got, want)
					}
				}
				for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Reset", "RateLimit-Policy", "RateLimit"} {
					if resp.header.Get(h) == "" {
						t.Errorf("no %s", h)
					}
				}
				if tt.want == 304 && (resp.body != "" || resp.header.Get("Content-Type") != "") {
					t.Errorf("304 with Content-Type %q and body %q; want neither", resp.header.Get("Content-Type"), resp.body)
				}
				if tt.want == 200 && resp.body != full.body {
					t.Errorf("body: got %s; want %s", resp.body, full.body)
				}
			})
		}
	})
}

// TestConditionalLastPage: the last page of a listing must be revalidated, and its ETag
// changes with the pets it holds: once a pet is added, the old tag gets the new page.
func TestConditionalLastPage(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, api *testAPI) {
		if r := api.do(t, post("/v1/pets", `{"name":"first","categoryId":1}`)); r.status != 201 {
			t.Fatalf("seed: %d %s", r.status, r.body)
		}
		before := api.do(t, get("/v1/pets"))
		tag := before.header.Get("ETag")
		if cc := before.header.Get("Cache-Control"); cc != revalidate {
			t.Errorf("Cache-Control of the last page: got %q; want %q", cc, revalidate)
		}
		if r := api.do(t, conditional("/v1/pets", tag)); r.status != 304 {
			t.Fatalf("unchanged last page: got %d; want 304", r.status)
		}
		if r := api.do(t, post("/v1/pets", `{"name":"second","categoryId":1}`)); r.status != 201 {
			t.Fatalf("POST: %d %s", r.status, r.body)
		}
		after := api.do(t, conditional("/v1/pets", tag))
		if after.status != 200 || after.header.Get("ETag") == tag {
			t.Fatalf("last page after a pet was added: %d, ETag %q (was %q); want 200 and a new tag", after.status, after.header.Get("ETag"), tag)
		}
	})
}

// TestConditionalGetPet: a single pet is immutable, and its 304 keeps the deprecation headers;
// an error answer carries no validator and ignores If-None-Match.
func TestConditionalGetPet(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, api *testAPI) {
		if r := api.do(t, post("/v1/pets", `{"name":"Rex","categoryId":1}`)); r.status != 201 {
			t.Fatalf("seed: %d %s", r.status, r.body)
		}
		full := api.do(t, get("/v1/pets/1"))
		if cc := full.header.Get("Cache-Control"); full.status != 200 || cc != immutable {
			t.Fatalf("GET /v1/pets/1: %d, Cache-Control %q; want 200, %q", full.status, cc, immutable)
		}
		resp := api.do(t, conditional("/v1/pets/1", full.header.Get("ETag")))
		if resp.status != 304 {
			t.Fatalf("If-None-Match with its tag: got %d; want 304", resp.status)
		}
		for _, h := range []string{"ETag", "Cache-Control", "Deprecation", "Sunset", "Link"} {
			if got := resp.header.Get(h); got == "" || got != full.header.Get(h) {
				t.Errorf("304 %s: got %q; want %q", h, got, full.header.Get(h))
			}
		}
		missing := api.do(t, conditional("/v1/pets/2", "*"))
		checkError(t, missing, 404, "not_found", "2")
		if tag := missing.header.Get("ETag"); tag != "" {
			t.Errorf("404 with ETag %q; want none", tag)
		}
	})
}

// TestPageCacheOff: with PETSTORE_PAGE_CACHE=off no answer claims to be immutable (rows may
// change behind the API's back) and /metrics has no page cache; validators still work.
func TestPageCacheOff(t *testing.T) {
	t.Parallel()
	cfg := app.DefaultConfig()
	cfg.PageCacheBytes = 0
	api := newTestAPIConfig(t, dbtestSQLite(t), cfg)
	for range 3 {
		api.do(t, post("/v1/pets", `{"name":"Rex","categoryId":1}`))
	}
	for _, path := range []string{"/v1/pets?limit=1", "/v1/pets", "/v1/pets/1"} {
		resp := api.do(t, get(path))
		if cc := resp.header.Get("Cache-Control"); cc != revalidate {
			t.Errorf("GET %s: Cache-Control %q; want %q", path, cc, revalidate)
		}
		if r := api.do(t, conditional(path, resp.header.Get("ETag"))); r.status != 304 {
			t.Errorf("GET %s with its ETag: got %d; want 304", path, r.status)
		}
	}
	if m := api.do(t, request{method: http.MethodGet, path: "/metrics", noAuth: true}); m.status != 200 || strings.Contains(m.body, "petstore_page_cache") {
		t.Errorf("/metrics with the cache off: %d, page cache figures present: %v", m.status, strings.Contains(m.body, "petstore_page_cache"))
	}
}
