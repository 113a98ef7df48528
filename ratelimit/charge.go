package ratelimit

import (
	"context"

	"petstore/apierr"
	"petstore/auth"
)

// Charge charges n units of p's key outside the HTTP chain (one for a request; an operation
// sent on a WebSocket its cost) and returns nil when it is admitted, else the error the request
// gets: rate_limited or key_suspended, whose message says when to retry, invalid_request for
// an operation that costs more than a window's whole limit (see spend), or unavailable when
// the store fails and the limiter fails closed.
func (l *Limiter) Charge(ctx context.Context, p *auth.Principal, n int) error {
	subj := KeySubject(p.KeyID)
	_, refusal, err := l.spend(ctx, subj, l.keyPolicy(p), int64(n), p.Plan.Name)
	switch {
	case err == nil && refusal != nil:
		return refusal
	case err == nil:
		return nil
	}
	l.noteFailure(ctx, err)
	if l.failOpen {
		return nil
	}
	return unavailable(err)
}

// spend decides a request of subj under p costing n units, plan naming p for
// Config.OnDecision, and returns the decision and, when the request is refused, its error:
// rate_limited or key_suspended when the store rejected it, or invalid_request when n is more
// than a window's whole limit, which no wait would admit: such a request is charged one unit,
// as any other refused operation is. The error is that of the store, which decided nothing.
func (l *Limiter) spend(ctx context.Context, subj Subject, p Policy, n int64, plan string) (Decision, *apierr.Error, error) {
	tooCostly := n > p.PerMinute || n > p.PerDay
	units := n
	if tooCostly {
		units = 1
	}
	d, err := l.store.Take(ctx, subj, p, units)
	if err != nil {
		return d, nil, err
	}
	l.storeAnswered(ctx)
	if l.observe != nil {
		l.observe(d.Outcome, plan)
	}
	switch {
	case d.Outcome != Allowed:
		return d, costRejection(subj, d, units), nil
	case tooCostly:
		w := d.Minute
		if p.PerDay < p.PerMinute {
			w = d.Day
		}
		return d, apierr.Invalid("this operation costs %d requests of the rate limit, more than the %d per %s this key is allowed: split it into operations with fewer root fields",
			n, w.Limit, w.Name), nil
	}
	return d, nil, nil
}

// costRejection returns the Error body of a request of n units that d rejected: rejection's,
// naming the cost when it is more than one unit.
func costRejection(subj Subject, d Decision, n int64) *apierr.Error {
	secs := retrySecs(d)
	if n <= 1 || d.Outcome != Limited {
		return rejection(subj, d, secs)
	}
	w := d.Binding()
	return apierr.New(apierr.RateLimited,
		"rate limit of %d requests per %s: this operation costs %d and %d are left; retry after %d seconds",
		w.Limit, w.Name, n, w.Remaining(), secs)
}

// keyPolicy returns the policy of p's key.
func (l *Limiter) keyPolicy(p *auth.Principal) Policy {
	return Policy{PerMinute: p.Plan.PerMinute, PerDay: p.Plan.PerDay, Suspension: l.suspend}
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
