package store_test

import (
	"context"
	"testing"
	"time"

	"petstore/store"
	"petstore/testkit/dbtest"
)

// TestReplicaFreshness runs a real primary and replica: the replica serves while it keeps up,
// its settled id covers the pets committed, and it is skipped while it lags beyond
// store.MaxReplicaLag and while it is down, and serves again when it catches up.
func TestReplicaFreshness(t *testing.T) {
	db, pair := dbtest.Replicated(t)
	insert := func() {
		t.Helper()
		if err := db.Exec("INSERT INTO pets (name, category_id) VALUES ('a', 1)").Error; err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		insert()
	}
	dbtest.WaitSettled(t, db.Replicas, 5)

	pair.PauseApply(t)
	insert()
	start := time.Now()
	dbtest.WaitReady(t, db.Replicas, 0)
	if waited := time.Since(start); waited < store.MaxReplicaLag/2 {
		t.Errorf("a replica behind by one write was skipped after %v; want about %v", waited, store.MaxReplicaLag)
	}
	pair.ResumeApply(t)
	dbtest.WaitReady(t, db.Replicas, 1)
	dbtest.WaitSettled(t, db.Replicas, 6)

	pair.Replica.Stop()
	dbtest.WaitReady(t, db.Replicas, 0)
	if _, ok := db.Replicas.Pick(); ok {
		t.Error("Pick with the replica down: got a replica; want none")
	}
}

// TestReplicaDownAtStart: replicas that refuse connections when the instance starts (one down,
// one never there) do not stop it: the instance reads from the primary, and takes the replica
// in once it answers and is fresh.
func TestReplicaDownAtStart(t *testing.T) {
	pair := dbtest.StartReplicaPair(t)
	ctx := context.Background()
	db := pair.Migrated(t)
	if err := pair.Replica.Stop(); err != nil {
		t.Fatal(err)
	}
	urls := []string{pair.Replica.DSN("petstore"), "mysql://root@127.0.0.1:1/petstore"}
	var err error
	if db.Replicas, err = store.OpenReplicas(ctx, db, urls, store.DefaultPool); err != nil {
		t.Fatalf("open replicas that refuse connections: %v; want them skipped", err)
	}
	t.Cleanup(func() { _ = db.Replicas.Close() })
	if _, ok := db.Replicas.Pick(); ok {
		t.Error("Pick with no replica answering: got one; want none (read the primary)")
	}
	if err := db.Ready(ctx); err != nil {
		t.Errorf("Ready with the replicas down: %v; want the primary's answer", err)
	}
	if err := pair.Replica.Start(ctx); err != nil {
		t.Fatal(err)
	}
	dbtest.WaitReady(t, db.Replicas, 1)
}
