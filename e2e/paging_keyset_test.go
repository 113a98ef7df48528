package e2e

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"petstore/apierr"
	"petstore/app"
	"petstore/migrations"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// TestPageWaitsForInFlightInsert checks on MySQL, step by step, what
// TestPagingUnderConcurrentWriters checks in bulk: a page whose range holds an uncommitted
// pet waits for its commit and lists it; a page stuck behind a transaction that does not end
// answers 503 unavailable after the statement timeout; a page that ends short of the
// uncommitted pet, or whose last pet comes before it, does not wait.
func TestPageWaitsForInFlightInsert(t *testing.T) {
	t.Parallel()
	db := dbtest.New(t, migrations.MySQL)
	seeder := newTestAPI(t, db) // the default timeout: a loaded machine must not fail the seeding
	cfg := app.DefaultConfig()
	cfg.DBTimeout = time.Second
	api := newTestAPIConfig(t, db, cfg)
	seedPets(t, seeder, 1) // pet 1
	held := beginInsert(t, db)
	seedPets(t, seeder, 1) // pet 3, committed while pet 2 is not
	page := make(chan response, 1)
	go func() { page <- api.do(t, get("/v1/pets?limit=2")) }()
	waitForLockWait(t, db, page)
	if err := held.Commit(); err != nil {
		t.Fatal(err)
	}
	resp := <-page
	if ids := petIDs(t, resp); fmt.Sprint(ids) != "[1 2]" {
		t.Fatalf("first page while pet 2 was uncommitted: got %v; want [1 2]", ids)
	}
	next := nextLink.FindStringSubmatch(resp.header.Get("Link"))
	if next == nil {
		t.Fatalf("first page: no next link in %q", resp.header.Get("Link"))
	}

	stuck := beginInsert(t, db) // pet 4, never committed
	defer func() { _ = stuck.Rollback() }()
	if ids := petIDs(t, api.do(t, get(next[1]))); fmt.Sprint(ids) != "[3]" {
		t.Errorf("second page, whose last pet comes before the uncommitted one: got %v; want [3] at once", ids)
	}
	seedPets(t, seeder, 1) // pet 5
	if ids := petIDs(t, api.do(t, get("/v1/pets?limit=1"))); fmt.Sprint(ids) != "[1]" {
		t.Errorf("a page short of the uncommitted pet: got %v; want [1]", ids)
	}
	checkError(t, api.do(t, get(next[1])), http.StatusServiceUnavailable, apierr.Unavailable, "retry")
	if err := stuck.Rollback(); err != nil {
		t.Fatal(err)
	}
	if ids := petIDs(t, api.do(t, get(next[1]))); fmt.Sprint(ids) != "[3 5]" {
		t.Errorf("second page once pet 4 rolled back: got %v; want [3 5]", ids)
	}
}

// TestPageWaitsForMissingID: a page does not pass an id whose row is not in the table yet. InnoDB
// hands out an id before its row enters the table, and the service inserts with a plain INSERT, so
// pet 3 can commit while pet 2, whose insert took its id first, is not there to be waited for.
// Explicit ids play that moment out: a page that meets the hole at 2 (unfiltered, or of one status)
// does not answer past it until pet 2 arrives, and then lists it; a hole that never fills (an
// insert rolled back) is passed after store.SettleDelay.
func TestPageWaitsForMissingID(t *testing.T) {
	t.Parallel()
	db := dbtest.New(t, migrations.MySQL)
	api := newTestAPI(t, db)
	seedPets(t, api, 1) // pet 1, available
	insertWithID(t, db, 3, "sold")
	pages := make(chan response, 2)
	go func() { pages <- api.do(t, get("/v1/pets?limit=2")) }()
	go func() { pages <- api.do(t, get("/v1/pets?status=sold&limit=1")) }()
	time.Sleep(200 * time.Millisecond)
	if len(pages) > 0 {
		t.Fatalf("a page answered while pet 2 was missing and pet 3 committed: %+v", <-pages)
	}
	insertWithID(t, db, 2, "sold")
	got := map[string]bool{}
	for range 2 {
		got[fmt.Sprint(petIDs(t, <-pages))] = true
	}
	if !got["[1 2]"] || !got["[2]"] {
		t.Fatalf("pages once pet 2 arrived: got %v; want [1 2] (every status) and [2] (sold)", got)
	}

	held := beginInsert(t, db) // pet 4
	if err := held.Rollback(); err != nil {
		t.Fatal(err)
	}
	seedPets(t, api, 1) // pet 5
	start := time.Now()
	if ids := petIDs(t, api.do(t, get("/v1/pets?limit=5"))); fmt.Sprint(ids) != "[1 2 3 5]" {
		t.Errorf("past a hole that never fills: got %v; want [1 2 3 5]", ids)
	}
	if waited := time.Since(start); waited < store.SettleDelay/2 || waited > store.SettleDelay+4*time.Second {
		t.Errorf("a page past a hole that never fills answered after %v; want about %v", waited, store.SettleDelay)
	}
}

