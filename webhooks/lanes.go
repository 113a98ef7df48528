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

// maxHeldPerEndpoint bounds the deliveries of one endpoint one instance holds, in flight or
// queued for one of its maxPerEndpoint: a fan-out's page of a fast receiver (fanOutBatch) fits
// in it. Those of a slow receiver whose lease would end before their timeout are not sent.
const maxHeldPerEndpoint = maxPerEndpoint + fanOutBatch

// maxHeld bounds the deliveries one instance holds: what maxInFlight/maxPerEndpoint (8)
// endpoints hold at their bound, a few hundred bytes each.
const maxHeld = maxInFlight / maxPerEndpoint * maxHeldPerEndpoint

// lanes holds the deliveries the instance sends, in a queue by endpoint, and picks those to
// send next: at most maxInFlight at a time, at most maxPerEndpoint of one endpoint, taking
// the endpoints with deliveries to send in turn. Those it cannot hold are put back in the
// database, due at once, rather than waited for.
type lanes struct {
	mu      sync.Mutex
	held    int // in flight or queued
	sending int
	behind  bool     // a delivery was put back since the instance held all it may
	ready   []string // the endpoints with a delivery queued and room to send it, in turn
	by      map[string]*lane
}

// lane is one endpoint's deliveries held.
type lane struct {
	held    int
	sending int
	queue   []job
	ready   bool // it is in lanes.ready
	behind  bool // a delivery was put back since the endpoint held all it may
}

// hold queues j, and reports whether it could: not when its endpoint or the instance holds
// all it may, which it then marks behind.
func (l *lanes) hold(j job) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held >= maxHeld {
		l.behind = true
		return false
	}
	ln := l.by[j.EndpointID]
	if ln == nil {
		if l.by == nil {
			l.by = map[string]*lane{}
		}
		ln = &lane{}
		l.by[j.EndpointID] = ln
	} else if ln.held >= maxHeldPerEndpoint {
		ln.behind = true
		return false
	}
	ln.held++
	l.held++
	ln.queue = append(ln.queue, j)
	l.mark(j.EndpointID, ln)
	return true
}

// mark puts the lane of endpoint in turn when it has a delivery queued and room to send it.
func (l *lanes) mark(endpoint string, ln *lane) {
	if !ln.ready && len(ln.queue) > 0 && ln.sending < maxPerEndpoint {
		ln.ready = true
		l.ready = append(l.ready, endpoint)
	}
}

// next returns the delivery to send next, if the instance has room to send one, counting it
// in flight.
func (l *lanes) next() (job, bool) {
	if l.sending >= maxInFlight || len(l.ready) == 0 {
		return job{}, false
	}
	endpoint := l.ready[0]
	l.ready = l.ready[1:]
	ln := l.by[endpoint]
	j := ln.queue[0]
	ln.queue[0] = job{}
	ln.queue = ln.queue[1:]
	ln.ready = false
	ln.sending++
	l.sending++
	l.mark(endpoint, ln)
	return j, true
}

// start returns the deliveries to send now, counted in flight.
func (l *lanes) start() []job {
	l.mu.Lock()
	defer l.mu.Unlock()
	var jobs []job
	for j, ok := l.next(); ok; j, ok = l.next() {
		jobs = append(jobs, j)
	}
	return jobs
}

// done lets go of the delivery of endpoint that was in flight, and returns the delivery to
// send next in its place, if any; claim reports whether a claim is due: the endpoint, or the
// instance, was behind and now holds at most half of what it may.
func (l *lanes) done(endpoint string) (next job, more, claim bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held--
	l.sending--
	if l.behind && l.held <= maxHeld/2 {
		l.behind, claim = false, true
	}
	ln := l.by[endpoint]
	ln.held--
	ln.sending--
	if ln.behind && ln.held <= maxHeldPerEndpoint/2 {
		ln.behind, claim = false, true
	}
	if ln.held == 0 {
		delete(l.by, endpoint)
	} else {
		l.mark(endpoint, ln)
	}
	next, more = l.next()
	return next, more, claim
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

// dispatch queues jobs and starts sending those the lanes pick, each in a goroutine that then
// sends the next pick in its place; it never waits. A job its endpoint or the instance cannot
// hold is put back, due at once, under its webhook-id: the next claim that has room takes it.
func (d *Dispatcher) dispatch(ctx context.Context, jobs []job) {
	var back []any
	for _, j := range jobs {
		if !d.lanes.hold(j) {
			back = append(back, j.ID)
		}
	}
	for _, j := range d.lanes.start() {
		d.inflight.Go(func() { d.work(ctx, j) })
	}
	d.putBack(ctx, back)
}

// work sends j, then each delivery the lanes pick in its place, until they pick none or ctx
// ends; it wakes Run to claim when deliveries put back have room again. A delivery whose
// lease would end before its timeout is not sent: the lease brings it back.
func (d *Dispatcher) work(ctx context.Context, j job) {
	for more := true; more && ctx.Err() == nil; {
		if time.Until(j.until) < d.opts.Timeout {
			d.Metrics.deferred.Inc()
		} else {
			d.results <- d.send(ctx, j)
		}
		var claim bool
		j, more, claim = d.lanes.done(j.EndpointID)
		if claim {
			select {
			case d.room <- struct{}{}:
			default:
			}
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
