package live

import (
	"context"

	"petstore/apierr"
)

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

// reasonReadFailed cuts off a subscriber whose resume could not read the database.
const reasonReadFailed = "the database did not answer while resuming; reconnect and resume with after"

// resume sends the pets above afterID from the database, then the events buffered meanwhile
// above the last pet sent, then leaves the sending to the Hub. Each page read is charged to
// the subscriber's key as a list request but the first when paid (a subscription's resume,
// which the subscribe operation paid for). A refused charge ends the subscription with its
// error; the pets sent carry their cursors, to resume from.
func (s *sub) resume(ctx context.Context, afterID int64, paid bool) {
	last := afterID
	for page := 0; ; page++ {
		if (page > 0 || !paid) && !s.chargePage(ctx) {
			return
		}
		next, more, ok := s.sendPage(ctx, last)
		if !ok {
			return
		}
		last = next
		if !s.pageAgain(more, last) {
			return
		}
	}
}

// chargePage charges a page about to be read, and reports whether it may be; a refusal ends
// the subscription with it.
func (s *sub) chargePage(ctx context.Context) bool {
	err := s.charge(ctx)
	if err == nil {
		return true
	}
	if ctx.Err() == nil { // else the subscriber left
		s.stopWith(func() { s.endWith(apierr.From(err)) })
	}
	return false
}

// charge charges one request to the subscriber's key for a page read from the database, as a
// page of the listing is charged (Conn.Charge); without a connection it charges nothing.
func (s *sub) charge(ctx context.Context) error {
	if s.conn == nil {
		return nil
	}
	return s.conn.Charge(ctx, 1)
}

// sendPage reads the page of pets after afterID and sends them; it returns the last id sent,
// whether more pets follow, and whether to go on.
func (s *sub) sendPage(ctx context.Context, afterID int64) (int64, bool, bool) {
	pets, more, err := s.hub.opts.Read(ctx, afterID, readPage, s.status)
	if err != nil {
		s.stopWith(func() { s.cutOff(reasonReadFailed, CloseRetry) })
		return afterID, false, false
	}
	last := afterID
	for i := range pets {
		if !s.send(ctx, newEvent(&pets[i])) {
			return last, false, false
		}
		last = pets[i].ID
	}
	return last, more, true
}

// pageAgain reports whether another page is to be read: more follow, or the Hub's events
// overflowed pending meanwhile. Otherwise it hands s over to the Hub, last being the last id
// sent, unless s was cut off.
func (s *sub) pageAgain(more bool, last int64) bool {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	switch {
	case s.cut:
		close(s.ch)
		return false
	case more || s.overflow:
		s.overflow, s.pending = false, nil
		return true
	}
	s.catching, s.sent, s.queued = false, last, last
	pending := s.pending
	s.pending = nil
	for _, ev := range pending {
		if !s.cut {
			s.offer(ev) // skips those up to last
		}
	}
	return false
}
