package live

import (
	"context"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"petstore/apierr"
	"petstore/models"
)

// sub is one subscription.
type sub struct {
	hub    *Hub
	ctx    context.Context // the subscriber's
	conn   *Conn
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

// offer gives ev to s; hub.mu is held. A subscriber whose buffer is full falls back to the
// database: its resume goroutine pages from the last event it was given until it catches up,
// and cuts it off when it takes no event for SlowAfter. A burst of pets thus costs a
// subscriber that keeps reading nothing, and one that stops reading holds at most its buffer
// and a page.
func (s *sub) offer(ev *Event) {
	if !s.wants(ev) {
		return
	}
	if s.catching {
		s.hold(ev)
		return
	}
	select {
	case s.ch <- ev:
		s.queued = ev.Pet.ID
		s.hub.metrics.delivered.Inc()
	default:
		s.catching, s.overflow = true, true
		go s.resume(s.ctx, s.queued, false)
	}
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
	} else {
		s.hub.metrics.cutOff.WithLabelValues(cutLabel(code)).Inc()
	}
}

// endWith removes s from the Hub and ends its subscription with err, not its connection: the
// protocol's error message of the operation on a WebSocket, an error event before complete on
// an SSE stream; hub.mu is held. Its channel is closed by whoever sends to it.
func (s *sub) endWith(err *apierr.Error) {
	s.hub.remove(s)
	s.cut = true
	switch {
	case s.conn == nil:
	case s.conn.ws: // read by the transport once the channel is closed
		transport.AddSubscriptionError(s.ctx, &gqlerror.Error{Message: err.Message,
			Extensions: map[string]any{"code": strings.ToUpper(string(err.Code))}})
	default:
		s.conn.endWith(err)
	}
	if !s.catching {
		close(s.ch)
	}
}
