package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"petstore/apierr"
	"petstore/auth"
	"petstore/testkit/dbtest"
)

// TestDatabaseOutage cuts the service's connection to MariaDB (through a loopback proxy; the
// server keeps running for other tests): API requests answer 503 unavailable, /readyz 503,
// and the service recovers by itself when the connection is restored.
func TestDatabaseOutage(t *testing.T) {
	db, proxy := dbtest.Proxied(t)
	api := newTestAPI(t, db)
	cold := api.createKey(t, auth.KeySpec{Plan: "pro"}) // never used before the outage: not cached
	api.do(t, get("/v1/pets"))

	proxy.Cut()
	start := time.Now()
	for _, req := range []request{get("/v1/pets"), post("/v1/pets", `{"name":"Rex","categoryId":1}`), get("/v1/pets/1"),
		post("/v1/graphql", `{"query":"{ pets { id } }"}`)} {
		resp := api.do(t, req)
		if req.path == "/v1/graphql" {
			if resp.status != 200 || !strings.Contains(resp.body, `"UNAVAILABLE"`) {
				t.Errorf("GraphQL during the outage: got %d %s; want an UNAVAILABLE error", resp.status, resp.body)
			}
			continue
		}
		checkError(t, resp, http.StatusServiceUnavailable, apierr.Unavailable, "database")
	}
	req := get("/v1/pets")
	req.header = http.Header{"Authorization": {"Bearer " + cold}}
	checkError(t, api.do(t, req), http.StatusServiceUnavailable, apierr.Unavailable, "API key")
	ready := get("/readyz")
	ready.noAuth = true
	checkError(t, api.do(t, ready), http.StatusServiceUnavailable, apierr.Unavailable, "database")
	t.Logf("six requests during the outage answered in %v", time.Since(start))

	proxy.Restore()
	deadline := time.Now().Add(10 * time.Second)
	for api.do(t, get("/v1/pets")).status != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("no recovery within 10s of the database coming back")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Key lookups leave the table alone for a second after a failure (auth's downFor): the
	// cold key is served once that second is over.
	time.Sleep(time.Second)
	if resp := api.do(t, req); resp.status != http.StatusOK {
		t.Errorf("the cold key a second after recovery: got %d %s", resp.status, resp.body)
	}
}
