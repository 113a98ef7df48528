package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/store"
	"petstore/testkit/dbtest"
)

// TestWebhookNoEndpointOneStatement checks that, while no endpoint exists, POST /v1/pets is one
// statement and writes no outbox row, and that the instance that registers an endpoint
// writes the row of its very next pet.
func TestWebhookNoEndpointOneStatement(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		api := newTestAPIConfig(t, db, hookConfig())
		plain := api.db.DB.ConnPool
		pool := countStatements(api.db.DB)
		postPetNamed(t, api, "Warm") // warms the key cache
		pool.all.Store(0)
		postPetNamed(t, api, "Rex")
		if got := pool.all.Load(); got != 1 {
			t.Errorf("POST /v1/pets without an endpoint: got %d statements; want 1", got)
		}
		if got := outboxRows(t, api.db); got != 0 {
			t.Errorf("outbox without an endpoint: got %d rows; want 0", got)
		}
		api.db.DB.ConnPool, api.db.DB.Statement.ConnPool = plain, plain // the counter begins no transaction
		api.createHook(t, "http://127.0.0.1:9/hooks")
		postPetNamed(t, api, "Tom")
		if got := outboxRows(t, api.db); got != 1 {
			t.Errorf("outbox after the endpoint's 201: got %d rows; want 1", got)
		}
	})
}

// postPetNamed creates a pet named name through REST.
func postPetNamed(t *testing.T, api *testAPI, name string) {
	t.Helper()
	if resp := api.do(t, post("/v1/pets", `{"name":"`+name+`","categoryId":1}`)); resp.status != http.StatusCreated {
		t.Fatalf("create %s: got %d %s", name, resp.status, resp.body)
	}
}

// outboxRows counts the rows of the webhooks outbox.
func outboxRows(t *testing.T, db *store.DB) int64 {
	t.Helper()
	var n int64
	if err := db.Raw("SELECT COUNT(*) FROM webhook_outbox").Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// TestWebhookRegisteredOnAnotherInstance runs two instances on one MySQL database: an
// endpoint is registered on A, and pets are created on both from right after its 201, B's
// first ones (some 1.6 s of them) before B has learnt of the endpoint (one INSERT each, no outbox row). Every pet
// must reach the receiver exactly once: one delivery and one request each, the pets B wrote
// without a row queued when the endpoint's warm-up ends.
func TestWebhookRegisteredOnAnotherInstance(t *testing.T) {
	dsn := dbtest.DSN(t, "mysql")
	cfg := hookConfig(time.Second)
	cfg.DBTimeout = time.Second // a warm-up of 4 s
	var dbs [2]*store.DB
	var apis [2]*testAPI
	for i := range dbs {
		db, err := store.Open(context.Background(), dsn, store.DefaultPool)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		if _, err := db.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		dbs[i], apis[i] = db, newHookAPI(t, db, cfg)
	}
	rcv := newReceiver(t, nil)
	id, _ := apis[0].createHook(t, rcv.URL+"/hooks")
	registered := time.Now()

	var mu sync.Mutex
	var ids []int64
	var wg sync.WaitGroup
	for w := range 4 { // 160 pets over some 1.6 s: past B's refresh, within the key's rate
		wg.Go(func() {
			for i := range 40 {
				time.Sleep(time.Duration(min(i, 1)) * 40 * time.Millisecond)
				if pet := postDirect(t, apis[(w+i)%2], fmt.Sprintf("w%d-%d", w, i)); pet != 0 {
					mu.Lock()
					ids = append(ids, pet)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	calls := rcv.waitFor(t, 30*time.Second, "every pet delivered", func(c []hookCall) bool {
		got := map[int64]bool{}
		for _, call := range c {
			got[decodeEvent(t, call).Data.Pet.ID] = true
		}
		for _, pet := range ids {
			if !got[pet] {
				return false
			}
		}
		return true
	})
	waitCaughtUp(t, dbs[0], id)
	time.Sleep(2 * time.Second) // a second catch-up or fan-out would have sent by now
	calls = rcv.snapshot()
	perPet, caught := map[int64]int{}, 0
	for _, c := range calls {
		ev := decodeEvent(t, c)
		perPet[ev.Data.Pet.ID]++
		if at, _ := time.Parse(time.RFC3339, ev.Timestamp); at.After(registered.Add(3 * time.Second)) {
			caught++ // queued by the catch-up: its timestamp is when it was queued
		}
	}
	if caught == 0 {
		t.Error("no pet was caught up: B learnt of the endpoint before its first pet, and the catch-up went untested")
	}
	for _, pet := range ids {
		if perPet[pet] != 1 {
			t.Errorf("pet %d: got %d requests; want 1", pet, perPet[pet])
		}
	}
	var rows int64
	if err := dbs[0].Raw("SELECT COUNT(*) FROM webhook_deliveries WHERE endpoint_id = ?", id).Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	if rows != int64(len(ids)) || len(calls) != len(ids) {
		t.Errorf("got %d deliveries and %d requests for %d pets; want one each", rows, len(calls), len(ids))
	}
	t.Logf("%d pets, %d of them written by B without an outbox row and caught up", len(ids), caught)
}

// postDirect creates the pet name through api's handler, from any goroutine, and returns
// its id, 0 when the answer was not 201.
func postDirect(t *testing.T, api *testAPI, name string) int64 {
	r := httptest.NewRequest(http.MethodPost, "/v1/pets", strings.NewReader(`{"name":"`+name+`","categoryId":1}`))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Authorization", "Bearer "+api.key)
	rec := httptest.NewRecorder()
	api.h.ServeHTTP(rec, r)
	var pet struct{ ID int64 }
	if rec.Code != http.StatusCreated || json.Unmarshal(rec.Body.Bytes(), &pet) != nil {
		t.Errorf("create %s: got %d %s", name, rec.Code, rec.Body)
		return 0
	}
	return pet.ID
}

// waitCaughtUp waits until the endpoint id's warm-up ended and it was caught up.
func waitCaughtUp(t *testing.T, db *store.DB, id string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var n int64
		if err := db.Raw("SELECT COUNT(*) FROM webhook_endpoints WHERE id = ? AND catch_up_at IS NOT NULL", id).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the endpoint was not caught up within 20 s")
		}
	}
}
