package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"petstore/app"
	"petstore/auth"
	"petstore/rest"
	"petstore/testkit/dbtest"
)

// countingPool counts the statements sent through a GORM connection pool, those that write,
// those that read the key table, those of them that read keys' hashes (lookups and the
// refreshes of the set of valid keys, not the subscriptions' revocation checks), and those
// that read the webhook endpoints.
type countingPool struct {
	gorm.ConnPool
	all, keyReads, hashReads, writes, endpointReads atomic.Int64
}

// writeStatement matches a statement that writes: an INSERT, UPDATE or DELETE, after the
// comment of a session setting.
var writeStatement = regexp.MustCompile(`^\s*(/\*.*?\*/\s*)?(INSERT|UPDATE|DELETE)\b`)

func (p *countingPool) count(query string) {
	p.all.Add(1)
	if writeStatement.MatchString(query) {
		p.writes.Add(1)
	}
	if strings.Contains(query, "FROM webhook_endpoints") {
		p.endpointReads.Add(1)
	}
	if strings.Contains(query, "api_keys") {
		p.keyReads.Add(1)
		if strings.Contains(query, "hash") {
			p.hashReads.Add(1)
		}
	}
}

func (p *countingPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	p.count(query)
	return p.ConnPool.ExecContext(ctx, query, args...)
}

func (p *countingPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	p.count(query)
	return p.ConnPool.QueryContext(ctx, query, args...)
}

func (p *countingPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	p.count(query)
	return p.ConnPool.QueryRowContext(ctx, query, args...)
}

// GetDBConn gives GORM the pool's *sql.DB, as the wrapped pool does.
func (p *countingPool) GetDBConn() (*sql.DB, error) {
	if c, ok := p.ConnPool.(interface{ GetDBConn() (*sql.DB, error) }); ok {
		return c.GetDBConn()
	}
	return p.ConnPool.(*sql.DB), nil
}

// countStatements makes db count every statement it sends, however it was built.
func countStatements(db *gorm.DB) *countingPool {
	p := &countingPool{ConnPool: db.Statement.ConnPool}
	db.ConnPool, db.Statement.ConnPool = p, p
	return p
}

// TestWarmListIsOneQuery checks that a warm authenticated list runs one SQL statement and
// reads no key table.
func TestWarmListIsOneQuery(t *testing.T) {
	forEachStore(t, func(t *testing.T, api *testAPI) {
		pool := countStatements(api.db.DB)
		api.do(t, get("/v1/pets?limit=20")) // warms the key cache
		pool.all.Store(0)
		pool.keyReads.Store(0)
		for _, path := range []string{"/v1/pets?limit=20", "/v1/pets?status=sold", "/v1/pets"} {
			if resp := api.do(t, get(path)); resp.status != 200 {
				t.Fatalf("%s: got %d", path, resp.status)
			}
		}
		if pool.all.Load() != 3 || pool.keyReads.Load() != 0 {
			t.Errorf("3 warm lists: got %d statements, %d key reads; want 3 and 0", pool.all.Load(), pool.keyReads.Load())
		}
	})
}

