package e2e

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"petstore/app"
	"petstore/auth"
)

func TestCORS(t *testing.T) {
	t.Parallel()
	db := dbtestSQLite(t)
	cfg := app.DefaultConfig()
	cfg.CORSOrigins = []string{"https://app.example"}
	h, err := newHandler(cfg, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	api := &testAPI{db: db, cfg: cfg}
	key := api.createKey(t, auth.KeySpec{Plan: "free"})
	send := func(method, path, origin string, header map[string]string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, path, nil)
		r.Header.Set("Origin", origin)
		for k, v := range header {
			r.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec
	}
	preflight := map[string]string{"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type, idempotency-key"}

	t.Run("preflight needs no key", func(t *testing.T) {
		for _, path := range []string{"/v1/pets", "/v1/graphql"} {
			rec := send(http.MethodOptions, path, "https://app.example", preflight)
			if rec.Code != http.StatusNoContent || rec.Header().Get("Access-Control-Allow-Origin") != "https://app.example" ||
				!strings.Contains(strings.ToLower(rec.Header().Get("Access-Control-Allow-Headers")), "authorization") {
				t.Errorf("%s preflight: got %d %v", path, rec.Code, rec.Header())
			}
		}
	})
	t.Run("actual request exposes the rate-limit headers", func(t *testing.T) {
		rec := send(http.MethodGet, "/v1/pets", "https://app.example", map[string]string{"Authorization": "Bearer " + key})
		expose := rec.Header().Get("Access-Control-Expose-Headers")
		if rec.Code != 200 || rec.Header().Get("Access-Control-Allow-Origin") != "https://app.example" ||
			!strings.Contains(expose, "X-Ratelimit-Remaining") || !strings.Contains(expose, "Retry-After") {
			t.Errorf("got %d, allow-origin %q, expose %q", rec.Code, rec.Header().Get("Access-Control-Allow-Origin"), expose)
		}
	})
	t.Run("other origins get no grant", func(t *testing.T) {
		rec := send(http.MethodOptions, "/v1/pets", "https://evil.example", preflight)
		if got := rec.Header().Get("Access-Control-Allow-Origin"); got != "" {
			t.Errorf("preflight from another origin: got Allow-Origin %q", got)
		}
		rec = send(http.MethodGet, "/v1/pets", "https://evil.example", map[string]string{"Authorization": "Bearer " + key})
		if got := rec.Header().Get("Access-Control-Allow-Origin"); got != "" || rec.Code != 200 {
			t.Errorf("request from another origin: got %d with Allow-Origin %q; want 200 without", rec.Code, got)
		}
	})
	t.Run("no origins configured", func(t *testing.T) {
		plain, err := newHandler(app.DefaultConfig(), db, nil)
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest(http.MethodOptions, "/v1/pets", nil)
		r.Header.Set("Origin", "https://app.example")
		r.Header.Set("Access-Control-Request-Method", "POST")
		rec := httptest.NewRecorder()
		plain.ServeHTTP(rec, r)
		if rec.Header().Get("Access-Control-Allow-Origin") != "" || rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("got %d %v; want 405 without CORS headers", rec.Code, rec.Header())
		}
	})
}
