package ratelimit

import (
	"context"
	"time"

	"petstore/auth"
)

// Charge charges one request of p's key outside the HTTP chain (an operation sent on a
// WebSocket) and returns nil when it is admitted, else the error the request gets:
// rate_limited or key_suspended, whose message says when to retry, or unavailable when the
// store fails and the limiter fails closed.
func (l *Limiter) Charge(ctx context.Context, p *auth.Principal) error {
	subj := KeySubject(p.KeyID)
	d, err := l.store.Take(ctx, subj, Policy{PerMinute: p.Plan.PerMinute, PerDay: p.Plan.PerDay, Suspension: l.suspend}, 1)
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