// BenchmarkListPets measures an authenticated GET /v1/pets?limit=20 through the real router,
// on each store, with 20 pets to list.
func BenchmarkListPets(b *testing.B) {
	for _, dialect := range dbtest.Dialects {
		b.Run(dialect, func(b *testing.B) {
			db := dbtest.New(b, dialect)
			api := newTestAPI(b, db)
			h, key := api.h, api.createKey(b, auth.KeySpec{Plan: "enterprise", PerMinute: 1 << 40, PerDay: 1 << 40})
			seed(b, h, key, 20)
			req := httptest.NewRequest(http.MethodGet, "/v1/pets?limit=20", nil)
			req.Header.Set("Authorization", "Bearer "+key)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("got %d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}

// BenchmarkListPetsLimiter measures GET /v1/pets?limit=20 from parallel clients, on SQLite,
// with the rate limiter off, in process and in Redis, in one run: ns/op is the inverse of
// requests per second.
func BenchmarkListPetsLimiter(b *testing.B) {
	db := dbtest.New(b, "sqlite")
	rdb, prefix := dbtest.Redis(b)
	cfg := app.DefaultConfig()
	cfg.RedisKeyPrefix = prefix
	api := &testAPI{db: db, cfg: cfg}
	key := api.createKey(b, auth.KeySpec{Plan: "enterprise", PerMinute: 1 << 40, PerDay: 1 << 40})
	seed(b, newInstance(b, cfg, db, nil), key, 20)
	for _, tc := range []struct {
		name  string
		rdb   redis.UniversalClient
		limit bool
	}{{"off", nil, false}, {"memory", nil, true}, {"redis", rdb, true}} {
		b.Run(tc.name, func(b *testing.B) {
			deps := newDeps(b, cfg, db, tc.rdb)
			if !tc.limit {
				deps.Limit = nil
			}
			h := rest.NewRouter(deps)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				req := httptest.NewRequest(http.MethodGet, "/v1/pets?limit=20", nil)
				req.Header.Set("Authorization", "Bearer "+key)
				for pb.Next() {
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					if rec.Code != http.StatusOK {
						b.Fatalf("got %d %s", rec.Code, rec.Body)
					}
				}
			})
		})
	}
}

// BenchmarkCreatePetParallel measures POST /v1/pets from 16 concurrent clients on each
// store: ns/op is the inverse of inserts per second, the figure that serialising inserts
// would lower.
func BenchmarkCreatePetParallel(b *testing.B) {
	for _, dialect := range dbtest.Dialects {
		b.Run(dialect, func(b *testing.B) {
			db := dbtest.New(b, dialect)
			api := newTestAPI(b, db)
			h, key := api.h, api.createKey(b, auth.KeySpec{Plan: "enterprise", PerMinute: 1 << 40, PerDay: 1 << 40})
			b.ReportAllocs()
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					r := httptest.NewRequest(http.MethodPost, "/v1/pets", strings.NewReader(`{"name":"Rex","categoryId":1,"status":"available"}`))
					r.Header.Set("Authorization", "Bearer "+key)
					r.Header.Set("Content-Type", "application/json")
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, r)
					if rec.Code != http.StatusCreated {
						b.Fatalf("got %d %s", rec.Code, rec.Body)
					}
				}
			})
		})
	}
}

// seed creates n pets through h.
func seed(tb testing.TB, h http.Handler, key string, n int) {
	tb.Helper()
	for i := range n {
		r := httptest.NewRequest(http.MethodPost, "/v1/pets", strings.NewReader(fmt.Sprintf(`{"name":"pet%d","categoryId":1,"status":"available"}`, i)))
		r.Header.Set("Authorization", "Bearer "+key)
		r.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != http.StatusCreated {
			tb.Fatalf("seed: got %d %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkGraphQLVsREST measures { pets(limit:20){id name categoryId status} } over GraphQL
// and GET /v1/pets?limit=20 over REST, through the same router on SQLite, in one run.
func BenchmarkGraphQLVsREST(b *testing.B) {
	db := dbtest.New(b, "sqlite")
	api := newTestAPI(b, db)
	key := api.createKey(b, auth.KeySpec{Plan: "enterprise", PerMinute: 1 << 40, PerDay: 1 << 40})
	seed(b, api.h, key, 20)
	requests := map[string]func() *http.Request{
		"rest": func() *http.Request { return httptest.NewRequest(http.MethodGet, "/v1/pets?limit=20", nil) },
		"graphql": func() *http.Request {
			r := httptest.NewRequest(http.MethodPost, "/v1/graphql", strings.NewReader(`{"query":"{ pets(limit:20){ id name categoryId status } }"}`))
			r.Header.Set("Content-Type", "application/json")
			return r
		},
	}
	for _, name := range []string{"rest", "graphql"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := requests[name]()
				r.Header.Set("Authorization", "Bearer "+key)
				rec := httptest.NewRecorder()
				api.h.ServeHTTP(rec, r)
				if rec.Code != http.StatusOK {
					b.Fatalf("got %d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
