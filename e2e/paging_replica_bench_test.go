package e2e

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"petstore/auth"
	"petstore/models"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// BenchmarkReplicaMixed runs a mixed load through the real router on a primary alone and on
// the primary with a replica: of every 10 requests, 1 POST, 4 first pages, 2 pages at a random
// cursor, 1 page of one status and 2 getPet of a random pet, over 2,000 pets. It reports the
// share of reads the replica served (replica-share) and the reads that asked for it.
func BenchmarkReplicaMixed(b *testing.B) {
	db, pair := dbtest.Replicated(b)
	if err := db.Exec("INSERT INTO pets (name, category_id, status) SELECT 'seed', 1 + seq % 7, " +
		"ELT(1 + seq % 3, 'available', 'pending', 'sold') FROM seq_1_to_2000").Error; err != nil {
		b.Fatal(err)
	}
	pair.WaitApplied(b)
	dbtest.WaitSettled(b, db.Replicas, 2000)
	primaryOnly := *db
	primaryOnly.Replicas = nil
	for _, tc := range []struct {
		name string
		db   *store.DB
	}{{"primary", &primaryOnly}, {"replica", db}} {
		b.Run(tc.name, func(b *testing.B) {
			api := newTestAPI(b, tc.db)
			api.key = api.createKey(b, auth.KeySpec{Plan: "enterprise", PerMinute: 1 << 40, PerDay: 1 << 40})
			served0, all0 := db.Replicas.Reads()
			b.RunParallel(func(pb *testing.PB) {
				for i := 0; pb.Next(); i++ {
					api.mixed(b, i%10)
				}
			})
			served, all := db.Replicas.Reads()
			if all > all0 {
				b.ReportMetric(float64(served-served0)/float64(all-all0), "replica-share")
			}
		})
	}
}

// mixed sends request n (0 to 9) of the mix of BenchmarkReplicaMixed.
func (api *testAPI) mixed(b *testing.B, n int) {
	method, path, body := http.MethodGet, "/v1/pets?limit=20", ""
	switch {
	case n == 0:
		method, path, body = http.MethodPost, "/v1/pets", `{"name":"Rex","categoryId":1,"status":"sold"}`
	case n < 5:
	case n < 7:
		path = "/v1/pets?limit=20&after=" + models.EncodeCursor(rand.Int64N(2000))
	case n == 7:
		path = "/v1/pets?limit=20&status=pending"
	default:
		path = fmt.Sprintf("/v1/pets/%d", 1+rand.Int64N(2000))
	}
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+api.key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	api.h.ServeHTTP(rec, req)
	if rec.Code >= 300 {
		b.Errorf("%s %s: got %d %s", method, path, rec.Code, rec.Body)
	}
}
