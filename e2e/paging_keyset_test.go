package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"petstore/apierr"
	"petstore/auth"
	"petstore/config"
	"petstore/internal/testkit/dbtest"
	"petstore/migrations"
	"petstore/store"
)

// TestPagingUnderConcurrentWriters is the attack of "keyset paging skips rows on MySQL":
// AUTO_INCREMENT ids are assigned at insert, not at commit, so a page read while a lower id
// is still uncommitted hands out a cursor past that id, and the pet is never listed when it
// commits. Many writers insert (plain POSTs, POSTs with an Idempotency-Key, whose transaction
// is longer, and transactions held open on purpose, some rolled back) while readers walk the
// listing from the start over and over, by REST next links and by GraphQL cursors, with and
// without a status filter. Afterwards, for every walk: each pet committed by the end whose
// id is at most the walk's last id (and whose status matches) was seen, exactly once, in id
// order, and nothing that was rolled back was ever seen.
func TestPagingUnderConcurrentWriters(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		r := newPagingRace(t, db)
		r.run()
		skipped := r.check()
		t.Logf("%s: %d pets committed (%d rolled back), %d walks, %d pages read, skipped %v",
			db.Dialect, len(r.committed), len(r.rolledBack), len(r.walks), r.pages.Load(), skipped)
		if len(skipped) > 0 {
			t.Errorf("committed pets skipped by walks that passed their ids, by writer: %v; want none", skipped)
		}
	})
}

// pagingRace is one run of TestPagingUnderConcurrentWriters: the service, the writers'
// ledger and the readers' walks.
type pagingRace struct {
	t        *testing.T
	db       *store.DB
	h        http.Handler
	key      string
	hold     time.Duration // longest a held transaction stays open
	perWrite int           // pets per writer
	// beforeLast, when set, runs once the writers and readers are done, before the last walks.
	beforeLast func()

	mu         sync.Mutex
	committed  map[int64]racePet // every pet whose commit returned, by id
	rolledBack map[int64]bool
	walks      []walk
	pages      atomic.Int64
	lastID     int64 // the last pet committed
}

// racePet is a pet a writer committed: its status, and how it was written.
type racePet struct{ status, via string }

// walk is what one reader saw walking the listing from the start to its last page.
type walk struct {
	kind   string // e.g. "rest status=available"
	status string // "" for every status
	seen   []int64
}

var statuses = []string{"available", "pending", "sold"}

func newPagingRace(t *testing.T, db *store.DB) *pagingRace {
	api := newTestAPI(t, db)
	r := &pagingRace{
		t: t, db: db, h: api.h, hold: 20 * time.Millisecond, perWrite: 50,
		key:        api.createKey(t, auth.KeySpec{Plan: "enterprise", PerMinute: 1 << 40, PerDay: 1 << 40}),
		committed:  map[int64]racePet{},
		rolledBack: map[int64]bool{},
	}
	if db.Dialect == migrations.MySQL {
		db.SQL().SetMaxOpenConns(48) // room for every writer and reader at once
	} else {
		r.hold = 2 * time.Millisecond // a held transaction holds SQLite's one connection
	}
	return r
}

// run starts 8 plain writers, 8 idempotent ones, 4 that hold transactions open, and 3
// readers that walk until the writers are done, then walks each kind once more.
func (r *pagingRace) run() {
	var writers, readers sync.WaitGroup
	done := make(chan struct{})
	for i := range 20 {
		writers.Go(func() {
			for range r.perWrite {
				switch {
				case i < 8:
					r.post("")
				case i < 16:
					r.post(fmt.Sprintf("race-%d-%d", i, rand.Int64()))
				default:
					r.heldInsert()
				}
			}
		})
	}
	kinds := []func() walk{
		func() walk { return r.walkREST("") }, func() walk { return r.walkREST("available") },
		func() walk { return r.walkGraphQL("") }, func() walk { return r.walkGraphQL("sold") },
	}
	for i := range 3 {
		readers.Go(func() {
			for n := i; ; n++ {
				select {
				case <-done:
					return
				default:
				}
				r.record(kinds[n%len(kinds)]())
			}
		})
	}
	writers.Wait()
	close(done)
	readers.Wait()
	if r.beforeLast != nil {
		r.beforeLast()
	}
	for _, k := range kinds {
		r.record(k())
	}
}

