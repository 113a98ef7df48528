package idempotency

import (
	"context"
	"errors"
	"testing"
	"time"

	"gorm.io/gorm"

	"petstore/testkit/dbtest"
)

// TestReleaseRetriedAfterOutage claims a key, cuts the database while the claim is being
// released, and checks that the release is retried once the database answers again, so that
// the key is free long before its lease would run out.
func TestReleaseRetriedAfterOutage(t *testing.T) {
	db, proxy := dbtest.Proxied(t)
	cfg := DefaultConfig()
	cfg.QueryTimeout = time.Second
	s, err := New(db.DB, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sc := scope{keyID: 1, key: "retry-me", hash: "h"}
	cl, rec, err := s.acquire(ctx, sc)
	if err != nil || rec != nil {
		t.Fatalf("acquire: got %v, %v", rec, err)
	}

	proxy.Cut()
	s.release(ctx, cl) // fails: the database is unreachable
	proxy.Restore()

	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := s.find(ctx, sc)
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return // released well within the 2-minute lease
		}
		if time.Now().After(deadline) {
			t.Fatalf("the claim is still held 10 s after the database came back (last lookup: %v)", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
