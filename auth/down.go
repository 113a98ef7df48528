package auth

import (
	"errors"
	"time"
)

// downFor is how long after a failed read of the key table lookups answer from the cache, or
// 503, without trying the database again: an outage costs one attempt a second, whatever
// keys clients send.
const downFor = time.Second

// errDown is the cause of an unchecked key while the key table is left alone after a failure.
var errDown = errors.New("auth: the key table failed to answer less than a second ago")

// mayRead reports whether a lookup at now may read the key table: not within downFor of a
// failed read, and, until a read succeeds again, only as the one probe under way (probe).
func (a *Authenticator) mayRead(now time.Time) (probe, ok bool) {
	if now.UnixNano() < a.downUntil.Load() {
		return false, false
	}
	if !a.suspect.Load() {
		return false, true
	}
	return true, a.probing.CompareAndSwap(false, true)
}

// staleEntry returns the cached lookup of hash, expired less than a.stale ago.
func (a *Authenticator) staleEntry(hash string, now time.Time) (cacheEntry, bool) {
	a.mu.RLock()
	e, ok := a.valid[hash]
	if !ok {
		e, ok = a.unknown[hash]
	}
	a.mu.RUnlock()
	return e, ok && now.Before(e.expires.Add(a.stale))
}