// check counts, over every walk, the committed pets of the walk's status whose id is at
// most the walk's last id and that the walk did not see, by how they were written; it fails
// t for a pet seen that was rolled back or has another status.
func (r *pagingRace) check() map[string]int {
	skipped := map[string]int{}
	for _, w := range r.walks {
		if len(w.seen) == 0 {
			continue
		}
		seen := make(map[int64]bool, len(w.seen))
		for _, id := range w.seen {
			seen[id] = true
			if p, ok := r.committed[id]; !ok || (w.status != "" && p.status != w.status) {
				r.t.Errorf("%s: saw pet %d (committed %v, status %q)", w.kind, id, ok, p.status)
			}
		}
		last := w.seen[len(w.seen)-1]
		for id, p := range r.committed {
			if id <= last && !seen[id] && (w.status == "" || p.status == w.status) {
				skipped[p.via]++
			}
		}
	}
	return skipped
}

func (r *pagingRace) record(w walk) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.walks = append(r.walks, w)
}

func (r *pagingRace) commit(id int64, p racePet) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.committed[id] = p
	r.lastID = id
}

// post creates a pet through POST /v1/pets, with an Idempotency-Key unless idemKey is "".
func (r *pagingRace) post(idemKey string) {
	status := statuses[rand.IntN(len(statuses))]
	hdr := http.Header{}
	if idemKey != "" {
		hdr.Set("Idempotency-Key", idemKey)
	}
	code, _, body := r.call(http.MethodPost, "/v1/pets", fmt.Sprintf(`{"name":"racer","categoryId":1,"status":%q}`, status), hdr)
	var pet struct{ ID int64 }
	if err := json.Unmarshal(body, &pet); code != http.StatusCreated || err != nil {
		r.t.Errorf("POST /v1/pets: got %d %s", code, body)
		return
	}
	via := "plain"
	if idemKey != "" {
		via = "idempotent"
	}
	r.commit(pet.ID, racePet{status, via})
}

// heldInsert inserts a pet as the service does (graph's createPetSQL) in a transaction that
// stays open up to r.hold before it commits, or, one time in eight, rolls back: the widest
// window a slow writer opens.
func (r *pagingRace) heldInsert() {
	ctx := context.Background()
	status := statuses[rand.IntN(len(statuses))]
	tx, err := r.db.SQL().BeginTx(ctx, nil)
	if err != nil {
		r.t.Errorf("begin: %v", err)
		return
	}
	res, err := tx.ExecContext(ctx, "INSERT INTO pets (name, category_id, status) VALUES ('held', 1, ?)", status)
	if err != nil {
		_ = tx.Rollback()
		r.t.Errorf("held insert: %v", err)
		return
	}
	id, _ := res.LastInsertId()
	time.Sleep(rand.N(r.hold))
	if rand.IntN(8) == 0 {
		_ = tx.Rollback()
		r.mu.Lock()
		r.rolledBack[id] = true
		r.mu.Unlock()
		return
	}
	if err := tx.Commit(); err != nil {
		r.t.Errorf("held commit: %v", err)
		return
	}
	r.commit(id, racePet{status, "held"})
}

// walkREST follows GET /v1/pets next links from the first page to the last.
func (r *pagingRace) walkREST(status string) walk {
	w := walk{kind: "rest status=" + status, status: status}
	path := "/v1/pets?limit=10"
	if status != "" {
		path += "&status=" + status
	}
	for path != "" {
		code, hdr, body := r.call(http.MethodGet, path, "", nil)
		var pets []struct{ ID int64 }
		if err := json.Unmarshal(body, &pets); code != http.StatusOK || err != nil {
			r.t.Errorf("GET %s: got %d %s", path, code, body)
			return walk{}
		}
		for _, p := range pets {
			if !w.add(r.t, p.ID) {
				return walk{}
			}
		}
		r.pages.Add(1)
		path = ""
		if m := nextLink.FindStringSubmatch(hdr.Get("Link")); m != nil {
			path = m[1]
		}
	}
	return w
}

