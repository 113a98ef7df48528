package auth

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"petstore/models"
)

// The set of valid keys. Every instance keeps, in memory, the first 8 bytes of the hash of each
// unrevoked key in the key table, so that a key new to the instance (every key is, after a
// restart) can be told from a guess without a read: a guess is never in the set, since only a
// key's holder can send a key whose hash is there (a well-formed key that is not one matches
// the 8 bytes of some listed key with odds of one in 2^64 divided by the keys listed, and then
// costs one read). A listed key is read like one this instance found valid before, without the
// rate limiter's address check (Identify, Resolve), so that guesses from an address over its
// budget, which compete for the instance's over-budget reads, never compete with it.
const (
	// ListRefresh is how often, at most, the set is brought up to date: when a key sent from an
	// address over its budget is not in it (Listed), keys stored since are added, one refresh at
	// a time. The refresh reads the primary, never a replica: a key created a moment ago is there.
	ListRefresh = time.Second
	// ListReload is how often, at most, the set is read again whole, dropping revoked keys.
	ListReload = 5 * time.Minute
	// MaxListed bounds the set: 8 bytes a key, 8 MB at most (about twice that while a refresh
	// builds the new set beside the old one). Beyond it, the unrevoked keys of lowest id are
	// listed, and the others are not until a reload finds room (revoked keys dropped).
	MaxListed = 1_000_000
	// listLag is how long keys are read again by the refreshes after their id was first seen:
	// on MySQL an insert can commit after one with a higher id (a Galera node's, or one slower
	// to commit), and would be missed if every refresh started past the highest id seen.
	listLag = 10 * time.Second
	// listPage is how many keys one read of a refresh returns at most: a reload of many keys
	// is several short reads, each within PETSTORE_DB_TIMEOUT, rather than one long one.
	listPage = 10_000
	// listLogEvery spaces the log lines of refreshes that fail or find the set full.
	listLogEvery = time.Minute
)

// keyList is the set of valid keys of an Authenticator, and what its refreshes need.
type keyList struct {
	set  atomic.Pointer[[]uint64] // the sorted first 8 bytes of the listed hashes; nil before the first load
	next atomic.Int64             // Unix nanoseconds before which no refresh is tried

	mu       sync.Mutex // held by the refresh under way; guards the fields below
	reloaded time.Time  // when the set was last read whole
	seen     int64      // the highest id read
	marks    []listMark // seen, as it was at each refresh, for the next refreshes' floor
	full     bool       // the last load met max: new keys are not added until a reload
	nextLog  time.Time  // before which no failure or full set is logged

	// The settings: ListRefresh, ListReload, listLag, MaxListed, listPage (tests change them).
	every, reload, lag time.Duration
	max, page          int
}

// listMark is the highest id read, as of a refresh at a time.
type listMark struct {
	at   time.Time
	seen int64
}

// init sets l's settings to their constants.
func (l *keyList) init() {
	l.every, l.reload, l.lag, l.max, l.page = ListRefresh, ListReload, listLag, MaxListed, listPage
}

// listedHash returns the first 8 bytes of a hex SHA-256 hash, as the set holds them.
func listedHash(hash string) (uint64, bool) {
	var b [8]byte
	if len(hash) < 2*len(b) {
		return 0, false
	}
	if _, err := hex.Decode(b[:], []byte(hash[:2*len(b)])); err != nil {
		return 0, false
	}
	return binary.BigEndian.Uint64(b[:]), true
}

// has reports whether the set holds h.
func (l *keyList) has(h uint64) bool {
	set := l.set.Load()
	if set == nil {
		return false
	}
	_, ok := slices.BinarySearch(*set, h)
	return ok
}

// listed reports whether the key with hash is in the set of valid keys as it is now, without
// refreshing it.
func (a *Authenticator) listed(hash string) bool {
	h, ok := listedHash(hash)
	return ok && a.list.has(h)
}

// Listed reports whether the key with hash is in the instance's set of valid keys: not a guess.
// When it is not, the set is brought up to date first if ListRefresh has passed since the last
// try and no other refresh is under way (the first load is waited for), so that a key created a
// moment ago on another instance is found; guesses thus cost at most one refresh a ListRefresh
// for the whole instance. A refresh reads the key table as a lookup does, under the same rule
// for outages: none within a second of a failed read, one read at a time until one succeeds; a
// failed refresh keeps the set as it was. For the rate limiter's gate: a listed key sent from
// an address over its budget is read without spending the over-budget reads.
func (a *Authenticator) Listed(ctx context.Context, hash string) bool {
	h, ok := listedHash(hash)
	if !ok {
		return false
	}
	if a.list.has(h) {
		return true
	}
	return a.refreshList(ctx) && a.list.has(h)
}

