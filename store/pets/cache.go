package pets

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/maypok86/otter/v2"

	"petstore/models"
	"petstore/store"
)

// PageCache keeps full pages of settled ids in memory, so that Store.Page answers them without
// the database. The catalogue only grows and no pet changes, so a page that another follows,
// every id of which is settled (store.Settler), holds the same pets for good: no pet can
// commit among its ids later. Except one: a pet whose write took longer than the settle delay
// may commit below ids already settled (the rare case in which a cursor may also pass it).
// Store.Create tells such a late pet to Forget, here and, through late, on every instance.
// The last page of a listing, which grows, is never kept.
//
// A PageCache is bounded by the bytes its pages hold (their weight); eviction is otter's
// (W-TinyLFU). It is safe for concurrent use.
type PageCache struct {
	pages *otter.Cache[pageKey, []models.Pet]
	late  func(id int64) // tells the other instances of a late pet; nil: there are none

	mu     sync.Mutex    // orders put after Forget
	forgot atomic.Uint64 // Forgets so far: a page read before one may lack its pet
	high   int64         // the highest id of a page kept since the cache was last emptied, under mu

	hits, misses, lateSeen atomic.Uint64
}

// pageKey names a page: the pets after the id after, up to n, of status when it is not "".
type pageKey struct {
	after  int64
	n      int
	status models.PetStatus
}

// What a cached page weighs besides its pets' names (compact): the cache's entry, its key and
// the slice's header (pageOverhead), and each models.Pet (petOverhead), rounded up from what
// TestPageCacheBoundedByBytes measures.
const (
	pageOverhead = 256
	petOverhead  = 48
)

// NewPageCache returns a PageCache of at most maxBytes of pages. late, when not nil, tells the
// other instances sharing the database of each late pet, so that their caches Forget it.
func NewPageCache(maxBytes int, late func(id int64)) *PageCache {
	pages, err := otter.New(&otter.Options[pageKey, []models.Pet]{
		MaximumWeight: uint64(maxBytes),
		Weigher:       func(_ pageKey, pets []models.Pet) uint32 { return weight(pets) },
	})
	if err != nil {
		panic(fmt.Sprintf("pets: page cache options: %v", err)) // only a negative size fails
	}
	return &PageCache{pages: pages, late: late}
}

// weight returns the bytes that a cached page holds.
func weight(pets []models.Pet) uint32 {
	w := pageOverhead
	for i := range pets {
		w += petOverhead + len(pets[i].Name)
	}
	return uint32(w)
}

// get returns the cached page of key.
func (c *PageCache) get(key pageKey) ([]models.Pet, bool) {
	pets, ok := c.pages.GetIfPresent(key)
	if ok {
		c.hits.Add(1)
	} else {
		c.misses.Add(1)
	}
	return pets, ok
}

// mark returns what put needs to know of the time just before a read: the Forgets so far.
func (c *PageCache) mark() uint64 { return c.forgot.Load() }

// put keeps pets, the full and settled page of key read after mark, unless a pet was
// forgotten since mark: that read may lack it.
func (c *PageCache) put(key pageKey, pets []models.Pet, mark uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.forgot.Load() != mark {
		return
	}
	c.high = max(c.high, pets[len(pets)-1].ID)
	c.pages.Set(key, compact(pets))
}

// compact returns a copy of pets that holds what they need alone, so that weight tells what a
// page keeps: a slice of their length, their names in one string of their own. A page read
// shares its names' string with the row after it, and has room for that row.
func compact(pets []models.Pet) []models.Pet {
	n := 0
	for i := range pets {
		n += len(pets[i].Name)
	}
	var b strings.Builder
	b.Grow(n) // exactly: the string keeps the builder's whole buffer
	for i := range pets {
		b.WriteString(pets[i].Name)
	}
	names := b.String()
	out := make([]models.Pet, len(pets))
	for i := range pets {
		out[i] = pets[i]
		out[i].Name, names = names[:len(pets[i].Name)], names[len(pets[i].Name):]
	}
	return out
}

// Forget drops every page whose ids the pet with id falls among, a pet that committed after
// pages above it were settled, and keeps any read begun before from being cached.
func (c *PageCache) Forget(id int64) {
	c.lateSeen.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forgot.Add(1)
	if id > c.high { // the common case: above every page kept
		return
	}
	for key, pets := range c.pages.All() {
		if key.after < id && id <= pets[len(pets)-1].ID {
			c.pages.Invalidate(key)
		}
	}
}

// Clear drops every page, and keeps any read begun before from being cached: what an instance
// does when it may have missed a Late message of another.
func (c *PageCache) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forgot.Add(1)
	c.pages.InvalidateAll()
	c.high = 0
}

// PageCacheStats are the figures of a PageCache since it was made.
type PageCacheStats struct {
	Hits, Misses uint64 // pages answered from memory, and read from the database
	Bytes        uint64 // what the pages kept weigh
	Late         uint64 // late pets forgotten: this instance's own and those heard of
}

// Stats returns the figures of c, its size once the writes pending in the cache's buffers
// are applied.
func (c *PageCache) Stats() PageCacheStats {
	c.pages.CleanUp()
	return PageCacheStats{Hits: c.hits.Load(), Misses: c.misses.Load(), Bytes: c.pages.WeightedSize(), Late: c.lateSeen.Load()}
}

// lateAfter is how long a write of a pet must take, from its first statement to its commit,
// before the pet may be late (PageCache): less than the settle delay, with a margin for the
// clocks of other instances.
const lateAfter = store.SettleDelay / 2

// committed tells c that the pet with id, whose write began at start, has committed: a late
// pet is forgotten here and on the other instances.
func (c *PageCache) committed(id int64, start time.Time) {
	if time.Since(start) < lateAfter {
		return
	}
	c.Forget(id)
	if c.late != nil {
		c.late(id)
	}
}