// walkGraphQL follows petsConnection's endCursor from the first page to the last.
func (r *pagingRace) walkGraphQL(status string) walk {
	w := walk{kind: "graphql status=" + status, status: status}
	vars := map[string]any{"after": nil, "status": nil}
	if status != "" {
		vars["status"] = strings.ToUpper(status)
	}
	for {
		body, _ := json.Marshal(map[string]any{"variables": vars, "query": `query($after: String, $status: PetStatus) {
			petsConnection(first: 10, after: $after, status: $status) { edges { node { id } } pageInfo { hasNextPage endCursor } } }`})
		code, _, resp := r.call(http.MethodPost, "/v1/graphql", string(body), nil)
		var out struct {
			Data struct {
				PetsConnection struct {
					Edges    []struct{ Node struct{ ID string } }
					PageInfo struct {
						HasNextPage bool
						EndCursor   *string
					}
				}
			}
			Errors []any
		}
		if err := json.Unmarshal(resp, &out); code != http.StatusOK || err != nil || len(out.Errors) > 0 {
			r.t.Errorf("petsConnection: got %d %s", code, resp)
			return walk{}
		}
		c := out.Data.PetsConnection
		for _, e := range c.Edges {
			id, _ := strconv.ParseInt(e.Node.ID, 10, 64)
			if !w.add(r.t, id) {
				return walk{}
			}
		}
		r.pages.Add(1)
		if !c.PageInfo.HasNextPage {
			return w
		}
		vars["after"] = *c.PageInfo.EndCursor
	}
}

// add appends id to the walk, and fails t unless it follows the last id seen.
func (w *walk) add(t *testing.T, id int64) bool {
	if n := len(w.seen); n > 0 && id <= w.seen[n-1] {
		t.Errorf("%s: pet %d after pet %d: repeated or out of order", w.kind, id, w.seen[n-1])
		return false
	}
	w.seen = append(w.seen, id)
	return true
}

// call sends one request with r's key through the real router.
func (r *pagingRace) call(method, path, body string, hdr http.Header) (int, http.Header, []byte) {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+r.key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	rec := httptest.NewRecorder()
	r.h.ServeHTTP(rec, req)
	return rec.Code, rec.Header(), rec.Body.Bytes()
}

// TestPageWaitsForInFlightInsert checks on MySQL, step by step, what
// TestPagingUnderConcurrentWriters checks in bulk: a page whose range holds an uncommitted
// pet waits for its commit and lists it; a page stuck behind a transaction that does not end
// answers 503 unavailable after the statement timeout; a page that ends short of the
// uncommitted pet, or whose last pet comes before it, does not wait.
func TestPageWaitsForInFlightInsert(t *testing.T) {
	db := dbtest.New(t, migrations.MySQL)
	cfg := config.Default()
	cfg.DBTimeout = time.Second
	api := newTestAPIConfig(t, db, cfg)
	seedPets(t, api, 1) // pet 1
	held := beginInsert(t, db)
	seedPets(t, api, 1) // pet 3, committed while pet 2 is not
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
	seedPets(t, api, 1) // pet 5
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

// TestPageWaitsForMissingID is the attack of "a page passes an id whose row is not in the
// table yet": InnoDB hands out an id before its row enters the table, and the service inserts
// with a plain INSERT, so pet 3 can commit while pet 2, whose insert took its id first, is not
// there to be waited for. Explicit ids play that moment out: a page that meets the hole at 2
// (unfiltered, or of one status) does not answer past it until pet 2 arrives, and then lists
// it; a hole that never fills (an insert rolled back) is passed after store.SettleDelay.
func TestPageWaitsForMissingID(t *testing.T) {
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
			WHERE ID <> CONNECTION_ID() AND INFO LIKE '%FROM pets%LOCK IN SHARE MODE%'`).Scan(&n); err != nil {
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

// TestStuckPageFreesItsServerThread is the attack of "a page hangs a database thread longer
// than the timeout": a page whose range holds a pet inserted by a transaction that does not
// end answers 503 after PETSTORE_DB_TIMEOUT (once the hole has been missing for
// store.SettleDelay), and its statement is gone from the server soon after, while the
// transaction is still open, instead of waiting out innodb_lock_wait_timeout (50 s) on a
// server thread after the client left.
func TestStuckPageFreesItsServerThread(t *testing.T) {
	db := dbtest.New(t, migrations.MySQL)
	cfg := config.Default()
	cfg.DBTimeout = 500 * time.Millisecond
	api := newTestAPIConfig(t, db, cfg)
	seedPets(t, api, 1)
	stuck := beginInsert(t, db)
	defer func() { _ = stuck.Rollback() }()
	seedPets(t, api, 1)
	checkError(t, api.do(t, get("/v1/pets")), http.StatusServiceUnavailable, apierr.Unavailable, "retry")
	for range 100 { // up to 2 s more
		var n int
		if err := db.SQL().QueryRow(`SELECT COUNT(*) FROM information_schema.PROCESSLIST
			WHERE ID <> CONNECTION_ID() AND INFO LIKE '%FROM pets%LOCK IN SHARE MODE%'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Error("the page's statement still runs on the server 2 s after its 503; want it ended by its own timeout")
}
