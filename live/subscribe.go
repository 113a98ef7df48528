package live

import (
	"context"

	"petstore/apierr"
	"petstore/models"
)

// notReady answers a subscription while the database cannot tell where to start.
const notReady = "cannot start a subscription now: the database does not answer; retry later"

// errShuttingDown answers a subscription that comes once the instance drains.
var errShuttingDown = &apierr.Error{Code: apierr.Unavailable, Message: "the instance is shutting down; subscribe again"}

// Subscribe takes a subscription slot of the connection of ctx (an SSE stream holds its own
// already) until ctx ends, and returns the Hub's events: see Hub.Subscribe. Without a
// connection (a plain HTTP request) it fails.
func (r *Registry) Subscribe(ctx context.Context, status *models.PetStatus, afterID int64, resume bool) (<-chan *Event, error) {
	c := ConnFrom(ctx)
	if c == nil {
		return nil, apierr.Invalid("subscriptions run over WebSocket (graphql-transport-ws) or Server-Sent Events (Accept: text/event-stream)")
	}
	if !c.held {
		if err := c.Acquire(ctx); err != nil {
			return nil, err
		}
	}
	events, err := r.hub.Subscribe(ctx, c, status, afterID, resume)
	if rl, _ := ctx.Value(relayKey{}).(*Relay); err == nil && rl != nil && rl.src == nil {
		rl.src, rl.out = events, make(chan *Event, 1)
		return rl.out, nil
	}
	return events, err
}

// A Relay hands a subscription's events to gqlgen one at a time, so that the subscription's
// goroutine waits for the next one at the top of its stack (Wait), 0.7 KiB deep, rather than
// at the bottom of gqlgen's response interceptors, 3 KiB deep: the runtime shrinks a stack only
// while its goroutine uses less than a quarter of it, so the goroutine idles on 4 KiB, not 8.
// It holds no event of its own: Wait takes one only once gqlgen has taken the one before, so a
// subscriber's backlog is its buffer, as without it.
type Relay struct {
	src <-chan *Event // the Hub's, once Subscribe ran under the Relay
	out chan *Event   // gqlgen's, of one event
}

type relayKey struct{}

// WithRelay returns ctx with a new Relay, under which Registry.Subscribe returns the Relay's
// channel instead of the Hub's: the executor of a subscription dispatched with ctx calls Wait
// before each of its responses.
func WithRelay(ctx context.Context) (context.Context, *Relay) {
	rl := &Relay{}
	return context.WithValue(ctx, relayKey{}, rl), rl
}

// Wait waits until the next event of the subscription is in the channel gqlgen reads, its end
// (the channel closed) or ctx's end; it returns at once when no subscription ran under the
// Relay (one refused) or gqlgen has not taken the last event yet. Only the subscription's
// goroutine calls it.
func (rl *Relay) Wait(ctx context.Context) {
	if rl.src == nil || len(rl.out) > 0 {
		return
	}
	select {
	case ev, ok := <-rl.src:
		if !ok {
			rl.src = nil
			close(rl.out)
			return
		}
		rl.out <- ev
	case <-ctx.Done():
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

// join registers s. The first subscription of an idle Hub sets the mark to the highest id
// stored: the reader does not read while nobody listens.
func (h *Hub) join(ctx context.Context, s *sub) error {
	for {
		idle := h.Active() == 0
		var mark int64
		if idle {
			var err error
			if mark, err = h.opts.LastID(ctx); err != nil {
				return &apierr.Error{Code: apierr.Unavailable, Message: notReady, Err: err}
			}
		}
		if joined, err := h.add(s, idle, mark); joined || err != nil {
			return err
		}
	}
}

// add registers s and reports whether it did. It does not when the Hub is closed (the
// error), nor when join saw subscribers (idle false, mark unread) that have left meanwhile:
// join then reads the mark.
func (h *Hub) add(s *sub, idle bool, mark int64) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false, errShuttingDown
	}
	if len(h.subs) == 0 {
		if !idle {
			return false, nil
		}
		h.mark = max(h.mark, mark)
	}
	h.subs[s] = struct{}{}
	return true, nil
}

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
