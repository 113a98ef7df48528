package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"petstore/apierr"
	"petstore/app"
	"petstore/auth"
	"petstore/config"
	"petstore/ratelimit"
	"petstore/rest"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// forEachLimiter runs fn on each store, with the rate limiter in process and in Redis, making
// reads over-budget key reads a second (ratelimit.Config.OverBudgetKeyReads), and the settings
// of app.DefaultConfig changed by set (when not nil). fn gets the real handler, whose key is a
// fresh business key never sent yet, and the pool counting every statement on the database.
func forEachLimiter(t *testing.T, reads int, set func(*config.Config), fn func(t *testing.T, api *testAPI, pool *countingPool)) {
	t.Helper()
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		for _, limiter := range []string{"memory", "redis"} {
			t.Run(limiter, func(t *testing.T) {
				cfg := app.DefaultConfig()
				if set != nil {
					set(&cfg)
				}
				var rdb *redis.Client
				if limiter == "redis" {
					rdb, cfg.RedisKeyPrefix = dbtest.Redis(t)
				}
				h := newInstance(t, cfg, db, rdb, app.WithRateLimit(func(c *ratelimit.Config) { c.OverBudgetKeyReads = reads }))
				api := &testAPI{h: h, db: db, cfg: cfg, v: validator(t, h)}
				api.key = api.createKey(t, auth.KeySpec{Plan: "business"})
				fn(t, api, countStatements(db.DB))
			})
		}
	})
}

// guess returns a GET /v1/pets from addr with a fresh well-formed key that names no key.
func guess(addr string) request {
	req := get("/v1/pets")
	req.remoteAddr = addr
	req.header = http.Header{"Authorization": {"Bearer " + auth.NewKey(auth.TestPrefix)}}
	return req
}

// TestGuessesOverBudgetReadNoKeys sends fresh well-formed keys from one address: while the
// address has room, each costs one key-table read and one request of its budget (401); once it
// is over budget, each is refused with the address's 429, after a read only while the
// instance's over-budget reads last (PETSTORE's ratelimit.Config.OverBudgetKeyReads, 5 a second
// here), besides the refreshes of the instance's set of valid keys (at most one a second, the
// first one its load), while a key in use at another address goes on working.
func TestGuessesOverBudgetReadNoKeys(t *testing.T) {
	const reads = 5
	forEachLimiter(t, reads, nil, func(t *testing.T, api *testAPI, pool *countingPool) {
		const guesser = "203.0.113.9:5000"
		awayFromMinuteEdge(t)
		anon := api.cfg.RateLimit.AnonymousPerMinute
		for i := range anon {
			before := pool.keyReads.Load()
			resp := api.do(t, guess(guesser))
			checkError(t, resp, http.StatusUnauthorized, apierr.Unauthorized, "API key")
			if got := pool.keyReads.Load() - before; got != 1 {
				t.Errorf("guess %d within budget: got %d key-table reads; want 1", i+1, got)
			}
			if got, want := resp.header.Get("X-RateLimit-Remaining"), fmt.Sprint(anon-i-1); got != want {
				t.Errorf("guess %d X-RateLimit-Remaining: got %q; want %q", i+1, got, want)
			}
		}
		before, start := pool.all.Load(), time.Now()
		for i := range 30 {
			resp := api.do(t, guess(guesser))
			if resp.status != http.StatusTooManyRequests || resp.header.Get("Retry-After") == "" ||
				resp.header.Get("X-RateLimit-Limit") != fmt.Sprint(anon) || resp.header.Get("X-RateLimit-Remaining") != "0" {
				t.Fatalf("guess %d over budget: got %d %v %s; want 429 with the address's headers", i+1, resp.status, resp.header, resp.body)
			}
		}
		secs := time.Since(start).Seconds()
		most := reads + int64(secs*reads) + 1 + int64(secs/auth.ListRefresh.Seconds()) + 1
		if got := pool.all.Load() - before; got < reads || got > most {
			t.Errorf("30 guesses over budget: got %d statements; want %d to %d (the over-budget reads and the set's refreshes)", got, reads, most)
		}
		valid := get("/v1/pets")
		valid.remoteAddr = "198.51.100.7:6000"
		if resp := api.do(t, valid); resp.status != http.StatusOK || resp.header.Get("X-RateLimit-Limit") != "1000" {
			t.Errorf("a valid key from an address with budget: got %d with limit %q; want 200 on its own budget",
				resp.status, resp.header.Get("X-RateLimit-Limit"))
		}
	})
}

