package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"petstore/app"
	"petstore/auth"
	"petstore/config"
	"petstore/internal/jsonbody"
	"petstore/observe"
	"petstore/rest"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// TestOneBudgetForRESTAndGraphQL checks that REST and GraphQL requests draw on one budget, and
// that every answer, the 429 included, carries the rate-limit headers.
func TestOneBudgetForRESTAndGraphQL(t *testing.T) {
	api := newTestAPI(t, dbtestSQLite(t))
	api.key = api.createKey(t, auth.KeySpec{Plan: "enterprise", PerMinute: 4, PerDay: 100})
	steps := []request{get("/v1/pets"), post("/v1/graphql", `{"query":"{ pets { id } }"}`), get("/v1/pets"), post("/v1/graphql", `{"query":"{ pets { id } }"}`)}
	for i, req := range steps {
		resp := api.do(t, req)
		if resp.status != 200 {
			t.Fatalf("request %d (%s %s): got %d %s; want 200", i+1, req.method, req.path, resp.status, resp.body)
		}
		if got, want := resp.header.Get("X-RateLimit-Remaining"), strconv.Itoa(3-i); got != want {
			t.Errorf("request %d X-RateLimit-Remaining: got %q; want %q", i+1, got, want)
		}
	}
	for _, req := range []request{get("/v1/pets"), post("/v1/graphql", `{"query":"{ pets { id } }"}`)} {
		resp := api.do(t, req)
		checkError(t, resp, http.StatusTooManyRequests, "rate_limited", "minute")
		if resp.header.Get("Retry-After") == "" || resp.header.Get("RateLimit-Policy") != `"minute";q=4;w=60, "day";q=100;w=86400` {
			t.Errorf("429 headers: got %v", resp.header)
		}
	}
}

// TestUnauthenticatedTrafficIsLimitedByAddress checks that requests without a valid key are
// limited per client address and leave the budget of a key in use at that address alone.
func TestUnauthenticatedTrafficIsLimitedByAddress(t *testing.T) {
	api := newTestAPI(t, dbtestSQLite(t))
	if resp := api.do(t, get("/v1/pets")); resp.status != 200 {
		t.Fatalf("the key before guesses: got %d; want 200", resp.status)
	}
	anon := api.cfg.RateLimit.AnonymousPerMinute
	for i := range anon + 1 {
		req := get("/v1/pets")
		req.header = http.Header{"Authorization": {"Bearer " + auth.NewKey(auth.TestPrefix)}}
		resp := api.do(t, req)
		want := http.StatusUnauthorized
		if i == anon {
			want = http.StatusTooManyRequests
		}
		if resp.status != want {
			t.Fatalf("guess %d: got %d; want %d", i+1, resp.status, want)
		}
	}
	resp := api.do(t, get("/v1/pets"))
	if resp.status != 200 || resp.header.Get("X-RateLimit-Limit") != "1000" || resp.header.Get("X-RateLimit-Remaining") != "998" {
		t.Errorf("the key after guesses: got %d with limit %q, remaining %q; want 200 and its own budget, 998 left",
			resp.status, resp.header.Get("X-RateLimit-Limit"), resp.header.Get("X-RateLimit-Remaining"))
	}
}