// refreshList brings the set of valid keys up to date when a refresh is due, and reports
// whether it did.
func (a *Authenticator) refreshList(ctx context.Context) bool {
	l := &a.list
	if a.now().UnixNano() < l.next.Load() {
		return false
	}
	if l.set.Load() == nil {
		l.mu.Lock() // the first load: worth waiting for
	} else if !l.mu.TryLock() {
		return false // another refresh is under way
	}
	defer l.mu.Unlock()
	now := a.now()
	if now.UnixNano() < l.next.Load() {
		return false
	}
	l.next.Store(now.Add(l.every).UnixNano())
	whole := l.set.Load() == nil || now.Sub(l.reloaded) >= l.reload
	if !whole && l.full {
		return false // nothing can be added before a reload
	}
	probe, ok := a.mayRead(now)
	if !ok {
		return false
	}
	err := a.loadList(ctx, now, whole)
	a.suspect.Store(err != nil)
	if probe {
		a.probing.Store(false)
	}
	if err != nil {
		a.downUntil.Store(now.Add(downFor).UnixNano())
		l.logf(now, "auth: cannot refresh the set of valid keys; keeping the one it has", "err", err)
		return false
	}
	return true
}

// loadList reads into the set the unrevoked keys of the key table: all of them when whole, else
// those with ids above the floor (listLag); l.mu is held.
func (a *Authenticator) loadList(ctx context.Context, now time.Time, whole bool) error {
	l := &a.list
	floor, seen := l.floor(now), l.seen
	if whole {
		floor, seen = 0, 0
	}
	var read []uint64 // in id order
	n := 0
	err := a.readList(ctx, floor, l.max+1, func(id int64, hash string) {
		n++
		seen = max(seen, id)
		if h, ok := listedHash(hash); ok && (whole || !l.has(h)) {
			read = append(read, h)
		}
	})
	if err != nil {
		return err
	}
	var set []uint64
	if whole {
		l.full = n > l.max
		set = read[:min(len(read), l.max)] // the lowest ids
		slices.Sort(set)
		set = slices.Compact(set)
		l.reloaded = now
	} else {
		set = *l.set.Load()
		room := l.max - len(set)
		l.full = len(read) > room
		if read = read[:min(len(read), room)]; len(read) > 0 {
			set = mergeSorted(set, read)
		}
	}
	if l.full {
		l.logf(now, "auth: the set of valid keys is full; keys beyond it are read only within the over-budget reads",
			"max", l.max)
	}
	l.seen = seen
	l.floor(now) // drops the marks no refresh needs
	l.marks = append(l.marks, listMark{at: now, seen: seen})
	l.set.Store(&set)
	return nil
}

// readList calls each with the id and hash of the unrevoked keys with ids above floor, in id
// order, at most limit of them, read on the primary a page of l.page rows at a time, each read
// within a.queryTimeout.
func (a *Authenticator) readList(ctx context.Context, floor int64, limit int, each func(id int64, hash string)) error {
	ctx = context.WithoutCancel(ctx) // a refresh serves every request after it
	for limit > 0 {
		n, err := a.readListPage(ctx, &floor, min(a.list.page, limit), each)
		if err != nil || n < min(a.list.page, limit) {
			return err
		}
		limit -= n
	}
	return nil
}

// readListPage is one page of readList: it reads at most size keys with ids above *floor, and
// moves *floor to the last.
func (a *Authenticator) readListPage(ctx context.Context, floor *int64, size int, each func(id int64, hash string)) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, a.queryTimeout)
	defer cancel()
	rows, err := a.db.WithContext(ctx).Model(&models.APIKey{}).Select("id", "hash").
		Where("id > ? AND revoked_at IS NULL", *floor).Order("id").Limit(size).Rows()
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id int64
		var hash string
		if err := rows.Scan(&id, &hash); err != nil {
			return n, err
		}
		n++
		*floor = id
		each(id, hash)
	}
	return n, rows.Err()
}

// floor returns the id past which a refresh at now reads keys: the highest id read by the last
// refresh that ran at least l.lag before now, or else by the first one remembered, so that a key
// committed out of id order less than l.lag after a higher id was read is read too (but for one
// committed during the first load). It forgets the marks older than the one it returns; l.mu is
// held.
func (l *keyList) floor(now time.Time) int64 {
	i := 0
	for j, m := range l.marks {
		if now.Sub(m.at) >= l.lag {
			i = j
		}
	}
	l.marks = l.marks[i:]
	if len(l.marks) == 0 {
		return l.seen
	}
	return l.marks[0].seen
}

// mergeSorted returns a new sorted slice of the sorted set and the hashes of add, which it
// sorts.
func mergeSorted(set, add []uint64) []uint64 {
	slices.Sort(add)
	out := make([]uint64, 0, len(set)+len(add))
	i, j := 0, 0
	for i < len(set) && j < len(add) {
		if set[i] <= add[j] {
			out = append(out, set[i])
			i++
		} else {
			out = append(out, add[j])
			j++
		}
	}
	out = append(out, set[i:]...)
	return append(out, add[j:]...)
}

// logf logs msg unless a line was logged less than listLogEvery ago; l.mu is held.
func (l *keyList) logf(now time.Time, msg string, args ...any) {
	if now.Before(l.nextLog) {
		return
	}
	l.nextLog = now.Add(listLogEvery)
	slog.Default().Warn(msg, args...)
}
