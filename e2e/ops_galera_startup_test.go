//go:build galera

package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"petstore/idempotency"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// TestGaleraStartTogether starts one instance on each node at once on a fresh database, in
// rounds (PETSTORE_TEST_GALERA_ROUNDS, 20 by default; the database dropped and made again
// between rounds): their migrations and development keys meet on three nodes, where the named
// lock that serialises them on one server (GET_LOCK) holds per node only. In each round each
// must start and be ready within a minute, the migrations be applied once each, one
// development key be made and the migration lease be gone (startRounds). Then, as the users of
// deploy/mysql/grants.sql (migrate up as the migrating one): an instance of the serving one
// starts on the migrated database although its migration lease was left behind, and two
// instances' purgers of the serving one run at once on the same expired idempotency records:
// none is left, no round fails.
func TestGaleraStartTogether(t *testing.T) {
	quiet(t)
	g := dbtest.StartGalera(t, 3)
	startRounds(t, roundsSetting(t, "PETSTORE_TEST_GALERA_ROUNDS", 20), func(t *testing.T, _ int) ([]string, string) {
		if err := g.Nodes[0].Exec("DROP DATABASE IF EXISTS petstore"); err != nil {
			t.Fatal(err)
		}
		if err := g.Nodes[0].Exec("CREATE DATABASE petstore CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
			t.Fatal(err)
		}
		var dsns []string
		for _, node := range g.Nodes {
			dsns = append(dsns, node.DSN("petstore"))
		}
		return dsns, g.Nodes[2].DSN("petstore")
	})

	// The purge, on a database of its own (the rounds' instances were killed, and may have
	// left their purge leases behind), and as the users of deploy/mysql/grants.sql: migrated
	// by the migrating one, purged by the serving one, which may not create the lease table.
	if err := g.Nodes[0].Exec("CREATE DATABASE petstore_purge CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		t.Fatal(err)
	}
	migrate, serve := grantsUsers(t, g.Nodes[0].DSN("petstore_purge"))
	if _, err := runAs([]string{"PETSTORE_DB=" + migrate}, "migrate", "up"); err != nil {
		t.Fatal(err)
	}
	dbs := make([]*store.DB, len(g.Nodes))
	for i, node := range g.Nodes {
		db, err := store.Open(context.Background(), atNode(serve, node), store.DefaultPool)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		if !db.Galera {
			t.Fatalf("node %d: store.DB.Galera false; want true", i+1)
		}
		dbs[i] = db
	}
	// A migration lease left behind (by an instance that died after migrating) holds no one
	// back once the migrations are applied.
	if err := dbs[0].Exec("INSERT INTO petstore_locks (name, holder, expires) VALUES ('petstore-migrate', REPEAT('0', 32), NOW(6) + INTERVAL 10 MINUTE)").Error; err != nil {
		t.Fatal(err)
	}
	cmd, _, _, err := startWithin(t, atNode(serve, g.Nodes[1]))
	if err != nil {
		t.Errorf("an instance on a migrated database with a migration lease left behind: %v", err)
	}
	// Stopped, not killed: its purger, which ran at start, releases the purge lease.
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
	var purgeLeases int64
	if err := dbs[0].Raw("SELECT COUNT(*) FROM petstore_locks WHERE name = 'petstore-purge'").Scan(&purgeLeases).Error; err != nil || purgeLeases != 0 {
		t.Fatalf("purge leases after the instance stopped: %d, %v; want none", purgeLeases, err)
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
		c := idempotency.DefaultConfig() // the TTL and statement timeout of the default settings
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

// atNode returns dsn with the address of node.
func atNode(dsn string, node *dbtest.GaleraNode) string {
	u, _ := url.Parse(dsn)
	u.Host = fmt.Sprintf("127.0.0.1:%d", node.Port)
	return u.String()
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
