package live

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"petstore/models"
)

// Hub hands out the pets added to every subscription of this instance. Its goroutines (one
// reading the database, one listening to the Bus, one publishing to it) start with the first
// subscription or Publish, and stop with Close.
type Hub struct {
	fanOut

	wake      chan struct{} // cap 1: the reader has something to read
	published atomic.Int64  // highest id published on this instance
	pubWake   chan struct{} // cap 1: the publisher has an id to send

	startOnce sync.Once
	ctx       context.Context
	stop      context.CancelFunc
	done      sync.WaitGroup
}

// NewHub returns a Hub with opts.
func NewHub(opts HubOptions) *Hub {
	opts = opts.withDefaults()
	ctx, stop := context.WithCancel(context.Background())
	return &Hub{fanOut: fanOut{opts: opts, metrics: opts.Metrics, subs: map[*sub]struct{}{}},
		wake: make(chan struct{}, 1), pubWake: make(chan struct{}, 1), ctx: ctx, stop: stop}
}

// start starts the goroutines, once.
func (h *Hub) start() {
	h.startOnce.Do(func() {
		h.goRun(h.readLoop)
		if h.opts.Bus != nil {
			h.goRun(func() { h.opts.Bus.Listen(h.ctx, h.poke) })
			h.goRun(h.publishLoop)
		}
	})
}

// goRun runs f on a goroutine that Close waits for.
func (h *Hub) goRun(f func()) {
	h.done.Add(1)
	go func() { defer h.done.Done(); f() }()
}

// Close stops the Hub's goroutines. It does not close the subscribers' connections
// (conns.Registry.Shutdown does).
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.stop()
	h.done.Wait()
}

// Active returns how many subscriptions the Hub serves.
func (h *Hub) Active() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
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
		signal(h.pubWake)
	}
}

// poke wakes the reader.
func (h *Hub) poke() { signal(h.wake) }

// signal puts a token in ch, of capacity 1, unless one is there already.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
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
		if id := h.published.Load(); id > sent && h.send(id) {
			sent = id
		}
	}
}

// send publishes id to the Bus, and reports whether it went.
func (h *Hub) send(id int64) bool {
	ctx, cancel := context.WithTimeout(h.ctx, time.Second)
	defer cancel()
	if err := h.opts.Bus.Publish(ctx, id); err != nil {
		h.metrics.busErrors.Inc()
		h.metrics.busLog.Warn("live: publishing to Redis failed; other instances read the pet at their next poll", err)
		return false
	}
	return true
}

// readLoop reads and dispatches the pets above the mark at each wake-up and every PollEvery.
// A Hub without subscribers does not read: its mark moves when one joins (join).
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
		if h.Active() == 0 {
			continue
		}
		if err := h.catchUp(); err != nil && h.ctx.Err() == nil {
			h.metrics.readErrors.Inc()
			h.metrics.readLog.Warn("live: reading new pets failed; retrying at the next poll", err)
		}
	}
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
		ev := newEvent(p)
		for s := range h.subs {
			s.offer(ev)
		}
		h.mark = p.ID
	}
}
