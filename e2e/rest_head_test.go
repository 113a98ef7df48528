package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// TestHeadAnswersAsGet checks over HTTP that HEAD is answered wherever GET is: the GET's status
// and headers, no body, charged to the key like the GET; and that /v1/graphql, whose GET runs a
// query, answers HEAD 405 with Allow: GET, POST. A HEAD whose If-None-Match names the GET's
// ETag is 304, as the GET would be.
func TestHeadAnswersAsGet(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, api *testAPI) {
		if r := api.do(t, post("/v1/pets", `{"name":"Rex","categoryId":1,"status":"sold"}`)); r.status != 201 {
			t.Fatalf("seed: got %d %s", r.status, r.body)
		}
		srv := httptest.NewServer(api.h)
		defer srv.Close()
		send := func(method, path string, withKey bool) (*http.Response, []byte) {
			t.Helper()
			req, err := http.NewRequest(method, srv.URL+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if withKey {
				req.Header.Set("Authorization", "Bearer "+api.key)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			return resp, body
		}
		same := []string{"Content-Type", "ETag", "Cache-Control", "Link", "Deprecation", "Sunset", "X-Ratelimit-Limit",
			"Ratelimit-Policy", "Www-Authenticate", "Allow", "X-Content-Type-Options"}
		for _, tc := range []struct {
			path    string
			withKey bool
		}{
			{"/v1/pets", true}, {"/v1/pets?limit=1&status=sold", true}, {"/v1/pets/1", true}, {"/v1/pets/999999", true},
			{"/v1/pets?limit=0", true}, {"/v1/pets", false}, {"/v1/store/orders", true}, {"/v1/openapi.json", false},
			{"/v1/graphql/schema.graphql", false}, {"/v1/docs", false}, {"/v1/playground", false}, {"/healthz", false},
			{"/readyz", false}, {"/metrics", false},
		} {
			g, gbody := send(http.MethodGet, tc.path, tc.withKey)
			h, hbody := send(http.MethodHead, tc.path, tc.withKey)
			if h.StatusCode != g.StatusCode || len(hbody) != 0 {
				t.Errorf("HEAD %s: got %d with %d bytes of body; want GET's %d, no body", tc.path, h.StatusCode, len(hbody), g.StatusCode)
			}
			for _, name := range same {
				if h.Header.Get(name) != g.Header.Get(name) {
					t.Errorf("HEAD %s: %s %q; GET's %q", tc.path, name, h.Header.Get(name), g.Header.Get(name))
				}
			}
			if cl := h.Header.Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(gbody)) {
				t.Errorf("HEAD %s: Content-Length %s; GET's body has %d bytes", tc.path, cl, len(gbody))
			}
			if tc.withKey {
				gr, _ := strconv.Atoi(g.Header.Get("X-Ratelimit-Remaining"))
				hr, _ := strconv.Atoi(h.Header.Get("X-Ratelimit-Remaining"))
				if hr != gr-1 {
					t.Errorf("HEAD %s: X-RateLimit-Remaining %d after GET's %d; want HEAD charged like GET", tc.path, hr, gr)
				}
			}
		}
		g, _ := send(http.MethodGet, "/v1/pets", true)
		if r := api.do(t, request{method: http.MethodHead, path: "/v1/pets", header: http.Header{"If-None-Match": {g.Header.Get("ETag")}}}); r.status != http.StatusNotModified {
			t.Errorf("HEAD /v1/pets with If-None-Match of its ETag: got %d; want 304", r.status)
		}
		h, _ := send(http.MethodHead, "/v1/graphql?query=%7B%20pets%20%7B%20id%20%7D%20%7D", true)
		if h.StatusCode != http.StatusMethodNotAllowed || h.Header.Get("Allow") != "GET, POST" {
			t.Errorf("HEAD /v1/graphql: got %d Allow %q; want 405 Allow: GET, POST", h.StatusCode, h.Header.Get("Allow"))
		}
	})
}
