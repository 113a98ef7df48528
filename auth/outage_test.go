package auth

import (
	"context"
	"testing"
	"time"

	"petstore/apierr"
	"petstore/testkit/dbtest"
)

// TestStaleIfError closes the database: a key found valid keeps its principal, and a key found
// unknown its 401, for StaleIfError past their lookups' expiry; after that, and for a key
// never looked up, the key is unchecked (503). After a failed read the key table is left alone
// for downFor, whatever keys are sent.
func TestStaleIfError(t *testing.T) {
	db := dbtest.New(t, "sqlite")
	ctx := context.Background()
	reads := countKeyReads(t, db.DB)
	valid, rec, err := CreateKey(ctx, db.DB, TestPrefix, KeySpec{Plan: "pro"})
	if err != nil {
		t.Fatal(err)
	}
	unknown := NewKey(TestPrefix)
	now := time.Unix(1_800_000_000, 0)
	a := NewAuthenticator(db.DB, nil, TestPrefix, 10*time.Second, 0)
	a.now = func() time.Time { return now }
	if p, err := a.Authenticate(ctx, "Bearer "+valid); err != nil || p.KeyID != rec.ID {
		t.Fatalf("Authenticate before the outage: got %+v, %v", p, err)
	}
	if _, err := a.Authenticate(ctx, "Bearer "+unknown); apierr.From(err).Code != apierr.Unauthorized {
		t.Fatalf("an unknown key before the outage: got %v; want unauthorized", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	now = now.Add(time.Minute) // both lookups expired
	before := reads.Load()
	if p, err := a.Authenticate(ctx, "Bearer "+valid); err != nil || p.KeyID != rec.ID {
		t.Errorf("the valid key during the outage: got %+v, %v; want its principal", p, err)
	}
	if _, err := a.Authenticate(ctx, "Bearer "+unknown); apierr.From(err).Code != apierr.Unauthorized {
		t.Errorf("the unknown key during the outage: got %v; want unauthorized", err)
	}
	for range 100 {
		if _, err := a.Authenticate(ctx, "Bearer "+NewKey(TestPrefix)); apierr.From(err).Code != apierr.Unavailable {
			t.Fatalf("a key never looked up during the outage: got %v; want unavailable", err)
		}
	}
	if got := reads.Load() - before; got != 1 {
		t.Errorf("key-table reads within %v of a failure: got %d; want 1", downFor, got)
	}

	now = now.Add(StaleIfError) // more than StaleIfError past expiry
	for _, key := range []string{valid, unknown} {
		if _, err := a.Authenticate(ctx, "Bearer "+key); apierr.From(err).Code != apierr.Unavailable {
			t.Errorf("a key whose lookup expired %v ago: got %v; want unavailable", StaleIfError+time.Minute-10*time.Second, err)
		}
	}
}