// TestKnownKeysSkipTheGate checks the keys that need no address check: a key this server found
// valid is served from an address over its budget once its cached lookup has expired (here at
// once: it is read again every time); a valid key it has never seen and not listed yet (created
// on another instance after the last refresh of its set of valid keys, which the first guess over
// budget loaded) is read and served there too, charged to its own budget, while the instance's
// over-budget reads last; once they are spent, it is refused like a guess, without a read, until
// the set's next refresh (a second after the last, TestValidKeysServedDuringGuessFlood).
func TestKnownKeysSkipTheGate(t *testing.T) {
	forEachLimiter(t, 2, func(c *config.Config) { c.KeyCacheTTL = time.Nanosecond },
		func(t *testing.T, api *testAPI, pool *countingPool) {
			const addr = "203.0.113.10:5000"
			awayFromMinuteEdge(t) // the address stays over its budget of this minute
			known := get("/v1/pets")
			known.remoteAddr = addr
			if resp := api.do(t, known); resp.status != http.StatusOK {
				t.Fatalf("the key in use: got %d; want 200", resp.status)
			}
			for range api.cfg.RateLimit.AnonymousPerMinute {
				api.do(t, guess(addr))
			}
			if resp := api.do(t, guess(addr)); resp.status != http.StatusTooManyRequests {
				t.Fatalf("a guess over budget: got %d; want 429", resp.status)
			}
			before := pool.keyReads.Load()
			if resp := api.do(t, known); resp.status != http.StatusOK {
				t.Errorf("the key in use, from the address over budget: got %d; want 200", resp.status)
			}
			if got := pool.keyReads.Load() - before; got != 1 {
				t.Errorf("the key in use, its lookup expired: got %d key-table reads; want 1", got)
			}
			unseen := known // created within a second of the set's first load
			unseen.header = http.Header{"Authorization": {"Bearer " + api.createKey(t, auth.KeySpec{Plan: "free"})}}
			before = pool.keyReads.Load()
			if resp := api.do(t, unseen); resp.status != http.StatusOK || resp.header.Get("X-RateLimit-Limit") != "60" {
				t.Errorf("a valid key the server has never seen, from the address over budget: got %d with limit %q; want 200 on its own budget",
					resp.status, resp.header.Get("X-RateLimit-Limit"))
			}
			if got := pool.keyReads.Load() - before; got != 1 {
				t.Errorf("a valid key the server has never seen, from the address over budget: got %d key-table reads; want 1", got)
			}
			// A refresh later, the first guess below refreshes the set: fresh is created after it.
			time.Sleep(auth.ListRefresh)
			for range 5 { // spend the over-budget reads left, and any refilled meanwhile
				api.do(t, guess(addr))
			}
			fresh := known
			fresh.header = http.Header{"Authorization": {"Bearer " + api.createKey(t, auth.KeySpec{Plan: "free"})}}
			before = pool.all.Load()
			if resp := api.do(t, fresh); resp.status != http.StatusTooManyRequests {
				t.Errorf("a valid key never seen, the over-budget reads spent: got %d; want 429", resp.status)
			}
			if got := pool.all.Load() - before; got != 0 {
				t.Errorf("a valid key never seen, the over-budget reads spent: got %d statements; want 0", got)
			}
		})
}

// noGate is a rate limiter without its gate: the chain as it was before Limiter.Gate, for
// comparison.
type noGate struct{ rest.Limiter }

func (noGate) Gate(*gin.Context) {}

// BenchmarkGuessOverBudget measures a fresh well-formed key sent from an address over its
// anonymous budget (429), on SQLite with the limiter in process: refused by the gate, and
// without it (a key-table read first).
func BenchmarkGuessOverBudget(b *testing.B) {
	db := dbtest.New(b, "sqlite")
	cfg := app.DefaultConfig()
	for _, gate := range []bool{true, false} {
		b.Run(map[bool]string{true: "gate", false: "nogate"}[gate], func(b *testing.B) {
			deps := newDeps(b, cfg, db, nil)
			if !gate {
				deps.Limit = noGate{deps.Limit}
			}
			h := rest.NewRouter(deps)
			send := func() int { // a fresh key every time, as a guesser sends
				r := httptest.NewRequest(http.MethodGet, "/v1/pets", nil)
				r.Header.Set("Authorization", "Bearer "+auth.NewKey(auth.TestPrefix))
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, r)
				return rec.Code
			}
			for range cfg.RateLimit.AnonymousPerMinute {
				send()
			}
			b.ReportAllocs()
			for b.Loop() {
				if code := send(); code != http.StatusTooManyRequests {
					b.Fatalf("got %d; want 429", code)
				}
			}
		})
	}
}

// TestGuessesReadNoKeysWhileRedisFailsClosed: with PETSTORE_RATELIMIT_FAIL_OPEN=false and Redis
// failing, a guess is answered 503 unavailable before the key table is read; otherwise a guesser
// would read keys without limit for as long as Redis is down.
func TestGuessesReadNoKeysWhileRedisFailsClosed(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		cfg := app.DefaultConfig()
		cfg.RateLimit.FailOpen = false
		down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1})
		t.Cleanup(func() { _ = down.Close() })
		h := newInstance(t, cfg, db, down)
		api := &testAPI{h: h, db: db, cfg: cfg, v: validator(t, h)}
		pool := countStatements(db.DB)
		for i := range 5 {
			resp := api.do(t, guess("203.0.113.11:5000"))
			checkError(t, resp, http.StatusServiceUnavailable, apierr.Unavailable, "rate limiting")
			if got := pool.keyReads.Load(); got != 0 {
				t.Fatalf("guess %d while Redis is down (fail closed): got %d key-table reads; want 0", i+1, got)
			}
		}
	})
}
