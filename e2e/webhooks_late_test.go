package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"petstore/models"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// slowWrites makes the INSERT of every pet named "Slow:S" take S seconds more, its row in the
// table and uncommitted meanwhile (a trigger sleeps after the row is in): a write held up as by
// a slow disk or a lock, through the public surface.
func slowWrites(t *testing.T, db *store.DB) {
	t.Helper()
	err := db.Exec("CREATE TRIGGER pets_slow AFTER INSERT ON pets FOR EACH ROW" +
		" SET @slept = IF(NEW.name LIKE 'Slow:%', SLEEP(CAST(SUBSTRING(NEW.name, 6) AS DECIMAL(6,3))), 0)").Error
	if err != nil {
		t.Fatal(err)
	}
}

// waitWriting waits until n slow writes (slowWrites) of db's database are under way.
func waitWriting(t *testing.T, db *store.DB, n int64) {
	t.Helper()
	within(t, 5*time.Second, strconv.FormatInt(n, 10)+" slow writes under way", func() bool {
		var got int64
		err := db.Raw("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE = 'User sleep' AND DB = DATABASE()").Scan(&got).Error
		return err == nil && got >= n
	})
}

// TestWebhookReplayEnablesWhileWriting replays to enable a disabled endpoint while a pet's
// write is under way (2 s, its row in the table uncommitted), below a pet that committed: the
// replay reads a settled page, so it waits for the slow pet and queues both, and its cursor
// passes neither; the endpoint then gets the next pet. Each pet after the cursor is queued
// once and reaches the receiver.
func TestWebhookReplayEnablesWhileWriting(t *testing.T) {
	db := dbtest.New(t, "mysql")
	api := newHookAPI(t, db, hookConfig(50*time.Millisecond, 50*time.Millisecond))
	var failing atomic.Bool
	failing.Store(true)
	rcv := newReceiver(t, func(int) int {
		if failing.Load() {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	})
	id, _ := api.createHook(t, rcv.URL)
	lost := postDirect(t, api, "Lost")
	waitDeliveries(t, api, id, func(ds []delivery) bool { return len(ds) == 1 && ds[0].Status == "failed" })
	if list := api.do(t, get("/v1/webhooks")); !strings.Contains(list.body, `"disabled":true`) {
		t.Fatalf("list: got %s; want the endpoint disabled", list.body)
	}
	failing.Store(false)

	slowWrites(t, db)
	var (
		wg   sync.WaitGroup
		slow int64
	)
	wg.Go(func() { slow = postDirect(t, api, "Slow:2") })
	waitWriting(t, db, 1)
	fast := postDirect(t, api, "Fast")
	resp := api.do(t, post("/v1/webhooks/"+id+"/replay", `{"after":"`+models.EncodeCursor(lost)+`"}`))
	wg.Wait()
	var replayed struct {
		Queued int
		Cursor string
		More   bool
	}
	_ = json.Unmarshal([]byte(resp.body), &replayed)
	if resp.status != http.StatusAccepted || replayed.Queued != 2 || replayed.Cursor != models.EncodeCursor(fast) || replayed.More {
		t.Errorf("replay after %d while %d is written: got %d %s; want 202, 2 queued up to %d", lost, slow, resp.status, resp.body, fast)
	}
	next := postDirect(t, api, "Next")

	want := map[int64]bool{slow: true, fast: true, next: true}
	rcv.waitFor(t, 10*time.Second, "every pet after the cursor delivered", func(c []hookCall) bool {
		got := 0
		for _, call := range c {
			if want[decodeEvent(t, call).Data.Pet.ID] {
				got++
			}
		}
		return got >= len(want)
	})
	within(t, 5*time.Second, "the slow pet's outbox row taken", func() bool { return outboxRows(t, db) == 0 })
	perPet := map[string]int{}
	for _, d := range waitDeliveries(t, api, id, func([]delivery) bool { return true }) {
		perPet[d.Cursor]++
	}
	for pet := range want {
		if n := perPet[models.EncodeCursor(pet)]; n != 1 {
			t.Errorf("pet %d: %d deliveries queued; want 1", pet, n)
		}
	}
}

// TestWebhookSlowWrites writes two pets slowly (0.7 s and 1.5 s) while fast ones commit above
// them, on an instance that does not deliver: each slow write, late, has its outbox row by its
// answer, and an endpoint registered meanwhile gets the pets whose POST began after its 201.
// Then an instance that delivers starts on the database: every pet reaches each of its
// endpoints once, with one delivery and one webhook-id whether a page or the outbox queued it,
// and the outbox ends empty.
func TestWebhookSlowWrites(t *testing.T) {
	dsn := dbtest.DSN(t, "mysql")
	off := hookConfig(time.Second)
	off.Webhooks.Deliver = false
	api := hookInstance(t, dsn, off)
	slowWrites(t, api.db)
	first, second := newReceiver(t, nil), newReceiver(t, nil)
	firstID, _ := api.createHook(t, first.URL)

	var (
		wg    sync.WaitGroup
		slow1 int64
		slow2 int64
	)
	wg.Go(func() { slow1 = postDirect(t, api, "Slow:0.7") })
	wg.Go(func() { slow2 = postDirect(t, api, "Slow:1.5") })
	waitWriting(t, api.db, 2)
	before := postDirect(t, api, "Before")
	secondID, _ := api.createHook(t, second.URL)
	after := []int64{postDirect(t, api, "After1"), postDirect(t, api, "After2")}
	wg.Wait()
	var late []int64
	if err := api.db.Raw("SELECT pet_id FROM webhook_outbox").Scan(&late).Error; err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(late, slow1) || !slices.Contains(late, slow2) {
		t.Errorf("outbox: pets %v; want the slow writes %d and %d among them", late, slow1, slow2)
	}

	hookInstance(t, dsn, hookConfig(time.Second))
	for _, c := range []struct {
		rcv  *receiver
		id   string
		pets []int64
	}{{first, firstID, append([]int64{slow1, slow2, before}, after...)}, {second, secondID, after}} {
		c.rcv.waitFor(t, 15*time.Second, "every pet delivered", func(calls []hookCall) bool {
			got := map[int64]bool{}
			for _, call := range calls {
				got[decodeEvent(t, call).Data.Pet.ID] = true
			}
			return !slices.ContainsFunc(c.pets, func(p int64) bool { return !got[p] })
		})
		within(t, 5*time.Second, "the outbox taken", func() bool { return outboxRows(t, api.db) == 0 })
		perPet := map[string]int{}
		for _, d := range waitDeliveries(t, api, c.id, func([]delivery) bool { return true }) {
			perPet[d.Cursor]++
		}
		ids := map[int64]map[string]bool{}
		for _, call := range c.rcv.snapshot() {
			pet := decodeEvent(t, call).Data.Pet.ID
			if ids[pet] == nil {
				ids[pet] = map[string]bool{}
			}
			ids[pet][call.header.Get("webhook-id")] = true
		}
		for _, pet := range c.pets {
			if n := perPet[models.EncodeCursor(pet)]; n != 1 || len(ids[pet]) != 1 {
				t.Errorf("endpoint %s, pet %d: %d deliveries, %d webhook-ids; want 1 and 1", c.id, pet, n, len(ids[pet]))
			}
		}
	}
}

// TestWebhookReplayOfDeletedEndpoint deletes an endpoint while its replay waits for a slow
// write (its settled page's locking read waiting for the pet's row): the replay then answers
// 404, and the endpoint's deliveries are gone, none queued by the replay left behind for no
// endpoint. The instance does not deliver, so that the replay's is the only such read.
func TestWebhookReplayOfDeletedEndpoint(t *testing.T) {
	db := dbtest.New(t, "mysql")
	cfg := hookConfig(time.Second)
	cfg.Webhooks.Deliver = false
	api := newHookAPI(t, db, cfg)
	id, _ := api.createHook(t, "http://127.0.0.1:9/hooks")
	postPetNamed(t, api, "First")
	slowWrites(t, db)
	var (
		wg     sync.WaitGroup
		replay *httptest.ResponseRecorder
	)
	wg.Go(func() { postDirect(t, api, "Slow:2") })
	waitWriting(t, db, 1)
	postPetNamed(t, api, "Fast")
	wg.Go(func() {
		r := httptest.NewRequest(http.MethodPost, "/v1/webhooks/"+id+"/replay", strings.NewReader(`{"after":"cGV0OnYxOjA"}`))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer "+api.key)
		replay = httptest.NewRecorder()
		api.h.ServeHTTP(replay, r)
	})
	within(t, 5*time.Second, "the replay waiting for the slow pet", func() bool {
		var n int64
		err := db.Raw("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND ID <> CONNECTION_ID() AND INFO LIKE '%LOCK IN SHARE MODE%'").Scan(&n).Error
		return err == nil && n > 0
	})
	if resp := api.do(t, request{method: http.MethodDelete, path: "/v1/webhooks/" + id}); resp.status != http.StatusNoContent {
		t.Fatalf("delete: got %d %s", resp.status, resp.body)
	}
	wg.Wait()
	if replay.Code != http.StatusNotFound {
		t.Errorf("replay of an endpoint deleted meanwhile: got %d %s; want 404", replay.Code, replay.Body)
	}
	var left int64
	if err := db.Raw("SELECT COUNT(*) FROM webhook_deliveries WHERE endpoint_id = ?", id).Scan(&left).Error; err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("deliveries of the deleted endpoint: got %d; want none", left)
	}
}

