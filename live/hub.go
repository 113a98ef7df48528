// Package live delivers the petAdded subscription: which pets a subscriber gets, in which
// order, and when a connection is refused or cut off.
//
// # From commit to subscriber
//
// A writer calls Hub.Publish with the id of a pet once its transaction committed
// (store.OnCommit). Publish only wakes things up: the Hub of this instance, and through
// Redis pub/sub (Bus) the Hubs of every other instance. Each Hub then reads the pets above
// its mark, the id up to which it has dispatched every pet, with the listing's statement
// (pets.Store.After: on MySQL a locking read that waits for every uncommitted lower id
// to commit or roll back), and hands them out in id order. So a subscriber never gets a pet
// whose transaction rolled back, never gets a higher id before a lower one that commits later,
// and gets the pets of every instance whatever Redis does: a lost message (Redis down, a
// subscriber reconnecting) is made up by the next read, at the latest the Hub's poll
// (PollEvery).
//
// # Resume
//
// A subscription with after first joins the Hub, whose events it buffers, then pages through
// the database from after, then sends the buffered events above the last pet it sent: no pet
// is skipped or sent twice across the switch. The subscribe operation pays for the first page;
// each further page (readPage pets) is charged to the key as one request, as a page of the
// listing is, and a refused charge ends the subscription with the refusal (when to retry),
// the pets sent so far carrying their cursors to resume from.
//
// # Bounds
//
// Each subscription has a buffer of Buffer events. A subscriber whose buffer is full when an
// event comes falls back to paging through the database, as a resume does, each page charged;
// one that takes no event for SlowAfter is cut off (Conn.Cut, the close saying why) rather
// than kept growing, and resumes with the cursor of the last event it got.
package live

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"petstore/apierr"
	"petstore/models"
)

// Event is one pet added, as the petAdded subscription sends it. Events are shared by every
// subscriber: never change one (but through Render, which keeps what it renders).
type Event struct {
	Cursor string
	Pet    *models.Pet

	renderings atomic.Pointer[Rendering] // the newest first
}

// ReadFunc reads up to n pets after afterID in id order, only those of status when it is not
// nil, and reports whether more follow. It must never return a pet while a lower id may still
// commit (pets.Store.After).
type ReadFunc func(ctx context.Context, afterID int64, n int, status *models.PetStatus) ([]models.Pet, bool, error)

// Defaults of HubOptions.
const (
	DefaultBuffer    = 32
	DefaultPollEvery = 2 * time.Second
	readPage         = 100
)

// HubOptions are the settings of a Hub; zero fields take the defaults.
type HubOptions struct {
	// Read reads the pets (required).
	Read ReadFunc
	// LastID returns the highest pet id stored: the mark of a Hub that starts (required).
	LastID func(ctx context.Context) (int64, error)
	// Bus carries the wake-ups between instances; nil: this instance only.
	Bus Bus
	// Buffer is how many events a subscription may have unsent before it is cut off
	// (default DefaultBuffer).
	Buffer int
	// PollEvery is how often a Hub with subscribers reads the database without being woken
	// (default DefaultPollEvery): what bounds the delay of a pet whose wake-up was lost.
	PollEvery time.Duration
	// SlowAfter is how long a subscriber may leave its full buffer unread before it is cut off
	// (default 10 s).
	SlowAfter time.Duration
	// Metrics counts subscriptions and events; nil: counted but not exported.
	Metrics *Metrics
}

// Hub hands out the pets added to every subscription of this instance. Its goroutines (one
// reading the database, one listening to the Bus, one publishing to it) start with the first
// subscription or Publish, and stop with Close.
type Hub struct {
	opts    HubOptions
	metrics *Metrics

	wake      chan struct{} // cap 1: the reader has something to read
	published atomic.Int64  // highest id published on this instance
	pubWake   chan struct{} // cap 1: the publisher has an id to send

	startOnce sync.Once
	ctx       context.Context
	stop      context.CancelFunc
	done      sync.WaitGroup

	mu     sync.Mutex
	mark   int64 // every pet up to mark has been dispatched
	subs   map[*sub]struct{}
	closed bool
}

// NewHub returns a Hub with opts.
func NewHub(opts HubOptions) *Hub {
	if opts.Buffer <= 0 {
		opts.Buffer = DefaultBuffer
	}
	if opts.PollEvery <= 0 {
		opts.PollEvery = DefaultPollEvery
	}
	if opts.SlowAfter <= 0 {
		opts.SlowAfter = 10 * time.Second
	}
	m := opts.Metrics
	if m == nil {
		m = NewMetrics()
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Hub{opts: opts, metrics: m, wake: make(chan struct{}, 1), pubWake: make(chan struct{}, 1),
		ctx: ctx, stop: stop, subs: map[*sub]struct{}{}}
}

// start starts the goroutines, once.
func (h *Hub) start() {
	h.startOnce.Do(func() {
		h.done.Add(1)
		go func() { defer h.done.Done(); h.readLoop() }()
		if h.opts.Bus != nil {
			h.done.Add(2)
			go func() { defer h.done.Done(); h.opts.Bus.Listen(h.ctx, h.poke) }()
			go func() { defer h.done.Done(); h.publishLoop() }()
		}
	})
}

// Close stops the Hub's goroutines. It does not close the subscribers' connections
// (Registry.Shutdown does).
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.stop()
	h.done.Wait()
}

