package idempotency

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"petstore/apierr"
	"petstore/migrations"
	"petstore/store"
	"petstore/testkit/dbtest"
)

func TestInFlightElsewhere(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, nil)
		f.claimElsewhere(t, "k", rex)
		rec := f.send(t, call{key: "k", body: rex})
		wantError(t, rec, 409, apierr.IdempotencyKeyInUse, HeaderKey)
		if got := rec.Header().Get("Retry-After"); got != "1" {
			t.Errorf("Retry-After: got %q; want 1", got)
		}
		// The fingerprint is checked first: another body is refused for good.
		wantError(t, f.send(t, call{key: "k", body: `{"name":"Tom","categoryId":1}`}), 422, apierr.IdempotencyKeyReused, HeaderKey)
		if got := f.hits.Load(); got != 0 {
			t.Errorf("handler runs: got %d; want 0", got)
		}
	})
}

// TestInFlightConcurrent sends a repeat while the first request is in its handler. MySQL
// answers 409 at once. SQLite's one connection is held by the first request's transaction, so
// the repeat waits for it and then gets the replay: no deadlock either way.
func TestInFlightConcurrent(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, nil)
		started, release := f.blockFirst()
		firstc := make(chan *httptest.ResponseRecorder)
		go func() { firstc <- f.send(t, call{key: "k", body: rex}) }()
		<-started
		repeatc := make(chan *httptest.ResponseRecorder)
		go func() { repeatc <- f.send(t, call{key: "k", body: rex}) }()
		var repeat *httptest.ResponseRecorder
		if db.Dialect == migrations.MySQL {
			repeat = <-repeatc
			close(release)
		} else {
			time.Sleep(100 * time.Millisecond) // let the repeat wait for the connection
			close(release)
			repeat = <-repeatc
		}
		first := <-firstc
		wantStatus(t, first, http.StatusCreated)
		if db.Dialect == migrations.MySQL {
			wantError(t, repeat, 409, apierr.IdempotencyKeyInUse, HeaderKey)
		} else {
			wantReplay(t, repeat, first)
		}
		if got := f.count(t, "pets"); got != 1 {
			t.Errorf("pets: got %d; want 1", got)
		}
	})
}

func TestLeaseTakeOver(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, nil)
		f.claimElsewhere(t, "k", rex) // its instance dies
		f.clock.Advance(f.s.cfg.Lease - time.Second)
		wantStatus(t, f.send(t, call{key: "k", body: rex}), http.StatusConflict)
		f.clock.Advance(time.Second)
		first := f.send(t, call{key: "k", body: rex})
		wantStatus(t, first, http.StatusCreated)
		wantReplay(t, f.send(t, call{key: "k", body: rex}), first)
		if rec := f.find(t, "k"); rec.State != stateDone {
			t.Errorf("state: got %q; want %q", rec.State, stateDone)
		}
		if got := f.hits.Load(); got != 1 {
			t.Errorf("handler runs: got %d; want 1", got)
		}
	})
}

// TestLostLease runs a request past its lease: another takes the key over and completes, and
// the first one's pet is rolled back, so that one pet is stored. MySQL only: on SQLite the
// first request's transaction holds the one connection, so no other request can take over.
func TestLostLease(t *testing.T) {
	f := newFixture(t, dbtest.New(t, migrations.MySQL), nil)
	started, release := f.blockFirst()
	firstc := make(chan *httptest.ResponseRecorder)
	go func() { firstc <- f.send(t, call{key: "k", body: rex}) }()
	<-started
	f.clock.Advance(f.s.cfg.Lease)
	second := f.send(t, call{key: "k", body: rex})
	wantStatus(t, second, http.StatusCreated)
	close(release)
	wantError(t, <-firstc, 409, apierr.IdempotencyKeyInUse, HeaderKey)
	wantReplay(t, f.send(t, call{key: "k", body: rex}), second)
	if got := f.count(t, "pets"); got != 1 {
		t.Errorf("pets: got %d; want 1", got)
	}
}

// TestConcurrentRetries sends one request 50 times at once with one key: exactly one pet.
func TestConcurrentRetries(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, nil)
		const n = 50
		codes := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { codes[i] = f.send(t, call{key: "k", body: rex}).Code })
		}
		wg.Wait()
		for i, code := range codes {
			if code != http.StatusCreated && code != http.StatusConflict {
				t.Errorf("request %d: got %d; want 201 or 409", i, code)
			}
		}
		if got := f.count(t, "pets"); got != 1 {
			t.Errorf("pets: got %d; want 1", got)
		}
		if got := f.hits.Load(); got != 1 {
			t.Errorf("handler runs: got %d; want 1", got)
		}
	})
}
