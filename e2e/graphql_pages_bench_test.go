package e2e

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"petstore/app"
	"petstore/auth"
	"petstore/testkit/dbtest"
)

// pageRequests are the same pages asked of REST and of GraphQL: the first 20 pets and the
// first 100, each followed by more, so that the page cache keeps them when it is on.
var pageRequests = []struct{ name, method, path, body string }{
	{"rest-20", http.MethodGet, "/v1/pets?limit=20", ""},
	{"graphql-20", http.MethodPost, "/v1/graphql", `{"query":"{ pets(limit:20) { id name categoryId status } }"}`},
	{"rest-100", http.MethodGet, "/v1/pets?limit=100", ""},
	{"graphql-100", http.MethodPost, "/v1/graphql", `{"query":"{ petsConnection(first:100) { edges { cursor node { id name categoryId status } } pageInfo { hasNextPage endCursor } } }"}`},
}

// BenchmarkGraphQLPages measures the same pages over REST and GraphQL (pageRequests) through
// the real router, one request at a time, on each store with the page cache on and off, over
// 150 pets: GraphQL's cost beside REST's for the same page.
func BenchmarkGraphQLPages(b *testing.B) {
	for _, dialect := range dbtest.Dialects {
		db := dbtest.New(b, dialect)
		var seeded bool
		for _, cache := range []string{"cache-on", "cache-off"} {
			cfg := app.DefaultConfig()
			if cache == "cache-off" {
				cfg.PageCacheBytes = 0
			}
			api := newTestAPIConfig(b, db, cfg)
			key := api.createKey(b, auth.KeySpec{Plan: "enterprise", PerMinute: 1 << 40, PerDay: 1 << 40})
			if !seeded {
				seed(b, api.h, key, 150)
				seeded = true
			}
			for _, pr := range pageRequests {
				b.Run(dialect+"/"+cache+"/"+pr.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						r := httptest.NewRequest(pr.method, pr.path, strings.NewReader(pr.body))
						r.Header.Set("Authorization", "Bearer "+key)
						if pr.body != "" {
							r.Header.Set("Content-Type", "application/json")
						}
						rec := httptest.NewRecorder()
						api.h.ServeHTTP(rec, r)
						if rec.Code != http.StatusOK {
							b.Fatalf("got %d %s", rec.Code, rec.Body)
						}
					}
				})
			}
		}
	}
}
