package webhooks

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// maxPerEndpoint bounds the deliveries of one endpoint one instance sends at a time, so that
// a slow receiver holds at most its share of the instance's maxInFlight. Its deliveries beyond
// it wait for a connection to its host anyway (maxPerHost); and it is enough for a fast
// receiver: 64 in flight carry 5,000 deliveries a second to a receiver that answers within
// 12.8 ms (64 / 5,000 s).
const maxPerEndpoint = maxPerHost

// maxHeldPerEndpoint bounds the deliveries of one endpoint one instance holds: in flight, or
// waiting for one of its maxPerEndpoint to end. Waiting behind at most maxPerEndpoint others,
// each begins within the timeout of the latest of them, inside its lease (2 timeouts); a fast
// receiver's bursts (a fan-out queues up to 500 pets an endpoint) go through it in a few
// rounds.
const maxHeldPerEndpoint = 2 * maxPerEndpoint

// maxHeld bounds the deliveries one instance holds, in flight or waiting: what
// maxInFlight/maxPerEndpoint (8) endpoints hold at their bound. One waiting for one of the
// instance's maxInFlight waits behind at most maxInFlight others, so it too begins within the
// timeout.
const maxHeld = 2 * maxInFlight

// lanes counts the deliveries the instance holds, by endpoint, and bounds them: those it
// cannot hold are put back in the queue, due at once, rather than waited for.
type lanes struct {
	mu     sync.Mutex
	held   int
	behind bool // a delivery was put back since the instance held all it may
	by     map[string]*lane
}

// lane is one endpoint's deliveries held: their number, and one token in sem a delivery in
// flight.
type lane struct {
	held   int
	behind bool // a delivery was put back since the endpoint held all it may
	sem    chan struct{}
}

// take holds a delivery of endpoint and returns its lane's tokens, or nil when the endpoint
// or the instance holds all it may; it then marks them behind.
func (l *lanes) take(endpoint string) chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held >= maxHeld {
		l.behind = true
		return nil
	}
	ln := l.by[endpoint]
	if ln == nil {
		if l.by == nil {
			l.by = map[string]*lane{}
		}
		ln = &lane{sem: make(chan struct{}, maxPerEndpoint)}
		l.by[endpoint] = ln
	} else if ln.held >= maxHeldPerEndpoint {
		ln.behind = true
		return nil
	}
	ln.held++
	l.held++
	return ln.sem
}

// leave lets go of a delivery of endpoint that take held, and reports whether a claim is due:
// the endpoint, or the instance, was behind and now holds at most half of what it may.
func (l *lanes) leave(endpoint string) (claim bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held--
	if l.behind && l.held <= maxHeld/2 {
		l.behind, claim = false, true
	}
	ln := l.by[endpoint]
	ln.held--
	if ln.behind && ln.held <= maxHeldPerEndpoint/2 {
		ln.behind, claim = false, true
	}
	if ln.held == 0 {
		delete(l.by, endpoint)
	}
	return claim
}

// room returns how many more deliveries the instance may hold, and the endpoints that hold
// all theirs, whose deliveries a claim leaves.
func (l *lanes) room() (int, []any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var full []any
	for id, ln := range l.by {
		if ln.held >= maxHeldPerEndpoint {
			full = append(full, id)
		}
	}
	return maxHeld - l.held, full
}

// dispatch sends each of jobs in a goroutine of its own, its result to the writer, once its
// endpoint has one of its maxPerEndpoint and the instance one of its maxInFlight; it never
// waits. A job its endpoint or the instance cannot hold is put back, due at once, under its
// webhook-id: the next claim that has room takes it.
func (d *Dispatcher) dispatch(ctx context.Context, jobs []job) {
	var back []any
	for _, j := range jobs {
		sem := d.lanes.take(j.EndpointID)
		if sem == nil {
			back = append(back, j.ID)
			continue
		}
		d.inflight.Go(func() {
			defer d.leave(j.EndpointID)
			if !acquire(ctx, sem) {
				return
			}
			defer func() { <-sem }()
			if !acquire(ctx, d.slots) {
				return
			}
			defer func() { <-d.slots }()
			if time.Until(j.until) < d.opts.Timeout { // its lease ends first: claimed again then
				d.Metrics.deferred.Inc()
				return
			}
			d.results <- d.send(ctx, j)
		})
	}
	d.putBack(ctx, back)
}

// acquire takes a token of sem, and reports whether it did before ctx ended.
func acquire(ctx context.Context, sem chan struct{}) bool {
	select {
	case sem <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// leave lets go of a delivery of endpoint, and wakes Run to claim when deliveries put back
// have room again.
func (d *Dispatcher) leave(endpoint string) {
	if d.lanes.leave(endpoint) {
		select {
		case d.room <- struct{}{}:
		default:
		}
	}
}

// putBack makes the claimed deliveries ids due at once, their attempts unchanged; one that it
// fails to put back is sent again once its lease ends.
func (d *Dispatcher) putBack(ctx context.Context, ids []any) {
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, d.opts.DBTimeout)
	defer cancel()
	err := d.db.WithContext(ctx).Exec("UPDATE webhook_deliveries SET next_attempt_at = ? WHERE status = ? AND id IN ("+placeholders(len(ids))+")",
		append([]any{time.Now().UTC(), statusPending}, ids...)...).Error
	if err != nil {
		slog.WarnContext(ctx, "webhooks: putting deliveries back failed; they are sent again after their lease", "error", err)
		return
	}
	d.Metrics.deferred.Add(float64(len(ids)))
}
