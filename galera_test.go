//go:build galera

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"petstore/auth"
	"petstore/config"
	"petstore/internal/dbtest"
	"petstore/store"
)

// galeraInstances starts a 3-node Galera cluster and one instance of the service per node
// (in process), on one database; params are added to each instance's PETSTORE_DB.
func galeraInstances(t *testing.T, params string) ([]*testAPI, *dbtest.Galera) {
	t.Helper()
	quiet(t)
	g := dbtest.StartGalera(t, 3)
	if err := g.Nodes[0].Exec("CREATE DATABASE petstore CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		t.Fatal(err)
	}
	var apis []*testAPI
	for i, node := range g.Nodes {
		db, err := store.Open(context.Background(), node.DSN("petstore")+params, store.DefaultPool)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		if i == 0 {
			if _, err := db.Migrate(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		api := newTestAPIConfig(t, db, config.Default())
		apis = append(apis, api)
	}
	// One key for all: made on node 1, it reaches the others by replication.
	key := apis[0].createKey(t, auth.KeySpec{Plan: "enterprise", PerMinute: 1_000_000, PerDay: 10_000_000})
	for _, api := range apis {
		api.key = key
	}
	return apis, g
}

// TestGaleraReadYourWrites creates pets through one instance and reads each at once through
// the two others: it reports the share of reads that miss, and the latency of the reads,
// without and with wsrep_sync_wait=1 (causal reads) in the connection parameters.
func TestGaleraReadYourWrites(t *testing.T) {
	for _, params := range []string{"", "?wsrep_sync_wait=1"} {
		t.Run("params="+params, func(t *testing.T) {
			apis, _ := galeraInstances(t, params)
			const n = 300
			misses, reads := 0, 0
			var readTime time.Duration
			for i := range n {
				w := apis[i%3]
				resp := w.do(t, post("/v1/pets", fmt.Sprintf(`{"name":"p%d","categoryId":1}`, i)))
				if resp.status != http.StatusCreated {
					t.Fatalf("POST: got %d %s", resp.status, resp.body)
				}
				var pet struct{ ID int64 }
				_ = json.Unmarshal([]byte(resp.body), &pet)
				for j := 1; j <= 2; j++ {
					r := apis[(i+j)%3]
					start := time.Now()
					got := r.do(t, get(fmt.Sprintf("/v1/pets/%d", pet.ID)))
					readTime += time.Since(start)
					reads++
					if got.status == http.StatusNotFound {
						misses++
					} else if got.status != http.StatusOK {
						t.Fatalf("GET: got %d %s", got.status, got.body)
					}
				}
			}
			t.Logf("%s: %d of %d immediate reads on another node missed (%.1f%%); mean read %v",
				params, misses, reads, 100*float64(misses)/float64(reads), readTime/time.Duration(reads))
			if strings.Contains(params, "wsrep_sync_wait") && misses > 0 {
				t.Errorf("with causal reads: %d misses; want 0", misses)
			}
		})
	}
}
