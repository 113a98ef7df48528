package live

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// The bounds of a lease in Redis.
const (
	// LeaseFor is how long a slot held in Redis lasts without being renewed: the slots of an
	// instance that dies (or loses Redis) are free at most this long after its last renewal.
	LeaseFor = 10 * time.Second
	// RenewEvery is how often an instance renews the leases of every slot it holds, in one
	// pipeline: three renewals fit in a lease, so two that fail lose nothing.
	RenewEvery = 3 * time.Second
	// renewBatch is the most script calls (one per API key and kind) of one renewal pipeline.
	renewBatch = 1000
)

//go:embed leases.lua
var leasesSource string

var leasesScript = redis.NewScript(leasesSource)

// Leases hold the caps of a Registry on every instance sharing one Redis (a single server, a
// Sentinel-managed primary or a Redis Cluster): each slot a key holds, a connection or a
// subscription, is also a lease in a sorted set of that key's (leases.lua), taken by one atomic
// script call that counts the leases of every instance against the cap (an SSE stream takes
// its connection and its subscription in one call, both or neither). The instance renews its
// leases every RenewEvery, all in one pipeline; one it does not renew (the instance died) ends
// LeaseFor after its last renewal. A renewal puts back a lease Redis lost (a restart without
// persistence, a failover) only while the key is under its cap on every instance: the holder
// of one it cannot put back is cut off (keep's lost), so that a key never holds more than its
// cap once renewed. A slot let go is removed at once. A key's sets are
// "{" + prefix + "live:k:" + id + "}:conns" and ":subs": one hash tag, so that every script call
// runs on the node of that key's slot of a cluster.
type Leases struct {
	client redis.UniversalClient
	prefix string
	self   string // this instance's part of every token
	seq    atomic.Uint64

	mu       sync.Mutex
	held     map[string]map[string]func() // tokens held, by set, each with what cuts off its holder
	caps     map[string]int               // the cap of each set held: what renewals send
	released map[string][]string          // tokens let go and not yet removed, by set
	wake     chan struct{}                // cap 1: something was let go
}

// NewLeases returns the Leases of client, under keys that start with prefix (the rate
// limiter's, Config.RedisKeyPrefix: "rl:").
func NewLeases(client redis.UniversalClient, prefix string) *Leases {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &Leases{client: client, prefix: prefix, self: hex.EncodeToString(b[:]),
		held: map[string]map[string]func(){}, caps: map[string]int{}, released: map[string][]string{},
		wake: make(chan struct{}, 1)}
}

// set returns the name of the set of kind ("conns" or "subs") of API key id.
func (l *Leases) set(kind string, id int64) string {
	return "{" + l.prefix + "live:k:" + strconv.FormatInt(id, 10) + "}:" + kind
}

// tokens returns a new holder's token for each of sets: this instance's part and a sequence
// number.
func (l *Leases) tokens(sets []string) []string {
	tokens := make([]string, len(sets))
	for i := range tokens {
		tokens[i] = l.self + ":" + strconv.FormatUint(l.seq.Add(1), 36)
	}
	return tokens
}

// take adds a lease of each of tokens to its set of sets (one key's) when every one holds
// fewer than n, and returns -1; when one is full, it adds none and returns that set's index.
// On an error the leases may or may not have been taken: keep or drop them.
func (l *Leases) take(ctx context.Context, sets, tokens []string, n int) (int, error) {
	argv := make([]any, 0, 3+len(tokens))
	argv = append(argv, "take", LeaseFor.Milliseconds(), n)
	for _, tok := range tokens {
		argv = append(argv, tok)
	}
	v, err := leasesScript.Run(ctx, l.client, sets, argv...).Int64Slice()
	switch {
	case err != nil:
		return 0, err
	case len(v) != 2 || v[0] == 0 && (v[1] < 1 || int(v[1]) > len(sets)):
		return 0, fmt.Errorf("live: unexpected lease reply %v", v)
	case v[0] == 0:
		return int(v[1]) - 1, nil
	}
	return -1, nil
}

// keep notes tokens as held in sets, under the cap n: renewals send them from now on, and add
// them to Redis when it lost them (or never got them) while the key is under n; lost cuts off
// their holder when a renewal cannot, and they are held no more.
func (l *Leases) keep(sets, tokens []string, n int, lost func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, set := range sets {
		held := l.held[set]
		if held == nil {
			held = map[string]func(){}
			l.held[set] = held
		}
		held[tokens[i]] = lost
		l.caps[set] = n
	}
}

// drop removes tokens not held from sets, at once, by run: the leases of a take whose outcome
// is unknown.
func (l *Leases) drop(sets, tokens []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, set := range sets {
		l.released[set] = append(l.released[set], tokens[i])
	}
	l.poke()
}

// poke wakes run; l.mu is held.
func (l *Leases) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// release lets the lease of token go: it is removed from Redis at once, by run.
func (l *Leases) release(set, token string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	tokens := l.held[set]
	if _, held := tokens[token]; !held {
		return
	}
	l.forget(set, token)
	l.released[set] = append(l.released[set], token)
	l.poke()
}