// Publish tells every instance that the pet with id committed. It never blocks: the wake-ups
// of many pets are sent as one.
func (h *Hub) Publish(id int64) {
	for {
		cur := h.published.Load()
		if id <= cur || h.published.CompareAndSwap(cur, id) {
			break
		}
	}
	h.poke()
	if h.opts.Bus != nil {
		h.start()
		select {
		case h.pubWake <- struct{}{}:
		default:
		}
	}
}

// poke wakes the reader.
func (h *Hub) poke() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// publishLoop sends the highest id published to the Bus at each wake-up.
func (h *Hub) publishLoop() {
	var sent int64
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-h.pubWake:
		}
		id := h.published.Load()
		if id <= sent {
			continue
		}
		ctx, cancel := context.WithTimeout(h.ctx, time.Second)
		err := h.opts.Bus.Publish(ctx, id)
		cancel()
		if err != nil {
			h.metrics.busErrors.Inc()
			logEvery(&h.metrics.lastBusLog, "live: publishing to Redis failed; other instances read the pet at their next poll", err)
			continue
		}
		sent = id
	}
}

// readLoop reads and dispatches the pets above the mark at each wake-up and every PollEvery.
func (h *Hub) readLoop() {
	t := time.NewTicker(h.opts.PollEvery)
	defer t.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-h.wake:
		case <-t.C:
		}
		if h.idle() {
			continue
		}
		if err := h.catchUp(); err != nil && h.ctx.Err() == nil {
			h.metrics.readErrors.Inc()
			logEvery(&h.metrics.lastReadLog, "live: reading new pets failed; retrying at the next poll", err)
		}
	}
}

// idle reports whether no subscription would get what a read finds: the mark then moves at
// the next read with subscribers.
func (h *Hub) idle() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs) == 0
}

// catchUp dispatches every pet above the mark.
func (h *Hub) catchUp() error {
	for {
		h.mu.Lock()
		mark := h.mark
		h.mu.Unlock()
		pets, more, err := h.opts.Read(h.ctx, mark, readPage, nil)
		if err != nil {
			return err
		}
		h.dispatch(pets)
		if !more {
			return nil
		}
	}
}

// dispatch hands pets, in id order above the mark, to every subscription.
func (h *Hub) dispatch(pets []models.Pet) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range pets {
		p := &pets[i]
		if p.ID <= h.mark {
			continue
		}
		ev := &Event{Cursor: models.EncodeCursor(p.ID), Pet: p}
		for s := range h.subs {
			s.offer(ev)
		}
		h.mark = p.ID
	}
}

// notReady is the answer to a subscription while the database cannot tell where to start.
const notReady = "cannot start a subscription now: the database does not answer; retry later"

// join registers s. The first subscription of an idle Hub sets the mark to the highest id
// stored: the reader does not read while nobody listens.
func (h *Hub) join(ctx context.Context, s *sub) error {
	for {
		h.mu.Lock()
		idle := len(h.subs) == 0
		h.mu.Unlock()
		var id int64
		if idle {
			var err error
			if id, err = h.opts.LastID(ctx); err != nil {
				return &apierr.Error{Code: apierr.Unavailable, Message: notReady, Err: err}
			}
		}
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return errShuttingDown
		}
		if len(h.subs) == 0 {
			if !idle {
				h.mu.Unlock()
				continue // the others left meanwhile: read the mark
			}
			h.mark = max(h.mark, id)
		}
		h.subs[s] = struct{}{}
		h.mu.Unlock()
		return nil
	}
}

// Subscribe returns the events of the pets added from now on (of status when it is not nil),
// after the pets above afterID when resume is true, until ctx ends or c is cut off, when the
// channel is closed. It returns an unavailable error while the database cannot tell where to
// start.
func (h *Hub) Subscribe(ctx context.Context, c *Conn, status *models.PetStatus, afterID int64, resume bool) (<-chan *Event, error) {
	s := &sub{hub: h, ctx: ctx, conn: c, status: status, ch: make(chan *Event, h.opts.Buffer), catching: resume,
		sent: afterID, queued: afterID}
	if err := h.join(ctx, s); err != nil {
		return nil, err
	}
	h.start()
	h.metrics.active.Inc()
	context.AfterFunc(ctx, func() { h.leave(s) })
	if resume {
		go s.resume(ctx, afterID, true)
	}
	return s.ch, nil
}

