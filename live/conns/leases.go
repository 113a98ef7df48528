package conns

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
// Sentinel-managed primary or a Redis Cluster). Each slot a key holds is also a lease in a
// sorted set of that key's (leases.lua), taken by one atomic script call that counts every
// instance's leases against the cap (an SSE stream takes its connection and subscription
// slots together, both or neither). The instance renews its leases every RenewEvery in one
// pipeline; an instance that dies loses them LeaseFor after its last renewal. A renewal puts
// back a lease Redis lost only while the key is under its cap, and cuts off the holder of one
// it cannot (keep's lost), so that a key never holds more than its cap once renewed. A key's
// sets, "{" + prefix + "live:k:" + id + "}:conns" and ":subs", share one hash tag: every
// script call runs on one node of a cluster.
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
