package idempotency

import (
	"net/http"
	"testing"

	"petstore/migrations"
	"petstore/testkit/dbtest"
)

// TestLostConnectionBeforeCommitRunsAgain kills the transaction's connection after the
// handler wrote its pet, before COMMIT: the server rolled it all back, so the service runs
// the handler again in a new transaction and answers 201 with exactly one pet.
func TestLostConnectionBeforeCommitRunsAgain(t *testing.T) {
	f := newFixture(t, dbtest.New(t, migrations.MySQL), nil)
	f.fail.Store("kill")
	wantStatus(t, f.send(t, call{key: "k", body: rex}), http.StatusCreated)
	if got := f.hits.Load(); got != 2 {
		t.Errorf("handler runs: got %d; want 2", got)
	}
	if got := f.count(t, "pets"); got != 1 {
		t.Errorf("pets: got %d; want 1", got)
	}
	if rec := f.find(t, "k"); rec.State != stateDone {
		t.Errorf("record state: got %q; want %q", rec.State, stateDone)
	}
}