// errShuttingDown answers a subscription that comes once the instance drains.
var errShuttingDown = &apierr.Error{Code: apierr.Unavailable, Message: "the instance is shutting down; subscribe again"}

// leave removes s once its subscriber has gone.
func (h *Hub) leave(s *sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.remove(s)
}

// remove takes s out of the Hub's subscriptions unless it is out already (it left, or was cut
// off); h.mu is held.
func (h *Hub) remove(s *sub) {
	if _, ok := h.subs[s]; ok {
		delete(h.subs, s)
		h.metrics.active.Dec()
	}
}

// Active returns how many subscriptions the Hub serves.
func (h *Hub) Active() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

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

// ReasonSlow is the close reason of a subscriber that does not keep up.
const ReasonSlow = "subscriber too slow: its buffer of events is full; reconnect and resume with after"

// offer gives ev to s; hub.mu is held. A subscriber whose buffer is full falls back to the
// database: its resume goroutine pages from the last event it was given, as many times as it
// takes to catch up, and cuts it off when it does not take an event for
// RegistryOptions.WriteTimeout. A burst of pets thus costs a subscriber that keeps reading
// nothing, and one that stops reading holds at most its buffer and a page.
func (s *sub) offer(ev *Event) {
	if ev.Pet.ID <= s.sent || s.status != nil && (ev.Pet.Status == nil || *ev.Pet.Status != *s.status) {
		return
	}
	if s.catching {
		if len(s.pending) < cap(s.ch) {
			s.pending = append(s.pending, ev)
		} else {
			s.overflow = true
		}
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

// resume sends the pets above afterID from the database, then the events buffered meanwhile
// above the last pet sent, then leaves the sending to the Hub. Each page read is charged to the
// subscriber's key as a list request (charge) but the first when paid: a subscription's
// resume, which the subscribe operation paid for. A refused charge ends the subscription with
// its error; the pets sent carry their cursors, to resume from.
func (s *sub) resume(ctx context.Context, afterID int64, paid bool) {
	h := s.hub
	last := afterID
	for page := 0; ; page++ {
		if page > 0 || !paid {
			if err := s.charge(ctx); err != nil {
				if ctx.Err() != nil {
					return // the subscriber left
				}
				h.mu.Lock()
				if !s.cut {
					s.endWith(apierr.From(err))
				}
				close(s.ch)
				h.mu.Unlock()
				return
			}
		}
		pets, more, err := h.opts.Read(ctx, last, readPage, s.status)
		if err != nil {
			h.mu.Lock()
			if !s.cut {
				s.cutOff("the database did not answer while resuming; reconnect and resume with after", CloseRetry)
			}
			close(s.ch)
			h.mu.Unlock()
			return
		}
		for i := range pets {
			ev := &Event{Cursor: models.EncodeCursor(pets[i].ID), Pet: &pets[i]}
			if !s.send(ctx, ev) {
				return
			}
			last = pets[i].ID
		}
		h.mu.Lock()
		if (more || s.overflow) && !s.cut {
			s.overflow, s.pending = false, nil
			h.mu.Unlock()
			continue
		}
		if s.cut {
			close(s.ch)
			h.mu.Unlock()
			return
		}
		s.catching, s.sent, s.queued = false, last, last
		pending := s.pending
		s.pending = nil
		for _, ev := range pending {
			if !s.cut {
				s.offer(ev) // skips those up to last
			}
		}
		h.mu.Unlock()
		return
	}
}

// charge charges one request to the subscriber's key for a page read from the database, as a
// page of the listing is charged (Conn.charge); without a connection it charges nothing.
func (s *sub) charge(ctx context.Context) error {
	if s.conn == nil {
		return nil
	}
	return s.conn.charge(ctx)
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

// send puts ev in s.ch for the resume goroutine; it cuts s off when the subscriber takes
// nothing for the write timeout, and reports whether to go on.
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
		s.hub.mu.Lock()
		if !s.cut {
			s.cutOff(ReasonSlow, CloseSlow)
		}
		close(s.ch)
		s.hub.mu.Unlock()
		return false
	}
}

// logEvery logs msg with err at most once every 10 seconds, last holding the time of the last
// line.
func logEvery(last *atomic.Int64, msg string, err error) {
	now := time.Now().UnixNano()
	prev := last.Load()
	if now-prev < int64(10*time.Second) || !last.CompareAndSwap(prev, now) {
		return
	}
	if errors.Is(err, context.Canceled) {
		return
	}
	slog.Warn(msg, "err", err)
}
