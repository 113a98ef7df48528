package pets_test

import (
	"context"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"petstore/models"
	"petstore/store"
	"petstore/store/pets"
	"petstore/testkit/dbtest"
)

// addPets stores n pets named p1, p2... through s and returns their ids.
func addPets(t *testing.T, s *pets.Store, n int) []int64 {
	t.Helper()
	var ids []int64
	for i := range n {
		p, err := s.Create(context.Background(), models.NewPet{Name: "p" + string(rune('1'+i)), CategoryID: 1})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.ID)
	}
	return ids
}

// pageIDs reads the page of n after afterID and returns its ids and whether more follow.
func pageIDs(t *testing.T, s *pets.Store, afterID int64, n int) ([]int64, bool) {
	t.Helper()
	page, more, err := s.Page(context.Background(), afterID, n, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, len(page))
	for i := range page {
		ids[i] = page[i].ID
	}
	return ids, more
}

// TestPageCacheKeepsFullPagesOnly: a page that another follows is read once and then answered
// from memory; the last page, which grows, is read every time, and shows a pet added since.
func TestPageCacheKeepsFullPagesOnly(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		cache := pets.NewPageCache(1<<20, nil)
		s := pets.New(db, store.DefaultTimeout, cache)
		ids := addPets(t, s, 3)
		for range 3 {
			if got, more := pageIDs(t, s, 0, 2); !slices.Equal(got, ids[:2]) || !more {
				t.Fatalf("first page: got %v, more %v; want %v, true", got, more, ids[:2])
			}
		}
		if st := cache.Stats(); st.Hits != 2 || st.Misses != 1 || st.Bytes == 0 {
			t.Fatalf("after 3 reads of a full page: %+v; want 2 hits, 1 miss, some bytes", st)
		}
		if got, more := pageIDs(t, s, ids[1], 2); !slices.Equal(got, ids[2:]) || more {
			t.Fatalf("last page: got %v, more %v; want %v, false", got, more, ids[2:])
		}
		added := addPets(t, s, 1)
		if got, _ := pageIDs(t, s, ids[1], 2); !slices.Equal(got, append(ids[2:], added...)) {
			t.Fatalf("last page after a pet was added: got %v; want %v", got, append(ids[2:], added...))
		}
		if st := cache.Stats(); st.Hits != 2 || st.Misses != 3 {
			t.Fatalf("after two reads of the last page: %+v; want 2 hits, 3 misses", st)
		}
	})
}

// TestPageCacheForgetsALatePet: a pet that commits among the ids of a cached page (a write
// slower than the settle delay, here put in by hand) is listed once the cache forgets it, and
// not before: what Forget is for.
func TestPageCacheForgetsALatePet(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		cache := pets.NewPageCache(1<<20, nil)
		s := pets.New(db, store.DefaultTimeout, cache)
		ids := addPets(t, s, 4)
		if err := db.Exec("DELETE FROM pets WHERE id = ?", ids[1]).Error; err != nil {
			t.Fatal(err)
		}
		want := []int64{ids[0], ids[2]}
		if got, _ := pageIDs(t, s, 0, 2); !slices.Equal(got, want) {
			t.Fatalf("page with a hole: got %v; want %v", got, want)
		}
		if err := db.Exec("INSERT INTO pets (id, name, category_id) VALUES (?, 'late', 1)", ids[1]).Error; err != nil {
			t.Fatal(err)
		}
		cache.Forget(ids[3]) // above the page: it stays
		if got, _ := pageIDs(t, s, 0, 2); !slices.Equal(got, want) {
			t.Fatalf("cached page: got %v; want %v", got, want)
		}
		cache.Forget(ids[1])
		if got, _ := pageIDs(t, s, 0, 2); !slices.Equal(got, ids[:2]) {
			t.Fatalf("page after Forget: got %v; want %v", got, ids[:2])
		}
	})
}

// TestPageCacheClear drops every page.
func TestPageCacheClear(t *testing.T) {
	db := dbtest.New(t, "sqlite")
	cache := pets.NewPageCache(1<<20, nil)
	s := pets.New(db, store.DefaultTimeout, cache)
	addPets(t, s, 3)
	pageIDs(t, s, 0, 1)
	pageIDs(t, s, 1, 1)
	cache.Clear()
	if st := cache.Stats(); st.Bytes != 0 {
		t.Fatalf("after Clear the cache holds %d bytes; want 0", st.Bytes)
	}
	pageIDs(t, s, 0, 1)
	if st := cache.Stats(); st.Hits != 0 || st.Misses != 3 {
		t.Fatalf("%+v; want 0 hits, 3 misses", st)
	}
}

// TestPageCacheSkipsTransactions: a read in a transaction reads it, not the cache.
func TestPageCacheSkipsTransactions(t *testing.T) {
	db := dbtest.New(t, "sqlite")
	cache := pets.NewPageCache(1<<20, nil)
	s := pets.New(db, store.DefaultTimeout, cache)
	addPets(t, s, 3)
	tx := db.Begin()
	defer tx.Rollback()
	ctx := store.WithTx(context.Background(), tx)
	for range 2 {
		if _, _, err := s.Page(ctx, 0, 2, nil); err != nil {
			t.Fatal(err)
		}
	}
	if st := cache.Stats(); st.Hits+st.Misses != 0 {
		t.Fatalf("reads in a transaction: %+v; want no lookup", st)
	}
}

