package live

import (
	"context"
	"sync"
	"time"

	"petstore/apierr"
	"petstore/models"
)

// fanOut is the set of the subscriptions of a Hub, under the lock that its reader and every
// subscription's resume goroutine take to hand events over: what a subscription needs of its
// Hub.
type fanOut struct {
	opts    HubOptions
	metrics *Metrics

	mu     sync.Mutex
	mark   int64 // every pet up to mark has been dispatched
	subs   map[*sub]struct{}
	closed bool
}

// remove takes s out of the subscriptions unless it is out already (it left, or was cut
// off); h.mu is held.
func (h *fanOut) remove(s *sub) {
	if _, ok := h.subs[s]; ok {
		delete(h.subs, s)
		h.metrics.active.Dec()
	}
}

// sub is one subscription.
type sub struct {
	hub    *fanOut
	ctx    context.Context // the subscriber's
	conn   Conn            // nil: none (tests)
	status *models.PetStatus
	ch     chan *Event
	// While catching is true the resume goroutine sends to ch and the Hub appends to pending;
	// then the Hub sends to ch. Both under hub.mu.
	catching bool
	pending  []*Event
	overflow bool  // pending was full: page through the database again before the switch
	queued   int64 // the highest id put in ch
	cut      bool
	// sent is the highest id sent from the database: the Hub, whose mark may lag behind the
	// pages read, skips the pets up to it.
	sent int64
}

// wants reports whether ev is for s: above what it was sent from the database, of its status.
func (s *sub) wants(ev *Event) bool {
	if ev.Pet.ID <= s.sent {
		return false
	}
	return s.status == nil || ev.Pet.Status != nil && *ev.Pet.Status == *s.status
}

// hold keeps ev for the switch from the database to the Hub, up to a buffer's worth (then the
// resume pages again); hub.mu is held.
func (s *sub) hold(ev *Event) {
	if len(s.pending) < cap(s.ch) {
		s.pending = append(s.pending, ev)
	} else {
		s.overflow = true
	}
}

// send puts ev in s.ch for the resume goroutine; it cuts s off when the subscriber takes
// nothing for SlowAfter, and reports whether to go on.
func (s *sub) send(ctx context.Context, ev *Event) bool {
	select {
	case s.ch <- ev:
		s.hub.metrics.delivered.Inc()
		return true
	default:
	}
	t := time.NewTimer(s.hub.opts.SlowAfter)
	defer t.Stop()
	select {
	case s.ch <- ev:
		s.hub.metrics.delivered.Inc()
		return true
	case <-ctx.Done():
		return false
	case <-t.C:
		s.stopWith(func() { s.cutOff(ReasonSlow, CloseSlow) })
		return false
	}
}

// stopWith runs end unless s was cut off already, and closes its channel: what the resume
// goroutine, which sends to it, does as it stops.
func (s *sub) stopWith(end func()) {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	if !s.cut {
		end()
	}
	close(s.ch)
}

// cutOff removes s from the Hub and closes its connection with code and reason; hub.mu is
// held. Its channel is closed by whoever sends to it: here, or the resume goroutine.
func (s *sub) cutOff(reason string, code int) {
	s.hub.remove(s) // unless its subscriber left meanwhile
	s.cut = true
	if !s.catching {
		close(s.ch)
	}
	if s.conn != nil {
		s.conn.Cut(code, reason)
	}
}

// endWith removes s from the Hub and ends its subscription with err, not its connection: the
// protocol's error message of the operation on a WebSocket, an error event before complete on
// an SSE stream; hub.mu is held. Its channel is closed by whoever sends to it.
func (s *sub) endWith(err *apierr.Error) {
	s.hub.remove(s)
	s.cut = true
	if s.conn != nil {
		s.conn.End(s.ctx, err)
	}
	if !s.catching {
		close(s.ch)
	}
}
