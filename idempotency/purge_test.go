package idempotency

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"petstore/internal/dblock"
	"petstore/store"
	"petstore/testkit/dbtest"
)

func TestPurge(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, func(c *Config) { c.PurgeBatch = 2 })
		for i := range 5 {
			wantStatus(t, f.send(t, call{key: fmt.Sprint("old", i), body: rex}), http.StatusCreated)
		}
		f.claimElsewhere(t, "abandoned", rex) // in flight, its instance long gone
		f.clock.Advance(12 * time.Hour)
		wantStatus(t, f.send(t, call{key: "young", body: rex}), http.StatusCreated)

		for _, tt := range []struct {
			name    string
			advance time.Duration
			deleted int64
			left    int64
		}{
			{"nothing expired", 12*time.Hour - time.Second, 0, 7},
			{"the old ones", time.Second, 6, 1},
			{"again", 0, 0, 1},
			{"the young one", 12 * time.Hour, 1, 0},
		} {
			t.Run(tt.name, func(t *testing.T) {
				f.clock.Advance(tt.advance)
				n, err := f.s.Purge(context.Background())
				if err != nil || n != tt.deleted {
					t.Errorf("Purge: got %d, %v; want %d, nil", n, err, tt.deleted)
				}
				if got := f.count(t, "idempotency_keys"); got != tt.left {
					t.Errorf("records left: got %d; want %d", got, tt.left)
				}
			})
		}
	})
}

func TestRunPurger(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db, nil)
		wantStatus(t, f.send(t, call{key: "k", body: rex}), http.StatusCreated)
		f.clock.Advance(24 * time.Hour)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); f.s.RunPurger(ctx, 10*time.Millisecond) }()
		deadline := time.Now().Add(5 * time.Second)
		for f.count(t, "idempotency_keys") != 0 {
			if time.Now().After(deadline) {
				t.Fatal("RunPurger did not purge the expired record within 5s")
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("RunPurger did not return after its context ended")
		}
	})
}

// TestPurgeOneInstanceAtATime checks that on MySQL a purge round leaves the work to an
// instance that holds the purge lock, at once, and purges once the lock is free.
func TestPurgeOneInstanceAtATime(t *testing.T) {
	db := dbtest.New(t, "mysql")
	f := newFixture(t, db, nil)
	wantStatus(t, f.send(t, call{key: "k", body: rex}), http.StatusCreated)
	f.clock.Advance(24 * time.Hour)
	ctx := context.Background()
	other, err := dblock.Acquire(ctx, db.SQL(), purgeLock, 0) // another instance purging
	if err != nil || other == nil {
		t.Fatalf("Acquire: got %v, %v; want the lock", other, err)
	}
	if n, skipped, err := f.s.purgeAlone(ctx); n != 0 || !skipped || err != nil {
		t.Errorf("purge while another instance purges: got %d, skipped %v, %v; want 0, true, nil", n, skipped, err)
	}
	if got := f.count(t, "idempotency_keys"); got != 1 {
		t.Errorf("records left: got %d; want 1", got)
	}
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n, skipped, err := f.s.purgeAlone(ctx); n != 1 || skipped || err != nil {
		t.Errorf("purge once the lock is free: got %d, skipped %v, %v; want 1, false, nil", n, skipped, err)
	}
	if n, skipped, err := f.s.purgeAlone(ctx); n != 0 || skipped || err != nil { // released again
		t.Errorf("next purge: got %d, skipped %v, %v; want 0, false, nil", n, skipped, err)
	}
}
