package e2e

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"petstore/apierr"
	"petstore/app"
)

// browserAccept is the Accept header Chromium sends when it opens an address.
const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"

// accepting returns a request of method for path without a key, with Accept: accept when not
// empty.
func accepting(method, path, accept string) request {
	req := request{method: method, path: path, noAuth: true, header: http.Header{}}
	if accept != "" {
		req.header.Set("Accept", accept)
	}
	return req
}

// checkSeeOther checks that resp is a 303 to want (a path), uncharged and marked as varying
// with Accept.
func checkSeeOther(t *testing.T, req request, resp response, want string) {
	t.Helper()
	if resp.status != http.StatusSeeOther {
		t.Fatalf("%s %s: got %d %s; want 303", req.method, req.path, resp.status, resp.body)
	}
	base, _ := url.Parse("http://petstore.test" + req.path)
	loc, err := base.Parse(resp.header.Get("Location"))
	if err != nil || loc.Path != want || loc.Host != "petstore.test" {
		t.Errorf("%s %s: Location %q; want one that leads to %s", req.method, req.path, resp.header.Get("Location"), want)
	}
	if !strings.Contains(resp.header.Get("Vary"), "Accept") {
		t.Errorf("%s %s: Vary %q; want Accept", req.method, req.path, resp.header.Get("Vary"))
	}
	if got := resp.header.Get("X-RateLimit-Limit"); got != "" {
		t.Errorf("%s %s: X-RateLimit-Limit %q; want the answer charged to no budget", req.method, req.path, got)
	}
}

// TestRootSendsBrowsersToReference checks / : a browser is sent to the REST reference, an API
// client gets a 404 Error body that says where the API and its descriptions are.
func TestRootSendsBrowsersToReference(t *testing.T) {
	t.Parallel()
	api := newTestAPI(t, dbtestSQLite(t))
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		req := accepting(method, "/", browserAccept)
		resp := api.do(t, req)
		checkSeeOther(t, req, resp, "/v1/docs")
		if resp.body != "" {
			t.Errorf("%s /: got body %q; want none", method, resp.body)
		}
	}
	page := api.do(t, accepting(http.MethodGet, "/v1/docs", browserAccept))
	if page.status != http.StatusOK || !strings.HasPrefix(page.header.Get("Content-Type"), "text/html") {
		t.Errorf("GET /v1/docs: got %d %q; want the reference page", page.status, page.header.Get("Content-Type"))
	}
	for _, accept := range []string{"", "*/*", "application/json", "text/html;q=0, application/json"} {
		resp := api.do(t, accepting(http.MethodGet, "/", accept))
		checkError(t, resp, http.StatusNotFound, apierr.NotFound, "/v1")
		for _, want := range []string{"/v1/docs", "/v1/openapi.json"} {
			if !strings.Contains(resp.body, want) {
				t.Errorf("GET / with Accept %q: body %s does not name %s", accept, resp.body, want)
			}
		}
		if head := api.do(t, accepting(http.MethodHead, "/", accept)); head.status != http.StatusNotFound {
			t.Errorf("HEAD / with Accept %q: got %d; want 404", accept, head.status)
		}
	}
	if resp := api.do(t, accepting(http.MethodPost, "/", browserAccept)); resp.status != http.StatusNotFound {
		t.Errorf("POST / from a browser: got %d; want 404 (/ is no route)", resp.status)
	}
}

// TestGraphQLEndpointSendsBrowsersToPlayground checks that a browser opening /v1/graphql gets
// the playground, while GraphQL requests and API clients keep their answers.
func TestGraphQLEndpointSendsBrowsersToPlayground(t *testing.T) {
	t.Parallel()
	api := newTestAPI(t, dbtestSQLite(t))
	req := accepting(http.MethodGet, "/v1/graphql", browserAccept)
	checkSeeOther(t, req, api.do(t, req), "/v1/playground")

	for _, accept := range []string{"", "*/*", "application/json", "application/graphql-response+json", "text/html;q=0"} {
		resp := api.do(t, accepting(http.MethodGet, "/v1/graphql", accept))
		checkError(t, resp, http.StatusUnauthorized, apierr.Unauthorized, "API key")
		if resp.header.Get("X-RateLimit-Limit") == "" {
			t.Errorf("GET /v1/graphql with Accept %q: no X-RateLimit-Limit; want it charged as before", accept)
		}
	}
	query := "/v1/graphql?query=" + url.QueryEscape("{ pets { id } }")
	checkError(t, api.do(t, accepting(http.MethodGet, query, browserAccept)), http.StatusUnauthorized, apierr.Unauthorized, "API key")
	keyed := accepting(http.MethodGet, query, browserAccept)
	keyed.noAuth = false
	if resp := api.do(t, keyed); resp.status != http.StatusOK || !strings.Contains(resp.body, `"pets":[]`) {
		t.Errorf("GET query from a browser with a key: got %d %s; want the pets", resp.status, resp.body)
	}
	if resp := api.do(t, accepting(http.MethodHead, "/v1/graphql", browserAccept)); resp.status != http.StatusMethodNotAllowed {
		t.Errorf("HEAD /v1/graphql from a browser: got %d; want 405 as before", resp.status)
	}
}

// TestPageRedirectsCORS checks that the redirects of / and /v1/graphql get the CORS grant
// that the pages they lead to get.
func TestPageRedirectsCORS(t *testing.T) {
	t.Parallel()
	cfg := app.DefaultConfig()
	cfg.CORSOrigins = []string{"https://app.example"}
	api := newTestAPIConfig(t, dbtestSQLite(t), cfg)
	for _, pair := range [][2]string{{"/", "/v1/docs"}, {"/v1/graphql", "/v1/playground"}} {
		var grants [2]string
		for i, path := range pair {
			req := accepting(http.MethodGet, path, browserAccept)
			req.header.Set("Origin", "https://app.example")
			grants[i] = api.do(t, req).header.Get("Access-Control-Allow-Origin")
		}
		if grants[0] != grants[1] || grants[0] == "" {
			t.Errorf("Access-Control-Allow-Origin: %s got %q, %s %q; want the same grant", pair[0], grants[0], pair[1], grants[1])
		}
	}
}
