package live

import "context"

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

// WithRelay returns ctx with a new Relay, under which Hub.Subscribe (and so
// conns.Registry.Subscribe) returns the Relay's channel instead of its own: the executor of a subscription dispatched with ctx calls Wait
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

// relayed returns events, a subscription's of ctx, through the Relay of ctx when it has one
// that no subscription took yet; else events.
func relayed(ctx context.Context, events <-chan *Event) <-chan *Event {
	rl, _ := ctx.Value(relayKey{}).(*Relay)
	if rl == nil || rl.src != nil {
		return events
	}
	rl.src, rl.out = events, make(chan *Event, 1)
	return rl.out
}