// TestSlowWriteIsLate: on MySQL a pet whose write took longer than half the settle delay, from
// its first statement to its commit, is told to the other instances and forgotten here; a
// quick one is not.
func TestSlowWriteIsLate(t *testing.T) {
	db := dbtest.New(t, "mysql")
	var told atomic.Int64
	cache := pets.NewPageCache(1<<20, func(id int64) { told.Store(id) })
	s := pets.New(db, store.DefaultTimeout, cache)
	addPets(t, s, 1)
	if told.Load() != 0 {
		t.Fatalf("a quick write was told as late: pet %d", told.Load())
	}
	var hooks store.CommitHooks // the commit of a transaction that ends long after its insert
	p, err := s.Create(store.WithCommitHooks(context.Background(), &hooks), models.NewPet{Name: "slow", CategoryID: 1})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(store.SettleDelay / 2)
	if told.Load() != 0 {
		t.Fatal("a pet was told as late before its commit")
	}
	hooks.Run()
	if told.Load() != p.ID {
		t.Fatalf("told %d as late; want %d", told.Load(), p.ID)
	}
	if st := cache.Stats(); st.Late != 1 {
		t.Fatalf("%d late pets counted; want 1", st.Late)
	}
}

// TestPageCacheBoundedByBytes: pages of one pet after every id, the most entries a client can
// make the cache hold for its bytes, with the shortest and the longest names the API takes
// (255 characters, ASCII or of four bytes each), and pages of twenty, grow the live heap by no
// more than the cache's bound and a tenth.
func TestPageCacheBoundedByBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 48,000 pages")
	}
	for _, tt := range []struct{ name, expr string }{
		{"one character", "'a'"},
		{"255 characters", "printf('%.255c', 'a')"},
		{"255 four-byte characters", "replace(printf('%.255c', 'a'), 'a', '😀')"},
		{"pages of twenty", "substr(hex(randomblob(64)), 1, 1 + x % 100)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const bound = 2 << 20
			db := dbtest.New(t, "sqlite")
			if err := db.Exec(`WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM n WHERE x < 12000)
				INSERT INTO pets (name, category_id) SELECT ` + tt.expr + `, 1 FROM n`).Error; err != nil {
				t.Fatal(err)
			}
			size := 1
			if tt.name == "pages of twenty" {
				size = 20
			}
			cache := pets.NewPageCache(bound, nil)
			s := pets.New(db, store.DefaultTimeout, cache)
			before := liveHeap()
			for after := range int64(12_000 - size) {
				if _, more, err := s.Page(context.Background(), after, size, nil); err != nil || !more {
					t.Fatalf("page after %d: more %v, %v", after, more, err)
				}
			}
			grown := int64(liveHeap()) - int64(before)
			st := cache.Stats()
			t.Logf("cache holds %d bytes by its weight; the live heap grew by %d (%.2f of the bound)", st.Bytes, grown, float64(grown)/bound)
			if st.Bytes > bound || st.Bytes < bound/2 {
				t.Errorf("cache weight %d; want close to its bound %d", st.Bytes, bound)
			}
			if grown > bound*11/10 {
				t.Errorf("live heap grew by %d bytes; want at most %d", grown, bound*11/10)
			}
			runtime.KeepAlive(cache)
		})
	}
}

// liveHeap returns the bytes of the live heap after garbage collection.
func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestSlowWriteHasOutboxRow: on MySQL, with the outbox on, a pet whose write took longer than
// half the settle delay, to its commit, gets its outbox row once it committed (webhooks take
// it from there, a settled page having perhaps passed it); a quick one is one INSERT.
func TestSlowWriteHasOutboxRow(t *testing.T) {
	db := dbtest.New(t, "mysql")
	var created atomic.Int64
	s := pets.New(db, store.DefaultTimeout, nil).Outbox(func() { created.Add(1) })
	rows := func() (ids []int64) {
		if err := db.Raw("SELECT pet_id FROM webhook_outbox").Scan(&ids).Error; err != nil {
			t.Fatal(err)
		}
		return ids
	}
	addPets(t, s, 1)
	if got := rows(); len(got) != 0 || created.Load() != 1 {
		t.Fatalf("a quick write: outbox rows %v, %d told; want none, 1", got, created.Load())
	}
	var hooks store.CommitHooks // the commit of a transaction that ends long after its insert
	p, err := s.Create(store.WithCommitHooks(context.Background(), &hooks), models.NewPet{Name: "slow", CategoryID: 1})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(store.SettleDelay / 2)
	if got := rows(); len(got) != 0 || created.Load() != 1 {
		t.Fatalf("before the commit: outbox rows %v, %d told; want none, 1", got, created.Load())
	}
	hooks.Run()
	if got := rows(); !slices.Equal(got, []int64{p.ID}) || created.Load() != 2 {
		t.Fatalf("after the late commit: outbox rows %v, %d told; want [%d], 2", got, created.Load(), p.ID)
	}
}
