package auth

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"petstore/apierr"
	"petstore/store"
	"petstore/testkit/dbtest"
)

func TestKeyFormat(t *testing.T) {
	for _, prefix := range []string{TestPrefix, LivePrefix} {
		key := NewKey(prefix)
		if len(key) != len(prefix)+38 || !WellFormed(key, prefix) {
			t.Fatalf("NewKey(%q) = %q: not well formed", prefix, key)
		}
		if other := NewKey(prefix); other == key {
			t.Errorf("two keys alike: %q", key)
		}
		for i := len(prefix); i < len(key); i++ {
			tampered := []byte(key)
			tampered[i] = map[bool]byte{true: 'b', false: 'a'}[key[i] == 'a']
			if WellFormed(string(tampered), prefix) {
				t.Errorf("key with character %d changed passes: %q", i, tampered)
			}
		}
		if h := Hint(key, prefix); !strings.HasPrefix(key, strings.TrimSuffix(h, "...")) || len(h) != len(prefix)+7 {
			t.Errorf("Hint(%q) = %q", key, h)
		}
	}
	for _, bad := range []string{"", TestPrefix, TestPrefix + strings.Repeat("A", 38), NewKey(TestPrefix) + "A", "petstore_test_" + strings.Repeat("!", 38)} {
		if WellFormed(bad, TestPrefix) {
			t.Errorf("WellFormed(%q) = true; want false", bad)
		}
	}
	if WellFormed(NewKey(LivePrefix), TestPrefix) {
		t.Error("a live key passes as a test key")
	}
	if got := Hash("k"); len(got) != 64 || got == Hash("l") {
		t.Errorf("Hash: got %q", got)
	}
}

// countKeyReads counts the queries db runs against the key table (lookups, and the reads of
// rows of the set of valid keys).
func countKeyReads(t *testing.T, db *gorm.DB) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	count := func(tx *gorm.DB) {
		if tx.Statement.Table == "api_keys" {
			n.Add(1)
		}
	}
	if err := db.Callback().Query().Before("gorm:query").Register("test:count_key_reads", count); err != nil {
		t.Fatal(err)
	}
	if err := db.Callback().Row().Before("gorm:row").Register("test:count_key_rows", count); err != nil {
		t.Fatal(err)
	}
	return &n
}

func TestAuthenticatorCachesAndRevocationBound(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		reads := countKeyReads(t, db.DB)
		key, rec, err := CreateKey(ctx, db.DB, TestPrefix, KeySpec{Plan: "enterprise", PerMinute: 7, PerDay: 70})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Unix(1_800_000_000, 0)
		a := NewAuthenticator(db.DB, nil, TestPrefix, 10*time.Second, 0)
		a.now = func() time.Time { return now }

		p, err := a.Authenticate(ctx, "Bearer "+key)
		if err != nil || p.KeyID != rec.ID || p.Plan != (Plan{Name: "enterprise", PerMinute: 7, PerDay: 70}) {
			t.Fatalf("Authenticate: got %+v, %v", p, err)
		}
		for range 5 {
			if _, err := a.Authenticate(ctx, "bearer "+key); err != nil {
				t.Fatal(err)
			}
		}
		if got := reads.Load(); got != 1 {
			t.Errorf("key-table reads for 6 requests: got %d; want 1", got)
		}

		if err := RevokeKey(ctx, db.DB, rec.ID); err != nil {
			t.Fatal(err)
		}
		now = now.Add(9 * time.Second)
		if _, err := a.Authenticate(ctx, "Bearer "+key); err != nil {
			t.Errorf("within the cache lifetime the cached answer holds: got %v", err)
		}
		now = now.Add(2 * time.Second)
		if _, err := a.Authenticate(ctx, "Bearer "+key); !errors.Is(err, errInvalidKey) {
			t.Errorf("after the cache lifetime a revoked key: got %v; want invalid key", err)
		}

		unknown := NewKey(TestPrefix)
		before := reads.Load()
		for range 3 {
			if _, err := a.Authenticate(ctx, "Bearer "+unknown); !errors.Is(err, errInvalidKey) {
				t.Errorf("unknown key: got %v", err)
			}
		}
		if _, err := a.Authenticate(ctx, "Bearer petstore_test_short"); !errors.Is(err, errInvalidKey) {
			t.Errorf("malformed key: got %v", err)
		}
		if got := reads.Load() - before; got != 1 {
			t.Errorf("reads for an unknown key thrice and a malformed one: got %d; want 1", got)
		}
	})
}

func TestAuthenticatorDatabaseDown(t *testing.T) {
	db := dbtest.New(t, "sqlite")
	key, _, err := CreateKey(context.Background(), db.DB, TestPrefix, KeySpec{Plan: "free"})
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	_, err = NewAuthenticator(db.DB, nil, TestPrefix, 0, 0).Authenticate(context.Background(), "Bearer "+key)
	if apierr.From(err).Code != apierr.Unavailable {
		t.Errorf("database down: got %v; want unavailable", err)
	}
}

func TestCreateKeyRules(t *testing.T) {
	db := dbtest.New(t, "sqlite")
	for _, spec := range []KeySpec{
		{Plan: "gold"}, {Plan: ""}, {Plan: "enterprise"}, {Plan: "enterprise", PerMinute: 1},
		{Plan: "enterprise", PerMinute: -1, PerDay: 5}, {Plan: "pro", PerDay: 5},
	} {
		if _, _, err := CreateKey(context.Background(), db.DB, TestPrefix, spec); err == nil {
			t.Errorf("CreateKey(%+v): got success; want an error", spec)
		}
	}
}

// TestGuessFloodKeepsValidKeysCached is the attack of "a flood of unique guesses evicts valid
// keys": once the cache of unknown keys is full of live guesses, it is emptied, but a key
// found valid stays cached (no read while its lookup is fresh) and known valid (read again
// without the address check when it expires, so that it is never refused for its address's
// anonymous traffic).
func TestGuessFloodKeepsValidKeysCached(t *testing.T) {
	db := dbtest.New(t, "sqlite")
	ctx := context.Background()
	reads := countKeyReads(t, db.DB)
	key, _, err := CreateKey(ctx, db.DB, TestPrefix, KeySpec{Plan: "free"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	a := NewAuthenticator(db.DB, nil, TestPrefix, 10*time.Second, 0)
	a.now = func() time.Time { return now }
	a.maxUnknown = 10
	if _, err := a.Authenticate(ctx, "Bearer "+key); err != nil {
		t.Fatal(err)
	}
	for range 5 * a.maxUnknown {
		if _, err := a.Authenticate(ctx, "Bearer "+NewKey(TestPrefix)); apierr.From(err).Code != apierr.Unauthorized {
			t.Fatalf("a guess: got %v; want unauthorized", err)
		}
	}
	if n := len(a.unknown); n > a.maxUnknown {
		t.Errorf("unknown keys cached: got %d; want at most %d", n, a.maxUnknown)
	}
	before := reads.Load()
	if _, err := a.Authenticate(ctx, "Bearer "+key); err != nil {
		t.Fatal(err)
	}
	if got := reads.Load() - before; got != 0 {
		t.Errorf("the valid key after a flood of guesses: got %d key-table reads; want 0 (still cached)", got)
	}
	now = now.Add(time.Minute)
	if !a.knownValid(Hash(key)) {
		t.Error("the valid key after a flood of guesses, its lookup expired: not known valid; want known valid")
	}
}
