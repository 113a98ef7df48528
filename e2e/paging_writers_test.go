package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"petstore/app"
	"petstore/auth"
	"petstore/migrations"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// TestPagingUnderConcurrentWriters: keyset paging skips no pet on MySQL, where AUTO_INCREMENT ids
// are assigned at insert, not at commit, so a page read while a lower id is still uncommitted could
// hand out a cursor past it. Many writers insert (plain POSTs, POSTs with an Idempotency-Key, whose
// transaction is longer, and transactions held open on purpose, some rolled back) while readers
// walk the listing from the start over and over, by REST next links and by GraphQL cursors, with
// and without a status filter. Every walk saw each pet committed by the end whose id is at most its
// last id (and whose status matches), exactly once, in id order, and nothing that was rolled back.
func TestPagingUnderConcurrentWriters(t *testing.T) {
	t.Parallel()
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

var statuses = []string{"available", "pending", "sold"}

func newPagingRace(t *testing.T, db *store.DB) *pagingRace {
	// The 23 writers and readers queue for the database (SQLite's one connection): on a busy
	// machine one may wait past the default statement timeout and get 503, of which the ledger
	// could not tell whether it stored the pet. The wait is not what this test checks.
	cfg := app.DefaultConfig()
	cfg.DBTimeout = 30 * time.Second
	api := newTestAPIConfig(t, db, cfg)
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