// releaseEach lets the lease of each of tokens go from its set of sets.
func (l *Leases) releaseEach(sets, tokens []string) {
	for i, set := range sets {
		l.release(set, tokens[i])
	}
}

// forget notes token as no longer held in set; l.mu is held.
func (l *Leases) forget(set, token string) {
	tokens := l.held[set]
	delete(tokens, token)
	if len(tokens) == 0 {
		delete(l.held, set)
		delete(l.caps, set)
	}
}

// run renews the leases every RenewEvery and removes those let go as they are, until ctx
// ends; failed reports each failure (the leases then end by themselves, or are renewed once
// Redis answers). Renewals and removals go one after the other from this goroutine, so a lease
// let go is never renewed after its removal.
func (l *Leases) run(ctx context.Context, failed func(error)) {
	t := time.NewTicker(RenewEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := l.renew(ctx); err != nil {
				failed(err)
			}
		case <-l.wake:
		}
		if err := l.remove(ctx); err != nil {
			failed(err)
		}
	}
}

// renew sends one renewal per set held, renewBatch to a pipeline, and cuts off the holders of
// the leases Redis had lost and could not take back under their key's cap (cutOff); it returns
// the first error.
func (l *Leases) renew(ctx context.Context) error {
	l.mu.Lock()
	sets := make([]string, 0, len(l.held))
	args := make([][]any, 0, len(l.held))
	for set, tokens := range l.held {
		a := make([]any, 0, 3+len(tokens))
		a = append(a, "renew", LeaseFor.Milliseconds(), l.caps[set])
		for tok := range tokens {
			a = append(a, tok)
		}
		sets, args = append(sets, set), append(args, a)
	}
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, RenewEvery)
	defer cancel()
	var first error
	lost := map[string][]string{}
	for start := 0; start < len(sets); start += renewBatch {
		end := min(start+renewBatch, len(sets))
		if err := l.renewBatch(ctx, sets[start:end], args[start:end], lost); err != nil && first == nil {
			first = err
		}
	}
	l.cutOff(lost)
	return first
}

// cutOff forgets the tokens of lost, by set, that are still held, and cuts off their holders.
func (l *Leases) cutOff(lost map[string][]string) {
	var cuts []func()
	l.mu.Lock()
	for set, tokens := range lost {
		for _, tok := range tokens {
			if cut, held := l.held[set][tok]; held {
				l.forget(set, tok)
				cuts = append(cuts, cut)
			}
		}
	}
	l.mu.Unlock()
	for _, cut := range cuts {
		cut()
	}
}

// renewBatch renews sets with args in one pipeline, and again with EVAL those that Redis
// answered NOSCRIPT (a restarted node); it adds to lost, by set, the tokens Redis had lost and
// did not take back.
func (l *Leases) renewBatch(ctx context.Context, sets []string, args [][]any, lost map[string][]string) error {
	pipe := l.client.Pipeline()
	cmds := make([]*redis.Cmd, len(sets))
	for i, set := range sets {
		cmds[i] = leasesScript.EvalSha(ctx, pipe, []string{set}, args[i]...)
	}
	_, _ = pipe.Exec(ctx)
	reload := false
	for i, cmd := range cmds {
		if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			cmds[i] = leasesScript.Eval(ctx, pipe, []string{sets[i]}, args[i]...)
			reload = true
		}
	}
	if reload {
		_, _ = pipe.Exec(ctx)
	}
	var first error
	for i, cmd := range cmds {
		tokens, err := cmd.StringSlice()
		if err != nil {
			if first == nil {
				first = fmt.Errorf("live: renewing leases: %w", err)
			}
			continue
		}
		if len(tokens) > 0 {
			lost[sets[i]] = tokens
		}
	}
	return first
}

// remove removes the leases let go, in one pipeline. Those it could not remove end by
// themselves. A removal under way is not abandoned when ctx ends (run's, as the instance shuts
// down): the leases it took from released would otherwise be in neither released nor held,
// and releaseAll would leave them to end by themselves, their slots taken for LeaseFor.
func (l *Leases) remove(ctx context.Context) error {
	l.mu.Lock()
	gone := l.released
	if len(gone) == 0 {
		l.mu.Unlock()
		return nil
	}
	l.released = map[string][]string{}
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RenewEvery)
	defer cancel()
	pipe := l.client.Pipeline()
	for set, tokens := range gone {
		members := make([]any, len(tokens))
		for i, tok := range tokens {
			members[i] = tok
		}
		pipe.ZRem(ctx, set, members...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("live: removing leases: %w", err)
	}
	return nil
}

// releaseAll lets every lease go and removes them; run must have returned.
func (l *Leases) releaseAll(ctx context.Context) error {
	l.mu.Lock()
	for set, tokens := range l.held {
		for tok := range tokens {
			l.released[set] = append(l.released[set], tok)
		}
	}
	clear(l.held)
	clear(l.caps)
	l.mu.Unlock()
	return l.remove(ctx)
}
