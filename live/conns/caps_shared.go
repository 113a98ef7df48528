package conns

import (
	"context"
	"time"

	"petstore/apierr"
	"petstore/live"
)

// ReasonOverCap is the close reason of a connection whose slot the Redis of the caps lost while
// other instances gave the key's free slots to new holders: it would take the key past its cap.
const ReasonOverCap = "the API key holds as many connections or subscriptions as its plan allows on other instances; retry once one closes"

// slotNames names the kinds of slots in refusals.
var slotNames = map[string]string{"conns": "connections", "subs": "subscriptions"}

// share takes, with Leases, a lease of each of kinds ("conns", "subs") for c under its key's
// cap n, counted on every instance, and returns what lets them go; without Leases it does
// nothing. Over the cap it refuses as this instance's cap does. When Redis fails,
// RegistryOptions.FailOpen decides: the slots are held here (renewals add their leases once
// Redis answers, while the key is under its cap), or refused as unavailable. A lease that a
// renewal finds lost and cannot add again under the cap cuts c off (CloseRetry,
// ReasonOverCap, counted as over_cap): the client may come back once the key has room.
func (r *Registry) share(ctx context.Context, c *Conn, n int, kinds ...string) (func(), error) {
	l := r.opts.Leases
	if l == nil {
		return func() {}, nil
	}
	sets := make([]string, len(kinds))
	for i, kind := range kinds {
		sets[i] = l.set(kind, c.KeyID)
	}
	tokens := l.tokens(sets)
	full, err := l.take(ctx, sets, tokens, n)
	if err == nil && full >= 0 {
		return nil, tooMany(slotNames[kinds[full]], n, c.plan)
	}
	if err != nil {
		if err := r.takeFailed(ctx, err); err != nil {
			l.drop(sets, tokens)
			return nil, err
		}
	}
	l.keep(sets, tokens, n, func() { c.cutAs("over_cap", live.CloseRetry, ReasonOverCap) })
	return func() { l.releaseEach(sets, tokens) }, nil
}

// takeFailed returns the refusal of slots whose leases Redis did not take (err): the
// client's context error when it has gone, unavailable when failing closed, nil when failing
// open (the slots are then held on this instance).
func (r *Registry) takeFailed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	r.leaseFailed(err)
	if r.opts.FailOpen {
		return nil
	}
	return &apierr.Error{Code: apierr.Unavailable, Err: err,
		Message: "cannot count this API key's subscriptions on every instance now; retry in a second"}
}

// startLeasing starts Leases.run with the first connection; r.mu is held.
func (r *Registry) startLeasing() {
	if r.opts.Leases == nil || r.leasing != nil {
		return
	}
	done := make(chan struct{})
	r.leasing = done
	go func() {
		defer close(done)
		r.opts.Leases.run(r.ctx, r.leaseFailed)
	}()
}

// stopLeasing waits for Leases.run, started or not (leasing), and lets every lease go at once,
// so that their clients reconnect to other instances without waiting for LeaseFor.
func (r *Registry) stopLeasing(leasing chan struct{}) {
	if leasing == nil {
		return
	}
	<-leasing
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := r.opts.Leases.releaseAll(ctx); err != nil {
		r.leaseFailed(err)
	}
}

// leaseFailed counts and logs a failure of the Redis of Leases.
func (r *Registry) leaseFailed(err error) {
	r.metrics.capErrors.Inc()
	r.metrics.capLog.Warn("live: the Redis of the subscription caps failed; caps fall back to this instance's "+
		"(or new subscriptions are refused, failing closed) until it answers", err)
}
