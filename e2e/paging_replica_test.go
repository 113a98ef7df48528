package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"petstore/auth"
	"petstore/models"
	"petstore/testkit/dbtest"
)

// TestPagingOnReplica is TestPagingUnderConcurrentWriters with a real replica beside the
// primary: writers go to the primary, the readers' pages to the replica whenever it certainly
// has them. The replica applies transactions in the primary's commit order while ids are handed
// out before commit, so it can hold pet 60 before pet 50; no walk may skip or repeat a pet.
// While the writers work, the holes their rollbacks leave keep most pages on the primary for a
// second (store.SettleDelay); the last walks, once every pet is settled, are the replica's.
func TestPagingOnReplica(t *testing.T) {
	t.Parallel()
	db, _ := dbtest.Replicated(t)
	r := newPagingRace(t, db)
	r.beforeLast = func() { dbtest.WaitSettled(t, db.Replicas, r.lastID) }
	r.run()
	skipped := r.check()
	served, all := db.Replicas.Reads()
	t.Logf("%d pets committed (%d rolled back), %d walks, %d pages read, %d of %d reads served by the replica, skipped %v",
		len(r.committed), len(r.rolledBack), len(r.walks), r.pages.Load(), served, all, skipped)
	if len(skipped) > 0 {
		t.Errorf("committed pets skipped by walks that passed their ids, by writer: %v; want none", skipped)
	}
	if served == 0 {
		t.Error("the replica served no read; want some")
	}
}

// TestReplicaReads runs the service on a primary and a replica through the real router: reads
// go to the replica, a pet or key created a moment ago is found while the replica has yet to
// apply it, and a replica that lags beyond store.MaxReplicaLag, hangs or is down is skipped
// without a failed request.
func TestReplicaReads(t *testing.T) {
	t.Parallel()
	db, pair := dbtest.Replicated(t)
	api := newTestAPI(t, db)
	var last int64
	for range 60 {
		last = api.createPet(t)
	}
	dbtest.WaitSettled(t, db.Replicas, last)

	t.Run("served by the replica", func(t *testing.T) {
		before, _ := db.Replicas.Reads()
		api.mustGet(t, "/v1/pets/1")
		api.mustGet(t, "/v1/pets?limit=20")
		if served, _ := db.Replicas.Reads(); served != before+2 {
			t.Errorf("reads served by the replica: got %d; want %d", served-before, 2)
		}
	})
	t.Run("read your writes", func(t *testing.T) {
		pair.PauseApply(t)
		defer pair.ResumeApply(t)
		for range 3 {
			id := api.createPet(t)
			api.mustGet(t, fmt.Sprintf("/v1/pets/%d", id))
			if !listed(t, api.mustGet(t, fmt.Sprintf("/v1/pets?after=%s&limit=100", models.EncodeCursor(id-10))), id) {
				t.Errorf("pet %d, just created, is not on the last page", id)
			}
			key := api.createKey(t, auth.KeySpec{Plan: "free"})
			if res := api.do(t, request{method: http.MethodGet, path: "/v1/pets?limit=1", header: http.Header{"Authorization": {"Bearer " + key}}, noAuth: true}); res.status != http.StatusOK {
				t.Errorf("a key created a moment ago: got %d %s; want 200", res.status, res.body)
			}
		}
	})
	t.Run("lagging replica skipped", func(t *testing.T) {
		pair.PauseApply(t)
		api.createPet(t)
		dbtest.WaitReady(t, db.Replicas, 0)
		before, _ := db.Replicas.Reads()
		api.mustGet(t, "/v1/pets/1")
		api.mustGet(t, "/v1/pets?limit=20")
		if served, _ := db.Replicas.Reads(); served != before {
			t.Errorf("reads served by a replica lagging beyond the bound: got %d; want 0", served-before)
		}
		pair.ResumeApply(t)
		dbtest.WaitReady(t, db.Replicas, 1)
	})
	t.Run("replica hung", func(t *testing.T) {
		pair.Replica.Freeze()
		defer pair.Replica.Thaw()
		api.mustGet(t, "/v1/pets/2")
		api.mustGet(t, "/v1/pets?limit=20")
		dbtest.WaitReady(t, db.Replicas, 0)
		pair.Replica.Thaw()
		dbtest.WaitReady(t, db.Replicas, 1)
	})
	t.Run("replica down", func(t *testing.T) {
		pair.Replica.Stop()
		for i := range 5 { // the first ones before a poll sees it down
			api.mustGet(t, fmt.Sprintf("/v1/pets/%d", i+1))
			api.mustGet(t, "/v1/pets?limit=20")
			key := api.createKey(t, auth.KeySpec{Plan: "free"})
			if res := api.do(t, request{method: http.MethodGet, path: "/v1/pets?limit=1", header: http.Header{"Authorization": {"Bearer " + key}}, noAuth: true}); res.status != http.StatusOK {
				t.Errorf("a new key with the replica down: got %d %s; want 200", res.status, res.body)
			}
		}
		dbtest.WaitReady(t, db.Replicas, 0)
	})
}

// createPet creates a pet through POST /v1/pets and returns its id.
func (api *testAPI) createPet(t *testing.T) int64 {
	t.Helper()
	res := api.do(t, post("/v1/pets", `{"name":"Rex","categoryId":1,"status":"available"}`))
	var pet struct{ ID int64 }
	if err := json.Unmarshal([]byte(res.body), &pet); res.status != http.StatusCreated || err != nil {
		t.Fatalf("POST /v1/pets: got %d %s; want 201", res.status, res.body)
	}
	return pet.ID
}

// mustGet sends GET path and fails t unless the answer is 200.
func (api *testAPI) mustGet(t *testing.T, path string) response {
	t.Helper()
	res := api.do(t, get(path))
	if res.status != http.StatusOK {
		t.Errorf("GET %s: got %d %s; want 200", path, res.status, res.body)
	}
	return res
}

// listed reports whether the page of res lists the pet with id.
func listed(t *testing.T, res response, id int64) bool {
	t.Helper()
	var pets []struct{ ID int64 }
	if err := json.Unmarshal([]byte(res.body), &pets); err != nil {
		t.Fatalf("page %s: %v", res.body, err)
	}
	for _, p := range pets {
		if p.ID == id {
			return true
		}
	}
	return false
}
