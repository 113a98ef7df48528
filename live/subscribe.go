package live

import (
	"context"

	"petstore/apierr"
	"petstore/models"
)

// notReady answers a subscription while the database cannot tell where to start.
const notReady = "cannot start a subscription now: the database does not answer; retry later"

// ErrShuttingDown answers a subscription, or a connection, that comes once the instance drains.
var ErrShuttingDown = &apierr.Error{Code: apierr.Unavailable, Message: "the instance is shutting down; subscribe again"}

// Subscribe returns the events of the pets added from now on (of status when it is not nil),
// after the pets above afterID when resume is true, until ctx ends or c is cut off, when the
// channel is closed; under a Relay (WithRelay), the Relay's channel. It returns an unavailable
// error while the database cannot tell where to start.
func (h *Hub) Subscribe(ctx context.Context, c Conn, status *models.PetStatus, afterID int64, resume bool) (<-chan *Event, error) {
	return h.SubscribeReleasing(ctx, c, status, afterID, resume, nil)
}

// SubscribeReleasing is Subscribe, and calls release (unless nil) once the subscription has
// left, as ctx ends: what the subscription holds elsewhere (conns.Registry's slot) is given
// back by the same context.AfterFunc, which costs an idle subscription some 150 bytes each.
func (h *Hub) SubscribeReleasing(ctx context.Context, c Conn, status *models.PetStatus, afterID int64, resume bool, release func()) (<-chan *Event, error) {
	s := &sub{hub: &h.fanOut, ctx: ctx, conn: c, status: status, ch: make(chan *Event, h.opts.Buffer), catching: resume,
		sent: afterID, queued: afterID}
	if err := h.join(ctx, s); err != nil {
		return nil, err
	}
	h.start()
	h.metrics.active.Inc()
	context.AfterFunc(ctx, func() {
		h.leave(s)
		if release != nil {
			release()
		}
	})
	if resume {
		go s.resume(ctx, afterID, true)
	}
	return relayed(ctx, s.ch), nil
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
		return false, ErrShuttingDown
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
