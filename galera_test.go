//go:build galera

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"petstore/auth"
	"petstore/config"
	"petstore/idempotency"
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

// TestGaleraPagingNeverSkips is TestPagingUnderConcurrentWriters on a Galera cluster, where
// ids from different nodes commit out of order (each node hands out its own ids,
// auto_increment_increment 3) and a node applies the others' writes a moment late: 12
// writers POST through the instances of nodes 1 and 2 (half with an Idempotency-Key), each
// reading its pet at once through node 3's instance, while readers walk the listing through
// node 3's instance by REST next links and GraphQL cursors. Every committed pet whose id is
// at most a walk's last id must have been seen by the walk, and every pet read at once.
func TestGaleraPagingNeverSkips(t *testing.T) {
	apis, _ := galeraInstances(t, "?wsrep_sync_wait=1")
	perWriter := 300
	if s := os.Getenv("PETSTORE_TEST_GALERA_PETS"); s != "" {
		perWriter, _ = strconv.Atoi(s)
	}
	for _, api := range apis {
		api.db.SQL().SetMaxOpenConns(32)
	}
	r := &pagingRace{t: t, db: apis[2].db, h: apis[2].h, key: apis[2].key,
		committed: map[int64]racePet{}, rolledBack: map[int64]bool{}}
	var misses, reads atomic.Int64
	var postTime maxDuration
	var writers, readers sync.WaitGroup
	done := make(chan struct{})
	for i := range 12 {
		w := &pagingRace{t: t, h: apis[i%2].h, key: r.key, committed: map[int64]racePet{}}
		writers.Go(func() {
			for n := range perWriter {
				idem := ""
				if i >= 6 {
					idem = fmt.Sprintf("galera-%d-%d-%d", i, n, rand.Int64())
				}
				before, start := len(w.committed), time.Now()
				w.post(idem)
				postTime.observe(time.Since(start))
				if len(w.committed) == before {
					continue
				}
				code, _, _ := r.call(http.MethodGet, fmt.Sprintf("/v1/pets/%d", w.lastID), "", nil)
				reads.Add(1)
				if code != http.StatusOK {
					misses.Add(1)
				}
			}
			for id, p := range w.committed {
				r.commit(id, p)
			}
		})
	}
	kinds := []func() walk{
		func() walk { return r.walkREST("") }, func() walk { return r.walkREST("available") },
		func() walk { return r.walkGraphQL("") }, func() walk { return r.walkGraphQL("sold") },
	}
	for i := range 2 {
		readers.Go(func() {
			for n := i; ; n++ {
				select {
				case <-done:
					return
				default:
				}
				r.record(kinds[n%len(kinds)]())
			}
		})
	}
	start := time.Now()
	writers.Wait()
	elapsed := time.Since(start)
	close(done)
	readers.Wait()
	for _, k := range kinds {
		r.record(k())
	}
	skipped := r.check()
	t.Logf("%d pets committed in %v (%.0f POST/s) through nodes 1 and 2; %d walks, %d pages through node 3; skipped %v; "+
		"%d of %d reads through node 3 missed; slowest POST %v", len(r.committed), elapsed.Round(time.Millisecond),
		float64(len(r.committed))/elapsed.Seconds(), len(r.walks), r.pages.Load(), skipped, misses.Load(), reads.Load(), postTime.get())
	if len(skipped) > 0 {
		t.Errorf("committed pets skipped by walks that passed their ids, by writer: %v; want none", skipped)
	}
	if misses.Load() > 0 {
		t.Errorf("%d pets not found through node 3 after their 201; want 0", misses.Load())
	}
}

// maxDuration is the longest of durations observed concurrently.
type maxDuration struct {
	mu  sync.Mutex
	max time.Duration
}

func (m *maxDuration) observe(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.max = max(m.max, d)
}

func (m *maxDuration) get() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.max
}

