package auth

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"petstore/apierr"
	"petstore/models"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// listTest is an Authenticator on a clock of the test's, over db, whose key-table reads are
// counted.
type listTest struct {
	t     *testing.T
	db    *store.DB
	a     *Authenticator
	now   time.Time
	reads interface{ Load() int64 }
}

func newListTest(t *testing.T, db *store.DB) *listTest {
	lt := &listTest{t: t, db: db, now: time.Unix(1_800_000_000, 0), reads: countKeyReads(t, db.DB)}
	lt.a = NewAuthenticator(db.DB, nil, TestPrefix, 10*time.Second, 0)
	lt.a.now = func() time.Time { return lt.now }
	return lt
}

// create stores a new free key and returns it with its id.
func (lt *listTest) create() (string, int64) {
	lt.t.Helper()
	key, rec, err := CreateKey(context.Background(), lt.db.DB, TestPrefix, KeySpec{Plan: "free"})
	if err != nil {
		lt.t.Fatal(err)
	}
	return key, rec.ID
}

// listed asks Listed about key, and checks the answer and the key-table reads it made.
func (lt *listTest) listed(what, key string, want bool, reads int64) {
	lt.t.Helper()
	before := lt.reads.Load()
	if got := lt.a.Listed(context.Background(), Hash(key)); got != want {
		lt.t.Errorf("%s: Listed = %v; want %v", what, got, want)
	}
	if got := lt.reads.Load() - before; got != reads {
		lt.t.Errorf("%s: got %d key-table reads; want %d", what, got, reads)
	}
}

// TestListedKeys: the set of valid keys is loaded when first asked about, lists the stored keys
// and never a guess; a key stored since is listed once a refresh is due (ListRefresh after the
// last try), guesses causing at most one read a ListRefresh; a listed key passes the guard of
// Resolve and Identify without its check; a revoked key leaves the set at the next reload.
func TestListedKeys(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		lt := newListTest(t, db)
		k1, id1 := lt.create()
		lt.listed("a stored key, first asked about", k1, true, 1)
		lt.listed("a stored key", k1, true, 0)
		for range 100 {
			lt.listed("a guess within a refresh of the last", NewKey(TestPrefix), false, 0)
		}
		k2, _ := lt.create()
		lt.listed("a key stored after the load, within a refresh", k2, false, 0)
		lt.now = lt.now.Add(ListRefresh)
		lt.listed("a key stored after the load, a refresh later", k2, true, 1)
		lt.now = lt.now.Add(ListRefresh)
		lt.listed("a guess a refresh later", NewKey(TestPrefix), false, 1)
		for range 100 {
			lt.listed("a guess within a refresh of the last", NewKey(TestPrefix), false, 0)
		}

		refuse := func(context.Context, string) error { return errors.New("refused at the gate") }
		if p, err := lt.a.Resolve(context.Background(), "Bearer "+k2, refuse); err != nil || p == nil {
			t.Errorf("Resolve with a listed key: got %v, %v; want its principal without the gate", p, err)
		}
		if _, err := lt.a.Resolve(context.Background(), "Bearer "+NewKey(TestPrefix), refuse); err == nil || err.Error() != "refused at the gate" {
			t.Errorf("Resolve with a guess: got %v; want the gate's refusal", err)
		}

		if err := RevokeKey(context.Background(), db.DB, id1); err != nil {
			t.Fatal(err)
		}
		lt.now = lt.now.Add(ListRefresh)
		lt.listed("a guess a refresh later", NewKey(TestPrefix), false, 1)
		if !lt.a.listed(Hash(k1)) {
			t.Error("a key revoked since the last reload: not listed; want listed until the next reload")
		}
		lt.now = lt.now.Add(ListReload)
		lt.listed("a guess a reload later", NewKey(TestPrefix), false, 1)
		if lt.a.listed(Hash(k1)) {
			t.Error("a revoked key after a reload: listed; want not")
		}
		if !lt.a.listed(Hash(k2)) {
			t.Error("a valid key after a reload: not listed; want listed")
		}
	})
}

// TestListedLateCommit: a key whose id is below the highest read, committed after it (as an
// insert can on MySQL), is listed by the refreshes of the next listLag; the refreshes after
// that read from the highest id then seen.
func TestListedLateCommit(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		lt := newListTest(t, db)
		insert := func(id int64) string {
			key := NewKey(TestPrefix)
			rec := models.APIKey{ID: id, Hint: Hint(key, TestPrefix), Hash: Hash(key), Plan: "free", CreatedAt: time.Now().UTC()}
			if err := db.DB.Create(&rec).Error; err != nil {
				t.Fatal(err)
			}
			return key
		}
		k10 := insert(10)
		lt.listed("key 10", k10, true, 1)
		lt.now = lt.now.Add(ListRefresh)
		k20 := insert(20)
		lt.listed("key 20, stored after the load", k20, true, 1)
		k15 := insert(15) // committed after 20 was read
		lt.now = lt.now.Add(ListRefresh)
		lt.listed("key 15, committed after key 20 was read", k15, true, 1)
		lt.now = lt.now.Add(listLag)
		lt.listed("a guess", NewKey(TestPrefix), false, 1)
		k12 := insert(12) // committed more than listLag after 20 was read
		lt.now = lt.now.Add(ListRefresh)
		lt.listed("key 12, committed listLag after key 20 was read", k12, false, 1)
		lt.now = lt.now.Add(ListReload)
		lt.listed("key 12 at the next reload", k12, true, 1)
		if n := len(lt.a.list.marks); n > int(listLag/ListRefresh)+2 {
			t.Errorf("marks kept: %d; want at most %d", n, int(listLag/ListRefresh)+2)
		}
	})
}