// TestTwoInstancesShareOneBudget runs two instances of the service on one MySQL database and
// one Redis: a key allowed 40 requests a minute gets 40 in total, not 40 each.
func TestTwoInstancesShareOneBudget(t *testing.T) {
	db := dbtest.New(t, "mysql")
	rdb, prefix := dbtest.Redis(t)
	cfg := app.DefaultConfig()
	cfg.RedisKeyPrefix = prefix
	instances := []http.Handler{newInstance(t, cfg, db, rdb), newInstance(t, cfg, db, rdb)}
	api := &testAPI{db: db, cfg: cfg}
	key := api.createKey(t, auth.KeySpec{Plan: "enterprise", PerMinute: 40, PerDay: 1000})

	var ok, limited atomic.Int64
	var wg sync.WaitGroup
	for i := range 120 {
		wg.Go(func() {
			r := httptest.NewRequest(http.MethodGet, "/v1/pets?limit=1", nil)
			if i%2 == 1 {
				r = httptest.NewRequest(http.MethodPost, "/v1/graphql", strings.NewReader(`{"query":"{ pets(limit: 1) { id } }"}`))
				r.Header.Set("Content-Type", "application/json")
			}
			r.Header.Set("Authorization", "Bearer "+key)
			rec := httptest.NewRecorder()
			instances[i%2].ServeHTTP(rec, r)
			switch rec.Code {
			case http.StatusOK:
				ok.Add(1)
			case http.StatusTooManyRequests:
				limited.Add(1)
			default:
				t.Errorf("got %d %s", rec.Code, rec.Body)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 40 || limited.Load() != 80 {
		t.Errorf("admitted %d, limited %d; want 40 and 80", ok.Load(), limited.Load())
	}
}

// newInstance returns the handler of an instance with its limiter in rdb, or in process when
// rdb is nil.
func newInstance(t testing.TB, cfg config.Config, db *store.DB, rdb *redis.Client, opts ...app.Option) http.Handler {
	t.Helper()
	var client redis.UniversalClient // nil, not a nil *redis.Client, when rdb is nil
	if rdb != nil {
		client = rdb
	}
	h, err := newHandler(cfg, db, client, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestUnmatchedV1AnswersAreCharged checks that the 404 of an unknown path and the 405 of another
// method under /v1 are API answers like any other: charged to the key, or to the client address
// without one, and carrying the rate-limit headers; paths outside /v1 carry none.
func TestUnmatchedV1AnswersAreCharged(t *testing.T) {
	api := newTestAPI(t, dbtestSQLite(t))
	headers := []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit", "RateLimit-Policy"}
	for i, tc := range []struct {
		req    request
		status int
	}{
		{get("/v1/no/such/path"), http.StatusNotFound},
		{get("/v1"), http.StatusNotFound},
		{get("/v1/pets/"), http.StatusNotFound},
		{request{method: http.MethodDelete, path: "/v1/pets"}, http.StatusMethodNotAllowed},
		{request{method: http.MethodPut, path: "/v1/graphql"}, http.StatusMethodNotAllowed},
		{request{method: http.MethodPost, path: "/v1/openapi.json"}, http.StatusMethodNotAllowed},
	} {
		for _, keyed := range []bool{true, false} {
			req := tc.req
			req.noAuth = !keyed
			req.remoteAddr = fmt.Sprintf("198.51.100.%d:4000", 2*i+1)
			resp := api.do(t, req)
			first := resp.header.Clone()
			resp = api.do(t, req)
			if resp.status != tc.status {
				t.Fatalf("%s %s (key %v): got %d %s; want %d", req.method, req.path, keyed, resp.status, resp.body, tc.status)
			}
			for _, h := range headers {
				if resp.header.Get(h) == "" {
					t.Errorf("%s %s (key %v): no %s", req.method, req.path, keyed, h)
				}
			}
			limit, want := "1000", "998" // the business key's minute, twice charged
			if !keyed {
				limit, want = "20", "18" // the address's anonymous minute
			}
			if got := resp.header.Get("X-RateLimit-Limit"); got != limit {
				t.Errorf("%s %s (key %v) X-RateLimit-Limit: got %q; want %q", req.method, req.path, keyed, got, limit)
			}
			if got := resp.header.Get("X-RateLimit-Remaining"); got != want {
				t.Errorf("%s %s (key %v) X-RateLimit-Remaining: got %q after %q; want %q", req.method, req.path, keyed,
					got, first.Get("X-RateLimit-Remaining"), want)
			}
			if keyed {
				api.key = api.createKey(t, auth.KeySpec{Plan: "business"}) // a fresh budget for the next case
			}
		}
	}
	for _, req := range []request{get("/no/such/path"), {method: http.MethodPost, path: "/healthz"}, get("/v10/pets")} {
		req.noAuth = true
		resp := api.do(t, req)
		for _, h := range headers {
			if v := resp.header.Get(h); v != "" {
				t.Errorf("%s %s (outside /v1): got %s %q; want none", req.method, req.path, h, v)
			}
		}
	}
}

// TestRateLimitHeadersOnOddAnswers: every /v1 answer carries the rate-limit headers. HEAD, OPTIONS
// (with CORS off, and a plain OPTIONS with it on), GraphQL's own refusals (413, 415, a WebSocket
// upgrade, a mutation over GET, a document that does not parse), an oversized URL or header block,
// and the 503 of a database that is gone each carry them; the answers docs/rate-limits.md lists as
// without them (the OpenAPI document, the playground page and its assets, CORS preflights) carry
// none.
func TestRateLimitHeadersOnOddAnswers(t *testing.T) {
	cfg := app.DefaultConfig()
	cfg.CORSOrigins = []string{"https://app.example"}
	api := newTestAPIConfig(t, dbtestSQLite(t), cfg)
	headers := []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit", "RateLimit-Policy"}
	gql := http.Header{"Content-Type": {"application/json"}}
	preflight := http.Header{"Origin": {"https://app.example"}, "Access-Control-Request-Method": {"GET"}}
	manyHeaders := http.Header{}
	for i := range rest.MaxHeaderFields + 1 {
		manyHeaders.Set(fmt.Sprintf("X-H%d", i), "x")
	}
	tests := []struct {
		name string
		req  request
		want int
	}{
		{"HEAD", request{method: http.MethodHead, path: "/v1/pets"}, http.StatusOK},
		{"HEAD of the GraphQL endpoint", request{method: http.MethodHead, path: "/v1/graphql"}, http.StatusMethodNotAllowed},
		{"plain OPTIONS", request{method: http.MethodOptions, path: "/v1/pets"}, http.StatusMethodNotAllowed},
		{"GraphQL 413", request{method: http.MethodPost, path: "/v1/graphql", body: strings.Repeat(" ", jsonbody.MaxBytes) + "{}", header: gql}, http.StatusRequestEntityTooLarge},
		{"GraphQL 415", request{method: http.MethodPost, path: "/v1/graphql", body: "{}", header: http.Header{"Content-Type": {"text/plain"}}}, http.StatusUnsupportedMediaType},
		{"GraphQL WebSocket", request{method: http.MethodGet, path: "/v1/graphql", header: http.Header{"Upgrade": {"websocket"}, "Connection": {"Upgrade"}}}, http.StatusBadRequest},
		{"GraphQL GET mutation", get("/v1/graphql?query=" + url.QueryEscape(`mutation { createPet(input: {name: "a", categoryId: 1}) { id } }`)), http.StatusMethodNotAllowed},
		{"GraphQL parse error", request{method: http.MethodPost, path: "/v1/graphql", body: `{"query":"{"}`, header: http.Header{"Content-Type": {"application/json"}, "Accept": {"application/graphql-response+json"}}}, http.StatusBadRequest},
		{"URL over 8 KiB", get("/v1/pets?x=" + strings.Repeat("a", rest.MaxURL)), http.StatusBadRequest},
		{"too many header fields", request{method: http.MethodGet, path: "/v1/graphql", header: manyHeaders}, http.StatusBadRequest},
	}
	check := func(name string, req request, want int, carries bool) {
		t.Helper()
		resp := api.do(t, req)
		if resp.status != want {
			t.Errorf("%s: got %d %s; want %d", name, resp.status, resp.body, want)
		}
		for _, h := range headers {
			if got := resp.header.Get(h) != ""; got != carries {
				t.Errorf("%s: %s present %v; want %v", name, h, got, carries)
			}
		}
	}
	for _, tc := range tests {
		check(tc.name, tc.req, tc.want, true)
	}
	for _, tc := range []struct {
		name string
		req  request
		want int
	}{
		{"the OpenAPI document", get("/v1/openapi.json"), http.StatusOK},
		{"the playground page", get("/v1/playground"), http.StatusOK},
		{"a playground asset that is not there", get("/v1/playground/assets/nope.js"), http.StatusNotFound},
		{"a CORS preflight", request{method: http.MethodOptions, path: "/v1/pets", header: preflight, noAuth: true}, http.StatusNoContent},
	} {
		check(tc.name, tc.req, tc.want, false)
	}
	if err := api.db.Close(); err != nil {
		t.Fatal(err)
	}
	check("GraphQL with the database gone", request{method: http.MethodPost, path: "/v1/graphql", body: `{"query":"{ pets { id } }"}`, header: gql}, http.StatusOK, true)
}

// TestClientAddressBehindProxy: behind a trusted proxy the client address is worked out once,
// and the limiter and the request log read the same one: each forwarded client has its own
// anonymous budget and its own address in the log line; a peer that is not a trusted proxy
// is its own client, whatever X-Forwarded-For says.
func TestClientAddressBehindProxy(t *testing.T) {
	cfg := app.DefaultConfig()
	cfg.TrustedProxies = []string{"10.0.0.0/8"}
	api := newTestAPIConfig(t, dbtestSQLite(t), cfg)
	var logged bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(observe.NewJSONLogHandler(&logged, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })

	steps := []struct {
		peer, forwarded, client, remaining string
	}{
		{"10.0.0.1:80", "198.51.100.7", "198.51.100.7", strconv.FormatInt(cfg.RateLimit.AnonymousPerMinute-1, 10)},
		{"10.0.0.2:80", "203.0.113.5, 198.51.100.7", "198.51.100.7", strconv.FormatInt(cfg.RateLimit.AnonymousPerMinute-2, 10)},
		{"10.0.0.1:80", "198.51.100.8", "198.51.100.8", strconv.FormatInt(cfg.RateLimit.AnonymousPerMinute-1, 10)},
		{"192.0.2.9:80", "198.51.100.8", "192.0.2.9", strconv.FormatInt(cfg.RateLimit.AnonymousPerMinute-1, 10)},
	}
	for i, s := range steps {
		logged.Reset()
		req := get("/v1/pets")
		req.noAuth, req.remoteAddr, req.header = true, s.peer, http.Header{"X-Forwarded-For": {s.forwarded}}
		resp := api.do(t, req)
		if got := resp.header.Get("X-RateLimit-Remaining"); resp.status != http.StatusUnauthorized || got != s.remaining {
			t.Errorf("request %d: got %d with %q remaining; want 401 with %q", i+1, resp.status, got, s.remaining)
		}
		var line struct{ Client string }
		if err := json.Unmarshal(logged.Bytes(), &line); err != nil || line.Client != s.client {
			t.Errorf("request %d: logged client %q (%v, line %s); want %q", i+1, line.Client, err, logged.Bytes(), s.client)
		}
	}
}
