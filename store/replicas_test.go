package store_test

import (
	"testing"
	"time"

	"petstore/internal/dbtest"
	"petstore/store"
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
