package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/time/rate"

	"petstore/apierr"
	"petstore/auth"
	"petstore/clientaddr"
)

// failureLogEvery bounds the store-failure log lines while a failure lasts.
const failureLogEvery = 10 * time.Second

// Limiter applies the rate limits to requests. It is safe for concurrent use.
type Limiter struct {
	store    Counters
	anon     Policy
	suspend  Suspension
	failOpen bool
	log      *slog.Logger
	observe  func(Outcome, string) // Config.OnDecision; nil for none
	// overBudget allows the key-table reads of Config.OverBudgetKeyReads; nil for none.
	overBudget *rate.Limiter
	allowed    recentReads // keys whose over-budget read was allowed a moment ago

	storeErrors atomic.Uint64
	degraded    atomic.Bool  // a store failure has not been followed by a success yet
	nextLog     atomic.Int64 // Unix nanoseconds before which failures are not logged
}

// New returns a Limiter keeping its state in store. It fails when cfg is inconsistent (see
// Config) or store is nil.
func New(cfg Config, store Counters) (*Limiter, error) {
	if store == nil {
		return nil, errors.New("ratelimit: nil Counters")
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("ratelimit: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	s := cfg.suspension()
	l := &Limiter{
		store:    store,
		anon:     Policy{PerMinute: cfg.AnonymousPerMinute, PerDay: cfg.AnonymousPerDay, Suspension: s},
		suspend:  s,
		failOpen: cfg.FailOpen,
		log:      log,
		observe:  cfg.OnDecision,
	}
	if n := cfg.OverBudgetKeyReads; n > 0 {
		l.overBudget = rate.NewLimiter(rate.Limit(n), n)
	}
	return l, nil
}

// Middleware is the gin.HandlerFunc of the limiter, to be placed after the middleware that
// identifies the key (auth.Identify, then Gate and auth.Lookup) and before the one that requires
// it. It charges the request to its key, or to its client address when it has no principal,
// sets the rate-limit headers (before the handler runs, so that every response carries them),
// and answers 429 rate_limited or key_suspended itself when the request is rejected. A
// request whose key could not be checked (auth.Unchecked: the database is down) is charged to
// nobody: it is answered 503 unavailable at once, so that an outage never spends an address's
// budget nor leads to a suspension; but for one from an address over its budget that Gate let
// through to a read that was not made, which gets the address's 429 that Gate counted.
func (l *Limiter) Middleware(c *gin.Context) {
	r := c.Request
	if err := auth.Unchecked(c); err != nil {
		if v, ok := c.Get(refusedKey); ok { // the gate let the read go on, but none was made
			l.reject(c, AddrSubject(clientaddr.From(r)), v.(Decision))
			return
		}
		l.unchecked(c, err)
		return
	}
	subj, p := l.subject(r)
	if subj.KeyID == 0 { // a valid key's request never looks
		if v, ok := c.Get(refusedKey); ok {
			l.reject(c, subj, v.(Decision)) // the gate counted it; its key was no valid one
			return
		}
	}
	d, err := l.store.Take(r.Context(), subj, p)
	if err != nil {
		l.storeFailed(c, p, err)
		return
	}
	l.storeAnswered(r.Context())
	if l.observe != nil {
		l.observe(d.Outcome, planName(r))
	}
	if d.Outcome != Allowed {
		l.reject(c, subj, d)
		return
	}
	setHeaders(c.Writer.Header(), d)
	c.Next()
}

// Gate is the gin.HandlerFunc that guards the key table, to be placed between auth.Identify
// and auth.Lookup. For a request whose key must be read from the table (auth.Pending), it
// checks without charging that the client address has room in its anonymous budget and is not
// suspended. If not, the key is still read while Config.OverBudgetKeyReads allows (a valid
// key is then charged to its own budget, whatever its address's; any other gets the address's
// 429), else the request gets the address's 429 at once (its headers, Retry-After, and a
// rejection counted toward its suspension as Middleware counts one), and the key is never
// read. Other requests pass untouched. A store failure fails closed here, as Middleware would
// (503, before the read), or lets the request on when the limiter fails open.
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
// may go on (Config.OverBudgetKeyReads: one read of each key spends one, however many requests
// send it at once). A refusal is counted toward the address's suspension; a store failure is
// returned for the caller's policy, not noted.
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

// unchecked answers 503 to a request whose key could not be checked, charging nothing and
// counting nothing toward a suspension (so the store is not asked: Check would count a
// rejection). Its rate-limit headers are those of the anonymous policy with nothing spent, as
// when the store fails; apierr.Write adds Retry-After: 1.
func (l *Limiter) unchecked(c *gin.Context, err error) {
	setHeaders(c.Writer.Header(), decision(l.anon, raw{outcome: Allowed, now: time.Now().UnixMilli()}))
	apierr.Write(c.Writer, c.Request, err)
	c.Abort()
}

// reject answers the rejected request of subj: 429 with the headers of d and Retry-After.
func (l *Limiter) reject(c *gin.Context, subj Subject, d Decision) {
	setHeaders(c.Writer.Header(), d)
	secs := int64(d.RetryAfter() / time.Second)
	c.Header("Retry-After", strconv.FormatInt(secs, 10))
	apierr.Write(c.Writer, c.Request, rejection(subj, d, secs))
	c.Abort()
}

// StoreErrors returns how many decisions the store failed to make since the Limiter started
// (each one admitted or answered 503, as Config.FailOpen says).
func (l *Limiter) StoreErrors() uint64 { return l.storeErrors.Load() }

// subject returns who r is charged to and under which limits.
func (l *Limiter) subject(r *http.Request) (Subject, Policy) {
	if p := auth.FromContext(r.Context()); p != nil {
		return KeySubject(p.KeyID), Policy{PerMinute: p.Plan.PerMinute, PerDay: p.Plan.PerDay, Suspension: l.suspend}
	}
	return AddrSubject(clientaddr.From(r)), l.anon
}

// AnonymousPlan is the plan name Config.OnDecision receives for requests without a valid key.
const AnonymousPlan = "anonymous"

// planName returns the plan of r's key, or AnonymousPlan when r has no principal.
func planName(r *http.Request) string {
	if p := auth.FromContext(r.Context()); p != nil {
		return p.Plan.Name
	}
	return AnonymousPlan
}

// rejection returns the Error body of a rejected request.
func rejection(subj Subject, d Decision, secs int64) *apierr.Error {
	if d.Outcome == Suspended {
		who := "this API key"
		if subj.KeyID == 0 {
			who = "this client address"
		}
		return apierr.New(apierr.KeySuspended,
			"%s is suspended for sending requests after being rate limited; retry after %d seconds", who, secs)
	}
	w := d.Binding()
	return apierr.New(apierr.RateLimited,
		"rate limit of %d requests per %s exceeded; retry after %d seconds", w.Limit, w.Name, secs)
}

// storeFailed applies the failure policy. A request whose client has gone is dropped silently.
func (l *Limiter) storeFailed(c *gin.Context, p Policy, err error) {
	ctx := c.Request.Context()
	if ctx.Err() != nil {
		c.Abort()
		return
	}
	l.noteFailure(ctx, err)
	setHeaders(c.Writer.Header(), decision(p, raw{outcome: Allowed, now: time.Now().UnixMilli()}))
	if l.failOpen {
		c.Next()
		return
	}
	c.Header("Retry-After", "1")
	apierr.Write(c.Writer, c.Request, unavailable(err))
	c.Abort()
}

// unavailable returns the error of a request the store could not decide on, failing closed.
func unavailable(err error) *apierr.Error {
	return &apierr.Error{Code: apierr.Unavailable, Message: "rate limiting is temporarily unavailable; retry in a second", Err: err}
}

// noteFailure counts a store failure and logs it, at most once per failureLogEvery.
func (l *Limiter) noteFailure(ctx context.Context, err error) {
	n := l.storeErrors.Add(1)
	l.degraded.Store(true)
	now := time.Now().UnixNano()
	next := l.nextLog.Load()
	if now < next || !l.nextLog.CompareAndSwap(next, now+int64(failureLogEvery)) {
		return
	}
	l.log.ErrorContext(ctx, "rate-limit store failed", "err", err, "fail_open", l.failOpen,
		"store_errors_total", n)
}

// storeAnswered logs the first success after failures.
func (l *Limiter) storeAnswered(ctx context.Context) {
	if l.degraded.Load() && l.degraded.Swap(false) {
		l.nextLog.Store(0)
		l.log.InfoContext(ctx, "rate-limit store answers again", "store_errors_total", l.storeErrors.Load())
	}
}

// Charge charges one request of p's key outside the HTTP chain (an operation sent on a
// WebSocket) and returns nil when it is admitted, else the error the request gets:
// rate_limited or key_suspended, whose message says when to retry, or unavailable when the
// store fails and the limiter fails closed.
func (l *Limiter) Charge(ctx context.Context, p *auth.Principal) error {
	subj := KeySubject(p.KeyID)
	d, err := l.store.Take(ctx, subj, Policy{PerMinute: p.Plan.PerMinute, PerDay: p.Plan.PerDay, Suspension: l.suspend})
	if err != nil {
		l.noteFailure(ctx, err)
		if l.failOpen {
			return nil
		}
		return unavailable(err)
	}
	l.storeAnswered(ctx)
	if l.observe != nil {
		l.observe(d.Outcome, p.Plan.Name)
	}
	if d.Outcome == Allowed {
		return nil
	}
	return rejection(subj, d, int64(d.RetryAfter()/time.Second))
}

// Suspended returns the keys of ids that are suspended now; it charges nothing and counts
// nothing toward a suspension. In Redis the checks go in pipelines of their own, 1,000 keys
// to a round trip (RedisCounters). When the store fails, the failure policy applies: failing
// open, no key is known to be suspended; failing closed, it returns the unavailable error.
func (l *Limiter) Suspended(ctx context.Context, ids []int64) (map[int64]bool, error) {
	const unlimited = 1 << 50 // no window binds: only a suspension rejects
	p := Policy{PerMinute: unlimited, PerDay: unlimited, Suspension: l.suspend}
	subjs := make([]Subject, len(ids))
	for i, id := range ids {
		subjs[i] = KeySubject(id)
	}
	ds, err := checkAll(ctx, l.store, subjs, p)
	if err != nil {
		l.noteFailure(ctx, err)
		if l.failOpen {
			return nil, nil
		}
		return nil, unavailable(err)
	}
	l.storeAnswered(ctx)
	out := map[int64]bool{}
	for i, d := range ds {
		if d.Outcome == Suspended {
			out[ids[i]] = true
		}
	}
	return out, nil
}

// ClientAddr returns the client address of r (clientaddr) as the limiter counts it, IPv6 by
// its /64 (see the package documentation): "a:203.0.113.7".
func (l *Limiter) ClientAddr(r *http.Request) string {
	return AddrSubject(clientaddr.From(r)).String()
}
