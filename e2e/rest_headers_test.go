package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"petstore/app"
)

// TestAnswerLength checks that JSON answers over HTTP carry their Content-Length and are not
// sent in chunks, whether net/http sends the length (a body it holds whole) or the handler
// does (a larger one).
func TestAnswerLength(t *testing.T) {
	t.Parallel()
	api := newTestAPI(t, dbtestSQLite(t))
	for i := range 40 {
		if r := api.do(t, post("/v1/pets", fmt.Sprintf(`{"name":"pet with a longer name %d","categoryId":1}`, i))); r.status != 201 {
			t.Fatalf("seed: got %d %s", r.status, r.body)
		}
	}
	srv := httptest.NewServer(api.h)
	defer srv.Close()
	for _, path := range []string{"/v1/pets?limit=2", "/v1/pets?limit=40", "/v1/pets/1"} {
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+api.key)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: got %d %s, %v", path, resp.StatusCode, body, err)
		}
		if resp.ContentLength != int64(len(body)) || len(resp.TransferEncoding) > 0 {
			t.Errorf("%s: Content-Length %d, Transfer-Encoding %v, body of %d bytes; want the body's length, not chunked",
				path, resp.ContentLength, resp.TransferEncoding, len(body))
		}
	}
}

// TestNoSniffOnEveryAnswer: every answer carries X-Content-Type-Options: nosniff, whichever
// part of the service writes it.
func TestNoSniffOnEveryAnswer(t *testing.T) {
	t.Parallel()
	cfg := app.DefaultConfig()
	cfg.CORSOrigins = []string{"https://app.example"}
	api := newTestAPIConfig(t, dbtestSQLite(t), cfg)
	preflight := request{method: http.MethodOptions, path: "/v1/pets", noAuth: true, header: http.Header{
		"Origin": {"https://app.example"}, "Access-Control-Request-Method": {"POST"}}}
	keyless := get("/v1/pets")
	keyless.noAuth = true
	for _, req := range []request{
		get("/v1/pets"), post("/v1/pets", `{"name":"Rex","categoryId":1}`), get("/v1/pets/1"), get("/v1/pets/999999"),
		post("/v1/graphql", `{"query":"{ pets { id } }"}`), get("/v1/graphql?query=%7B%20pets%20%7B%20id%20%7D%20%7D"),
		get("/v1/openapi.json"), get("/v1/graphql/schema.graphql"), get("/healthz"), get("/readyz"), get("/metrics"),
		get("/v1/store/orders"), get("/v1/nowhere"), {method: http.MethodDelete, path: "/v1/pets"}, keyless, preflight,
	} {
		resp := api.do(t, req)
		if got := resp.header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s %s (%d): X-Content-Type-Options %q; want nosniff", req.method, req.path, resp.status, got)
		}
	}
}