// TestListedBound: the set holds at most its bound of keys, 8 bytes each: beyond it, the keys of
// lowest id; while it is full, refreshes read nothing, and a reload lists the keys that now fit.
func TestListedBound(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		lt := newListTest(t, db)
		lt.a.list.max = 3
		var keys []string
		var ids []int64
		for range 2 {
			key, id := lt.create()
			keys, ids = append(keys, key), append(ids, id)
		}
		lt.listed("key 1 of 2", keys[0], true, 1)
		for range 3 {
			key, id := lt.create()
			keys, ids = append(keys, key), append(ids, id)
		}
		lt.now = lt.now.Add(ListRefresh)
		lt.listed("key 3 of 5, a refresh later", keys[2], true, 1)
		lt.listed("key 4 of 5", keys[3], false, 0)
		if n := len(*lt.a.list.set.Load()); n != 3 {
			t.Errorf("keys listed: got %d; want the bound, 3", n)
		}
		lt.now = lt.now.Add(ListRefresh)
		lt.listed("key 5 of 5 with the set full, a refresh later", keys[4], false, 0)

		for _, id := range ids[:2] {
			if err := RevokeKey(context.Background(), db.DB, id); err != nil {
				t.Fatal(err)
			}
		}
		lt.now = lt.now.Add(ListReload)
		lt.listed("key 4 of 5 with two revoked, a reload later", keys[3], true, 1)
		for i, want := range []bool{false, false, true, true, true} {
			if got := lt.a.listed(Hash(keys[i])); got != want {
				t.Errorf("key %d after the reload: listed %v; want %v", i+1, got, want)
			}
		}
		key, _ := lt.create()
		lt.now = lt.now.Add(ListRefresh)
		lt.listed("a key beyond the bound, the set just full, a refresh later", key, false, 1)
		lt.now = lt.now.Add(ListRefresh)
		lt.listed("a key beyond the bound, the set full, a refresh later", key, false, 0)

		big := &Authenticator{}
		big.list.init()
		if big.list.max != MaxListed || MaxListed*8 > 8_000_000 {
			t.Errorf("the bound: %d keys; want MaxListed (%d), at most 8 MB of 8-byte hashes", big.list.max, MaxListed)
		}
	})
}

// TestListedPages: the set is read a page of keys at a time, a page a statement.
func TestListedPages(t *testing.T) {
	lt := newListTest(t, dbtest.New(t, "sqlite"))
	lt.a.list.page = 2
	var keys []string
	for range 5 {
		key, _ := lt.create()
		keys = append(keys, key)
	}
	lt.listed("key 1 of 5, read 2 at a time", keys[0], true, 3)
	for i, key := range keys {
		if !lt.a.listed(Hash(key)) {
			t.Errorf("key %d of 5: not listed", i+1)
		}
	}
	key, _ := lt.create()
	lt.now = lt.now.Add(ListRefresh)
	lt.listed("a sixth key, a refresh later", key, true, 1)
}

// TestListedKeepsItsSetThroughAnOutage: a refresh that fails keeps the set as it was, logged at
// most once a listLogEvery; refreshes and lookups share the rule of outages, so that after a
// failed read of either, neither reads the key table for downFor.
func TestListedKeepsItsSetThroughAnOutage(t *testing.T) {
	db := dbtest.New(t, "sqlite")
	var logged bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	lt := newListTest(t, db)
	key, _ := lt.create()
	lt.listed("a stored key", key, true, 1)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	lookup := func(what string, reads int64) {
		t.Helper()
		before := lt.reads.Load()
		if _, err := lt.a.Authenticate(context.Background(), "Bearer "+NewKey(TestPrefix)); apierr.From(err).Code != apierr.Unavailable {
			t.Errorf("%s: got %v; want unavailable", what, err)
		}
		if got := lt.reads.Load() - before; got != reads {
			t.Errorf("%s: got %d key-table reads; want %d", what, got, reads)
		}
	}
	for i := range 30 {
		lt.now = lt.now.Add(ListRefresh)
		lt.listed("a guess, the database closed", NewKey(TestPrefix), false, 1)
		lt.listed("the stored key, the database closed", key, true, 0)
		lookup("a lookup just after a failed refresh", 0)
		if i == 0 && !strings.Contains(logged.String(), "cannot refresh the set of valid keys") {
			t.Errorf("a failed refresh: logged %q; want a line", logged.String())
		}
	}
	if n := strings.Count(logged.String(), "\n"); n != 1 {
		t.Errorf("30 failed refreshes within %v: logged %d lines; want 1:\n%s", listLogEvery, n, logged.String())
	}
	lt.now = lt.now.Add(downFor)
	lookup("a lookup a second after a failed refresh", 1)
	lt.listed("a guess just after a failed lookup", NewKey(TestPrefix), false, 0)
}
