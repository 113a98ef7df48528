package main

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"petstore/auth"
	"petstore/config"
	"petstore/internal/dbtest"
	"petstore/store"
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
// limited per client address and leave the key's budget alone.
func TestUnauthenticatedTrafficIsLimitedByAddress(t *testing.T) {
	api := newTestAPI(t, dbtestSQLite(t))
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
	if resp.status != 200 || resp.header.Get("X-RateLimit-Limit") != "1000" {
		t.Errorf("the key after guesses: got %d with limit %q; want 200 and its own budget", resp.status, resp.header.Get("X-RateLimit-Limit"))
	}
}

// TestTwoInstancesShareOneBudget runs two instances of the service on one MySQL database and
// one Redis: a key allowed 40 requests a minute gets 40 in total, not 40 each.
func TestTwoInstancesShareOneBudget(t *testing.T) {
	db := dbtest.New(t, "mysql")
	rdb, prefix := dbtest.Redis(t)
	cfg := config.Default()
	cfg.RateLimit.RedisKeyPrefix = prefix
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

func newInstance(t testing.TB, cfg config.Config, db *store.DB, rdb *redis.Client) http.Handler {
	t.Helper()
	h, err := newHandler(cfg, db, rdb, new(drainer))
	if err != nil {
		t.Fatal(err)
	}
	return h
}