// insertWithID adds a pet with an id of the caller's choosing, committed.
func insertWithID(t *testing.T, db *store.DB, id int64, status string) {
	t.Helper()
	if err := db.Exec("INSERT INTO pets (id, name, category_id, status) VALUES (?, 'explicit', 1, ?)", id, status).Error; err != nil {
		t.Fatal(err)
	}
}

// beginInsert inserts a pet in a transaction it leaves open.
func beginInsert(t *testing.T, db *store.DB) *sql.Tx {
	t.Helper()
	tx, err := db.SQL().Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO pets (name, category_id, status) VALUES ('in flight', 1, 'sold')"); err != nil {
		t.Fatal(err)
	}
	return tx
}

// waitForLockWait returns once a page statement runs on db's server (it is waiting for a
// row lock: the pets table is tiny), or once page has an answer (the page did not wait: the
// caller's check then fails).
func waitForLockWait(t *testing.T, db *store.DB, page chan response) {
	t.Helper()
	for range 500 {
		if len(page) > 0 {
			return
		}
		var n int
		if err := db.SQL().QueryRow(`SELECT COUNT(*) FROM information_schema.PROCESSLIST
			WHERE ID <> CONNECTION_ID() AND DB = DATABASE() AND INFO LIKE '%FROM pets%LOCK IN SHARE MODE%'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the page neither waited for the uncommitted pet nor answered")
}

// petIDs returns the ids of a 200 list answer.
func petIDs(t *testing.T, resp response) []int64 {
	t.Helper()
	var pets []struct{ ID int64 }
	if err := json.Unmarshal([]byte(resp.body), &pets); err != nil || resp.status != http.StatusOK {
		t.Fatalf("list: got %d %s", resp.status, resp.body)
	}
	ids := make([]int64, len(pets))
	for i, p := range pets {
		ids[i] = p.ID
	}
	return ids
}

// TestStuckPageFreesItsServerThread: a page whose range holds a pet inserted by a transaction that
// does not end answers 503 after PETSTORE_DB_TIMEOUT (once the hole has been missing for
// store.SettleDelay), and its statement is gone from the server soon after, while the transaction
// is still open: it does not hold a server thread for innodb_lock_wait_timeout (50 s) after the
// client left.
func TestStuckPageFreesItsServerThread(t *testing.T) {
	t.Parallel()
	db := dbtest.New(t, migrations.MySQL)
	seeder := newTestAPI(t, db) // the default timeout: a loaded machine must not fail the seeding
	cfg := app.DefaultConfig()
	cfg.DBTimeout = 500 * time.Millisecond
	api := newTestAPIConfig(t, db, cfg)
	seedPets(t, seeder, 1)
	stuck := beginInsert(t, db)
	defer func() { _ = stuck.Rollback() }()
	seedPets(t, seeder, 1)
	checkError(t, api.do(t, get("/v1/pets")), http.StatusServiceUnavailable, apierr.Unavailable, "retry")
	for range 100 { // up to 2 s more
		var n int
		if err := db.SQL().QueryRow(`SELECT COUNT(*) FROM information_schema.PROCESSLIST
			WHERE ID <> CONNECTION_ID() AND DB = DATABASE() AND INFO LIKE '%FROM pets%LOCK IN SHARE MODE%'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Error("the page's statement still runs on the server 2 s after its 503; want it ended by its own timeout")
}