// TestGaleraStartTogether starts, on a fresh database, one instance on each node at once:
// their migrations and development keys meet on three nodes, where the named lock that
// serialises them on one server (GET_LOCK) holds per node only. Each must start; the
// migrations must be applied once each, one development key made. Then two instances' purgers
// run at once on the same expired idempotency records: none is left, no round fails.
func TestGaleraStartTogether(t *testing.T) {
	quiet(t)
	g := dbtest.StartGalera(t, 3)
	if err := g.Nodes[0].Exec("CREATE DATABASE petstore CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	dbs := make([]*store.DB, len(g.Nodes))
	for i, node := range g.Nodes {
		db, err := store.Open(context.Background(), node.DSN("petstore")+"?wsrep_sync_wait=1", store.DefaultPool)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		if !db.Galera {
			t.Fatalf("node %d: store.DB.Galera false; want true", i+1)
		}
		dbs[i] = db
	}
	applied, keys := make([]int, len(dbs)), make([]string, len(dbs))
	startTogether(t, len(dbs), func(i int) error {
		var err error
		if applied[i], err = dbs[i].Migrate(context.Background()); err != nil {
			return err
		}
		keys[i], err = auth.EnsureDevKey(context.Background(), dbs[i].DB, cfg.KeyPrefix())
		return err
	})
	t.Logf("migrations applied by each node's instance: %v", applied)
	var versions []struct{ Version, N int64 }
	if err := dbs[0].Raw("SELECT version_id AS version, COUNT(*) AS n FROM goose_db_version GROUP BY version_id ORDER BY version_id").Scan(&versions).Error; err != nil {
		t.Fatal(err)
	}
	for _, v := range versions {
		if v.N != 1 {
			t.Errorf("goose version %d recorded %d times; want once", v.Version, v.N)
		}
	}
	if len(versions) != 4 { // 0 (goose's own) to 3
		t.Errorf("goose versions recorded: %v; want 0 to 3", versions)
	}
	made := 0
	for _, k := range keys {
		if k != "" {
			made++
		}
	}
	var stored int64
	if err := dbs[2].Raw("SELECT COUNT(*) FROM api_keys").Scan(&stored).Error; err != nil {
		t.Fatal(err)
	}
	if made != 1 || stored != 1 {
		t.Errorf("development keys: %d returned, %d stored; want 1 and 1", made, stored)
	}

	// Expired idempotency records, purged by two nodes' instances.
	const records = 3000
	if err := dbs[0].Exec("INSERT INTO idempotency_keys (key_id, idem_key, request_hash, state, lease_token, headers, body, created_at, expires_at, locked_until) " +
		"SELECT 1, CONCAT('k', seq), REPEAT('0', 64), 'done', REPEAT('0', 32), '{}', '', NOW(6), NOW(6) - INTERVAL 1 DAY, NOW(6) FROM seq_1_to_3000").Error; err != nil {
		t.Fatal(err)
	}
	// Each instance runs its purger as serve does (a round every 50 ms here): on Galera the
	// purge lock is a lease, so one purges at a time; a failed round is logged as a warning.
	warnings := &countingHandler{}
	slog.SetDefault(slog.New(warnings))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var purgers sync.WaitGroup
	for i := range 2 {
		c := cfg.Idempotency()
		c.PurgeBatch = 100
		s, err := idempotency.New(dbs[i].DB, c)
		if err != nil {
			t.Fatal(err)
		}
		purgers.Go(func() { s.RunPurger(ctx, 50*time.Millisecond) })
	}
	purgers.Wait()
	slog.SetDefault(slog.New(slog.DiscardHandler))
	var left int64
	if err := dbs[2].Raw("SELECT COUNT(*) FROM idempotency_keys").Scan(&left).Error; err != nil {
		t.Fatal(err)
	}
	t.Logf("%d expired records purged by two nodes' purgers: %d left, %d warnings", records, left, warnings.n.Load())
	if left != 0 || warnings.n.Load() != 0 {
		t.Errorf("purge on two nodes: %d left, %d warnings logged; want 0 and 0", left, warnings.n.Load())
	}
}

// countingHandler is a slog handler that counts the records of level warning and above.
type countingHandler struct{ n atomic.Int64 }

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h.n.Add(1)
	}
	return nil
}

func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }

func (h *countingHandler) WithGroup(string) slog.Handler { return h }
