//go:build galera

package e2e

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"petstore/auth"
	"petstore/config"
	"petstore/idempotency"
	"petstore/store"
	"petstore/testkit/dbtest"
)

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
		db, err := store.Open(context.Background(), node.DSN("petstore"), store.DefaultPool)
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
		keys[i], err = auth.EnsureDevKey(context.Background(), dbs[i].DB, cfg.KeyPrefix(), cfg.DevKeyPlan)
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
