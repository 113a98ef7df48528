package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"petstore/config"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// TestWebhookPetOneStatement checks that POST /v1/pets writes one statement, its INSERT, and
// no outbox row, with an endpoint as without one: the dispatcher finds the pet in the pets
// table, and queues its delivery.
func TestWebhookPetOneStatement(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		api := newHookAPI(t, db, hookConfig())
		id, _ := api.createHook(t, "http://127.0.0.1:9/hooks")
		postPetNamed(t, api, "Warm") // warms the key cache
		plain := api.db.DB.ConnPool
		pool := countStatements(api.db.DB) // which begins no transaction: the dispatcher's wait
		for _, name := range []string{"Rex", "Tom"} {
			pool.writes.Store(0)
			postPetNamed(t, api, name)
			if got := pool.writes.Load(); got != 1 {
				t.Errorf("POST /v1/pets with an endpoint: got %d writes; want 1", got)
			}
		}
		api.db.DB.ConnPool, api.db.DB.Statement.ConnPool = plain, plain
		if got := outboxRows(t, api.db); got != 0 {
			t.Errorf("outbox: got %d rows; want 0", got)
		}
		within(t, 5*time.Second, "the three pets queued for the endpoint", func() bool {
			var n int64
			err := db.Raw("SELECT COUNT(*) FROM webhook_deliveries WHERE endpoint_id = ?", id).Scan(&n).Error
			return err == nil && n == 3
		})
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

// TestWebhookTwoInstances runs two instances on one MySQL database, and checks that every
// pet created on either is delivered exactly once (checkEveryPetOnce).
func TestWebhookTwoInstances(t *testing.T) {
	checkEveryPetOnce(t, mysqlHookInstances(t, hookConfig(time.Second), hookConfig(time.Second)))
}

// TestWebhookDeliverOff runs an instance with PETSTORE_WEBHOOK_DELIVER=false beside one that
// delivers: every pet of either is delivered exactly once, and the first queues none.
func TestWebhookDeliverOff(t *testing.T) {
	off := hookConfig(time.Second)
	off.Webhooks.Deliver = false
	apis := mysqlHookInstances(t, off, hookConfig(time.Second))
	checkEveryPetOnce(t, apis)
	if m := regexp.MustCompile(`(?m)^petstore_webhook_deliveries_queued_total (\S+)$`).FindStringSubmatch(apis[0].mustGet(t, "/metrics").body); m == nil || m[1] != "0" {
		t.Errorf("deliveries queued by the instance that does not deliver: %q; want 0", m)
	}
}

// mysqlHookInstances returns an instance of each of cfgs, on one MySQL database, its
// background work running (newHookAPI).
func mysqlHookInstances(t *testing.T, cfgs ...config.Config) []*testAPI {
	t.Helper()
	dsn := dbtest.DSN(t, "mysql")
	var apis []*testAPI
	for _, cfg := range cfgs {
		apis = append(apis, hookInstance(t, dsn, cfg))
	}
	return apis
}

// hookInstance returns an instance of cfg on the MySQL database dsn, its background work
// running (newHookAPI).
func hookInstance(t *testing.T, dsn string, cfg config.Config) *testAPI {
	t.Helper()
	db, err := store.Open(context.Background(), dsn, store.DefaultPool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return newHookAPI(t, db, cfg)
}

// checkEveryPetOnce registers an endpoint on the first of apis, and creates pets on each in
// turn from right after its 201, those of the others before their dispatchers' first poll
// since. Every pet must reach the receiver exactly once: one delivery and one request each,
// whichever instance's dispatcher queued it.
func checkEveryPetOnce(t *testing.T, apis []*testAPI) {
	t.Helper()
	rcv := newReceiver(t, nil)
	id, _ := apis[0].createHook(t, rcv.URL+"/hooks")

	var mu sync.Mutex
	var ids []int64
	var wg sync.WaitGroup
	for w := range 4 { // 160 pets over some 1.6 s, within the key's rate
		wg.Go(func() {
			for i := range 40 {
				time.Sleep(time.Duration(min(i, 1)) * 40 * time.Millisecond)
				if pet := postDirect(t, apis[(w+i)%len(apis)], fmt.Sprintf("w%d-%d", w, i)); pet != 0 {
					mu.Lock()
					ids = append(ids, pet)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	rcv.waitFor(t, 30*time.Second, "every pet delivered", func(c []hookCall) bool {
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
	time.Sleep(2 * time.Second) // a second fan-out would have sent by now
	calls := rcv.snapshot()
	perPet := map[int64]int{}
	for _, c := range calls {
		perPet[decodeEvent(t, c).Data.Pet.ID]++
	}
	for _, pet := range ids {
		if perPet[pet] != 1 {
			t.Errorf("pet %d: got %d requests; want 1", pet, perPet[pet])
		}
	}
	var rows int64
	if err := apis[0].db.Raw("SELECT COUNT(*) FROM webhook_deliveries WHERE endpoint_id = ?", id).Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	if rows != int64(len(ids)) || len(calls) != len(ids) {
		t.Errorf("got %d deliveries and %d requests for %d pets; want one each", rows, len(calls), len(ids))
	}
}

// TestWebhookLatePets checks the outbox, which holds the pets whose write was late: a pet that
// a settled page passed (here its endpoint's queued_id moved past it in the pet's own
// transaction) is queued from its row, with the row's time; a row whose pet was delivered
// already sends nothing more; a row above the endpoint's queued_id waits for the page that
// queues its pet. Each pet reaches the receiver once, and the outbox ends empty.
func TestWebhookLatePets(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		api := newHookAPI(t, db, hookConfig(time.Second))
		rcv := newReceiver(t, nil)
		id, _ := api.createHook(t, rcv.URL+"/hooks")
		delivered := postDirect(t, api, "Delivered")
		rcv.waitFor(t, 10*time.Second, "the first pet delivered", func(c []hookCall) bool { return len(c) == 1 })

		at := time.Now().UTC().Add(-time.Minute).Truncate(time.Millisecond)
		var skipped, waiting int64
		err := store.Transact(context.Background(), db.DB, func(tx *gorm.DB) error {
			if err := tx.Exec("INSERT INTO pets (name, category_id) VALUES ('Skipped', 1)").Error; err != nil {
				return err
			}
			if err := tx.Raw("SELECT MAX(id) FROM pets").Scan(&skipped).Error; err != nil {
				return err
			}
			if err := tx.Exec("UPDATE webhook_endpoints SET queued_id = ? WHERE id = ?", skipped, id).Error; err != nil {
				return err
			}
			return tx.Exec("INSERT INTO webhook_outbox (pet_id, created_at) VALUES (?, ?), (?, ?)", skipped, at, delivered, at).Error
		})
		if err != nil {
			t.Fatal(err)
		}
		err = store.Transact(context.Background(), db.DB, func(tx *gorm.DB) error {
			if err := tx.Exec("INSERT INTO pets (name, category_id) VALUES ('Waiting', 1)").Error; err != nil {
				return err
			}
			if err := tx.Raw("SELECT MAX(id) FROM pets").Scan(&waiting).Error; err != nil {
				return err
			}
			return tx.Exec("INSERT INTO webhook_outbox (pet_id, created_at) VALUES (?, ?)", waiting, at).Error
		})
		if err != nil {
			t.Fatal(err)
		}
		rcv.waitFor(t, 10*time.Second, "the skipped and the waiting pets delivered", func(c []hookCall) bool { return len(c) >= 3 })
		time.Sleep(2500 * time.Millisecond) // past two polls: a second delivery would have come
		perPet, stamps := map[int64]int{}, map[int64]string{}
		for _, c := range rcv.snapshot() {
			ev := decodeEvent(t, c)
			perPet[ev.Data.Pet.ID]++
			stamps[ev.Data.Pet.ID] = ev.Timestamp
		}
		want := map[int64]int{delivered: 1, skipped: 1, waiting: 1}
		if !maps.Equal(perPet, want) {
			t.Errorf("requests per pet: got %v; want %v", perPet, want)
		}
		if got, _ := time.Parse(time.RFC3339Nano, stamps[skipped]); !got.Equal(at) {
			t.Errorf("the skipped pet's timestamp: got %s; want its row's %s", stamps[skipped], at.Format(time.RFC3339Nano))
		}
		if got := outboxRows(t, db); got != 0 {
			t.Errorf("outbox: got %d rows; want 0", got)
		}
	})
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

// TestWebhookOldestUndelivered checks the age the PetstoreWebhooksBehind alert watches: while
// a receiver fails, the oldest pet not yet delivered ages on /metrics; once it is delivered,
// the age is 0 again.
func TestWebhookOldestUndelivered(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		api := newHookAPI(t, db, hookConfig(time.Second, time.Second, time.Second, time.Second, time.Second, time.Second, time.Second, time.Second))
		rcv := newReceiver(t, func(n int) int {
			if n <= 7 {
				return http.StatusServiceUnavailable
			}
			return http.StatusNoContent
		})
		api.createHook(t, rcv.URL+"/hooks")
		postPetNamed(t, api, "Late")
		age := func() float64 {
			m := regexp.MustCompile(`(?m)^petstore_webhook_oldest_undelivered_seconds (\S+)$`).FindStringSubmatch(api.mustGet(t, "/metrics").body)
			if m == nil {
				t.Fatal("/metrics has no petstore_webhook_oldest_undelivered_seconds")
			}
			v, _ := strconv.ParseFloat(m[1], 64)
			return v
		}
		within(t, 12*time.Second, "the undelivered pet aged a second or more", func() bool { return age() >= 1 })
		rcv.waitFor(t, 15*time.Second, "the pet delivered at last", func(c []hookCall) bool { return len(c) == 8 })
		within(t, 12*time.Second, "the age back to 0", func() bool { return age() == 0 })
	})
}
