package ratelimit

import (
	"context"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/time/rate"

	"petstore/auth"
	"petstore/clientaddr"
)

// Gate is the gin.HandlerFunc that guards the key table, to be placed between auth.Identify
// and auth.Lookup. For a request whose key must be read from the table (auth.Pending), it
// checks without charging that the client address has room in its anonymous budget and is not
// suspended. If not, the key is still read when Config.Listed vouches for it, or else while
// Config.OverBudgetKeyReads allows (a valid key is then charged to its own budget, whatever
// its address's; any other gets the address's 429); otherwise the request gets the address's
// 429 at once (its headers, Retry-After, and a rejection counted toward its suspension as
// Middleware counts one), and the key is never read. Other requests pass untouched. A store
// failure fails closed here, as Middleware would (503, before the read), or lets the request
// on when the limiter fails open.
func (l *Limiter) Gate(c *gin.Context) {
	if !auth.Pending(c) {
		return
	}
	r := c.Request
	subj := AddrSubject(clientaddr.From(r))
	d, readAnyway, err := l.gate(r.Context(), subj, auth.PendingHash(c))
	switch {
	case err != nil && !l.failOpen:
		l.storeFailed(c, l.anon, err)
	case err != nil || d.Outcome == Allowed:
	case readAnyway:
		c.Set(refusedKey, d)
	default:
		l.reject(c, subj, d)
	}
}

// refusedKey is the gin context key under which Gate leaves the refusal of an address whose
// key it let through to the key table.
const refusedKey = "ratelimit.refused"

// gate checks, without charging, the room of the address subj before the key with hash it sent
// is read from the key table; for an address with none, readAnyway reports whether the read
// may go on: the key is listed (Config.Listed), or Config.OverBudgetKeyReads has one left (one
// read of each key spends one, however many requests send it at once). A refusal is counted
// toward the address's suspension; a store failure is returned for the caller's policy, not
// noted.
func (l *Limiter) gate(ctx context.Context, subj Subject, hash string) (d Decision, readAnyway bool, err error) {
	d, err = l.store.Check(ctx, subj, l.anon)
	if err != nil {
		return d, false, err
	}
	if d.Outcome == Allowed {
		return d, false, nil
	}
	if l.observe != nil {
		l.observe(d.Outcome, AnonymousPlan)
	}
	if l.listed != nil && l.listed(ctx, hash) {
		return d, true, nil
	}
	return d, l.overBudget != nil && l.allowed.allow(hash, l.overBudget), nil
}

// recentFor is how long a key whose over-budget read was allowed lets the requests that send
// it at the same moment through without spending another: its read is then under way, or its
// answer cached.
const recentFor = time.Second

// recentReads are the keys (by hash) whose over-budget read was allowed less than recentFor
// ago, so that a burst of requests with one key that no instance cache holds (browser tabs
// reconnecting after a restart) spends one read of the allowance, not one a request.
type recentReads struct {
	mu   sync.Mutex
	at   map[string]time.Time
	last time.Time // of the last sweep of expired entries
}

// allow reports whether the key with hash may be read: it was allowed a moment ago, or bucket
// allows one more read now.
func (r *recentReads) allow(hash string, bucket *rate.Limiter) bool {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.at[hash]; ok && now.Sub(t) < recentFor {
		return true
	}
	if !bucket.Allow() {
		return false
	}
	if r.at == nil {
		r.at = map[string]time.Time{}
	}
	if now.Sub(r.last) > recentFor { // the bucket bounds the map to its reads of one second
		for h, t := range r.at {
			if now.Sub(t) >= recentFor {
				delete(r.at, h)
			}
		}
		r.last = now
	}
	r.at[hash] = now
	return true
}
