package e2e

import (
	"fmt"
	"net/http"
	"testing"

	"petstore/apierr"
	"petstore/auth"
)

func TestAuthentication(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, api *testAPI) {
		revoked := api.createKey(t, auth.KeySpec{Plan: "free"})
		if err := auth.RevokeKey(t.Context(), api.db.DB, 2); err != nil {
			t.Fatal(err)
		}
		unknown := auth.NewKey(auth.TestPrefix)
		badSum := api.key[:len(api.key)-1] + flip(api.key[len(api.key)-1])
		live := auth.NewKey(auth.LivePrefix)
		const challenge, invalid = `Bearer realm="petstore"`, `Bearer realm="petstore", error="invalid_token"`
		for i, tc := range []struct {
			name, header, challenge string
		}{
			{"missing", "", challenge},
			{"basic scheme", "Basic dXNlcjpwYXNz", challenge},
			{"key without scheme", api.key, challenge},
			{"scheme without key", "Bearer", invalid},
			{"malformed", "Bearer not-a-key", invalid},
			{"bad checksum", "Bearer " + badSum, invalid},
			{"unknown", "Bearer " + unknown, invalid},
			{"revoked", "Bearer " + revoked, invalid},
			{"live key on a test server", "Bearer " + live, invalid},
			{"key with a tail", "Bearer " + api.key + " x", invalid},
		} {
			t.Run(tc.name, func(t *testing.T) {
				for _, req := range []request{get("/v1/pets"), post("/v1/pets", `{"name":"Rex","categoryId":1}`), get("/v1/pets/1"), get("/v1/store/orders"), post("/v1/graphql", `{"query":"{ pets { id } }"}`)} {
					req.noAuth = true
					req.remoteAddr = fmt.Sprintf("198.51.100.%d:4000", i+1) // each case within the per-address limit
					if tc.header != "" {
						req.header = http.Header{"Authorization": {tc.header}}
					}
					resp := api.do(t, req)
					checkError(t, resp, 401, apierr.Unauthorized, "API key")
					if got := resp.header.Get("WWW-Authenticate"); got != tc.challenge {
						t.Errorf("%s %s WWW-Authenticate: got %q; want %q", req.method, req.path, got, tc.challenge)
					}
				}
			})
		}
		for _, scheme := range []string{"Bearer", "bearer", "BEARER", "bEaReR"} {
			req := get("/v1/pets")
			req.header = http.Header{"Authorization": {scheme + " " + api.key}}
			if resp := api.do(t, req); resp.status != 200 {
				t.Errorf("scheme %q: got %d; want 200", scheme, resp.status)
			}
		}
		if got := api.do(t, get("/v1/pets")); got.status != 200 {
			t.Errorf("nothing was stored by refused requests: got %d %s", got.status, got.body)
		} else if got.body != "[]" {
			t.Errorf("refused creates stored pets: %s", got.body)
		}
	})
}

// flip returns another base-62 character than c.
func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

func TestUnauthenticatedRoutes(t *testing.T) {
	t.Parallel()
	api := newTestAPI(t, dbtestSQLite(t))
	for _, path := range []string{"/healthz", "/readyz", "/v1/openapi.json"} {
		req := get(path)
		req.noAuth = true
		if resp := api.do(t, req); resp.status != 200 {
			t.Errorf("%s: got %d %s; want 200", path, resp.status, resp.body)
		}
	}
}