// TestWebhookLatePetOfDeletedEndpoint deletes an endpoint while the outbox row of a late pet
// is being turned into its delivery (an INSERT held 2 s by a trigger; the pet passed by a page
// as in TestWebhookLatePets): the endpoint's deliveries are gone once both are done, none
// queued for no endpoint.
func TestWebhookLatePetOfDeletedEndpoint(t *testing.T) {
	db := dbtest.New(t, "mysql")
	api := newHookAPI(t, db, hookConfig(time.Second))
	id, _ := api.createHook(t, "http://127.0.0.1:9/hooks")
	err := db.Exec("CREATE TRIGGER deliveries_slow BEFORE INSERT ON webhook_deliveries FOR EACH ROW" +
		" SET @slept = IF((SELECT name FROM pets WHERE id = NEW.pet_id) = 'Late', SLEEP(2), 0)").Error
	if err != nil {
		t.Fatal(err)
	}
	err = store.Transact(context.Background(), db.DB, func(tx *gorm.DB) error {
		if err := tx.Exec("INSERT INTO pets (name, category_id) VALUES ('Late', 1)").Error; err != nil {
			return err
		}
		return tx.Exec("UPDATE webhook_endpoints SET queued_id = (SELECT MAX(id) FROM pets) WHERE id = ?", id).Error
	})
	if err == nil {
		err = db.Exec("INSERT INTO webhook_outbox (pet_id, created_at) SELECT MAX(id), NOW(6) FROM pets").Error
	}
	if err != nil {
		t.Fatal(err)
	}
	waitWriting(t, db, 1)
	if resp := api.do(t, request{method: http.MethodDelete, path: "/v1/webhooks/" + id}); resp.status != http.StatusNoContent {
		t.Fatalf("delete: got %d %s", resp.status, resp.body)
	}
	within(t, 10*time.Second, "the outbox taken", func() bool { return outboxRows(t, db) == 0 })
	var left int64
	if err := db.Raw("SELECT COUNT(*) FROM webhook_deliveries WHERE endpoint_id = ?", id).Scan(&left).Error; err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("deliveries of the deleted endpoint: got %d; want none", left)
	}
}
