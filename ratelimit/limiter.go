package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"

	"golang.org/x/time/rate"

	"petstore/auth"
	"petstore/clientaddr"
)

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
	allowed    recentReads                                 // keys whose over-budget read was allowed a moment ago
	listed     func(ctx context.Context, hash string) bool // Config.Listed; nil for none

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
		listed:   cfg.Listed,
	}
	if n := cfg.OverBudgetKeyReads; n > 0 {
		l.overBudget = rate.NewLimiter(rate.Limit(n), n)
	}
	return l, nil
}

// StoreErrors returns how many decisions the store failed to make since the Limiter started
// (each one admitted or answered 503, as Config.FailOpen says).
func (l *Limiter) StoreErrors() uint64 { return l.storeErrors.Load() }

// subject returns who r is charged to and under which limits.
func (l *Limiter) subject(r *http.Request) (Subject, Policy) {
	if p := auth.FromContext(r.Context()); p != nil {
		return KeySubject(p.KeyID), l.keyPolicy(p)
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

// ClientAddr returns the client address of r (clientaddr) as the limiter counts it, IPv6 by
// its /64 (see the package documentation): "a:203.0.113.7".
func (l *Limiter) ClientAddr(r *http.Request) string {
	return AddrSubject(clientaddr.From(r)).String()
}
