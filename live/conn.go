package live

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"petstore/apierr"
	"petstore/auth"
)

// DefaultPingEvery is how often every WebSocket gets a ping unless RegistryOptions.PingEvery
// says otherwise: within the idle timeouts of common proxies and balancers (60 s and more).
const DefaultPingEvery = 20 * time.Second

// Caps bound what one subject may hold at once: a key on every instance sharing one Redis
// (RegistryOptions.Leases), else on this instance; a client address on this instance.
type Caps struct {
	// PerPlan is the most subscriptions (and WebSocket connections) a key of each plan may
	// hold; a plan it does not name, enterprise, gets Enterprise.
	PerPlan map[string]int
	// Enterprise is the cap of enterprise keys (default 1,000).
	Enterprise int
	// PendingPerAddr is the most WebSocket connections without a valid key in their upgrade
	// that one client address may hold before connection_init authenticates them (default
	// DefaultPendingPerAddr). Every browser tab behind one NAT shares it as it reconnects.
	PendingPerAddr int
}

// DefaultPendingPerAddr is the default of Caps.PendingPerAddr: room for a thousand browser
// tabs behind one NAT reconnecting at once after a restart. Each such socket lives at most
// InitTimeout without a key.
const DefaultPendingPerAddr = 1024

// DefaultCaps returns the documented caps: free 2, pro 20, business 200, enterprise 1,000;
// DefaultPendingPerAddr WebSocket connections not yet initialised per client address.
func DefaultCaps() Caps {
	return Caps{PerPlan: map[string]int{auth.Free.Name: 2, auth.Pro.Name: 20, auth.Business.Name: 200},
		Enterprise: 1000, PendingPerAddr: DefaultPendingPerAddr}
}

// capOf returns the cap of plan.
func (c Caps) capOf(plan string) int {
	if n, ok := c.PerPlan[plan]; ok {
		return n
	}
	return c.Enterprise
}

// CheckFunc returns, for the keys of ids that must lose their connections (revoked or
// suspended), the reason; it is called every RecheckEvery while they have some.
type CheckFunc func(ctx context.Context, ids []int64) (map[int64]string, error)

// RegistryOptions are the settings of a Registry.
type RegistryOptions struct {
	Caps Caps
	// Check finds the keys to cut off; nil: none is.
	Check CheckFunc
	// Charge charges an operation sent on a WebSocket, or a page of pets a subscription reads
	// from the database past the first, to p as one request, and returns the error of a
	// refused one (rate_limited, key_suspended); nil: not charged.
	Charge func(ctx context.Context, p *auth.Principal) error
	// RecheckEvery is how often the keys with connections are checked (default 2 s).
	RecheckEvery time.Duration
	// PingEvery is how often every WebSocket gets a ping (default DefaultPingEvery); a peer that sent
	// nothing for three of them is closed.
	PingEvery time.Duration
	// WriteTimeout bounds each write to a subscriber (default 10 s): a peer that does not read
	// is closed then.
	WriteTimeout time.Duration
	// Leases, when not nil, hold the caps of each key on every instance sharing its Redis; nil:
	// each instance holds them on its own.
	Leases *Leases
	// FailOpen is what a new connection or subscription gets while the Redis of Leases fails:
	// true admits it within this instance's caps, false refuses it as unavailable (the rate
	// limiter's policy, PETSTORE_RATELIMIT_FAIL_OPEN). Those already open stay open either way.
	FailOpen bool
}

// Registry knows every subscriber connection of the instance: it applies the caps, cuts off
// the keys that are revoked or suspended, pings the WebSockets and closes everything at
// shutdown. Its one goroutine starts with the first connection.
type Registry struct {
	opts RegistryOptions
	hub  *Hub

	startOnce sync.Once
	ctx       context.Context
	stop      context.CancelFunc
	done      chan struct{}

	mu       sync.Mutex
	keys     map[int64]*keyConns
	pending  map[string]int // unauthenticated WebSockets by client address
	ws       map[*wsConn]struct{}
	shutdown bool
	leasing  chan struct{}  // closed when Leases.run has returned; nil until it starts
	streams  sync.WaitGroup // SSE streams being served (Stream), which Shutdown waits for
}

type keyConns struct {
	conns map[*Conn]struct{}
	subs  int
}

// NewRegistry returns a Registry whose cut-offs the Hub counts.
func NewRegistry(hub *Hub, opts RegistryOptions) *Registry {
	if opts.RecheckEvery <= 0 {
		opts.RecheckEvery = 2 * time.Second
	}
	if opts.PingEvery <= 0 {
		opts.PingEvery = DefaultPingEvery
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 10 * time.Second
	}
	if opts.Caps.PerPlan == nil {
		opts.Caps = DefaultCaps()
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Registry{opts: opts, hub: hub, ctx: ctx, stop: stop, done: make(chan struct{}),
		keys: map[int64]*keyConns{}, pending: map[string]int{}, ws: map[*wsConn]struct{}{}}
}

// Conn is one subscriber connection: a WebSocket once authenticated, or an SSE stream.
type Conn struct {
	reg   *Registry
	KeyID int64
	plan  string
	cut   func(code int, reason string) // closes the connection; set once, at open
	// ws is true for a WebSocket, whose operations are charged one by one (SSE streams are
	// charged as the HTTP requests they are).
	ws bool
	// principal is the connection's key, charged for the pages its subscriptions read from
	// the database past the first (sub.charge).
	principal *auth.Principal
	held      bool   // an SSE stream, which holds its subscription slot from open to close
	release   func() // lets the connection's lease go (RegistryOptions.Leases); nil without
	// writeDeadline sets the write deadline of the connection, once the transport has it
	// (setWriteDeadline).
	writeDeadline atomic.Pointer[func(time.Time) error]
	// refused counts the operations of a WebSocket refused in a row (Registry.Refused).
	refused atomic.Int32

	mu     sync.Mutex
	reason string
	code   int
	ended  *apierr.Error // the error a stream ends with when it is not cut off (endWith)
}

type connKey struct{}

// WithConn returns ctx carrying c.
func WithConn(ctx context.Context, c *Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// ConnFrom returns the connection of ctx, or nil.
func ConnFrom(ctx context.Context) *Conn { c, _ := ctx.Value(connKey{}).(*Conn); return c }

// tooMany returns the refusal of a connection or subscription over the cap of plan (n).
func tooMany(what string, n int, plan string) *apierr.Error {
	return apierr.New(apierr.RateLimited,
		"this API key already holds %d %s, the most its %s plan allows at once; close one first", n, what, plan)
}

// open registers a connection of p, closed by cut, and for a stream (an SSE stream) its
// subscription too; it fails over the key's caps.
func (r *Registry) open(ctx context.Context, p *auth.Principal, cut func(code int, reason string), stream bool) (*Conn, error) {
	r.startOnce.Do(func() { go r.loop() })
	n := r.opts.Caps.capOf(p.Plan.Name)
	r.mu.Lock()
	if r.shutdown {
		r.mu.Unlock()
		return nil, errShuttingDown
	}
	r.startLeasing()
	k := r.keys[p.KeyID]
	if k == nil {
		k = &keyConns{conns: map[*Conn]struct{}{}}
		r.keys[p.KeyID] = k
	}
	var err error
	switch {
	case len(k.conns) >= n:
		err = tooMany("connections", n, p.Plan.Name)
	case stream && k.subs >= n:
		err = tooMany("subscriptions", n, p.Plan.Name)
	}
	if err != nil {
		if len(k.conns) == 0 && k.subs == 0 {
			delete(r.keys, p.KeyID)
		}
		r.mu.Unlock()
		return nil, err
	}
	c := &Conn{reg: r, KeyID: p.KeyID, plan: p.Plan.Name, cut: cut, held: stream, principal: p}
	k.conns[c] = struct{}{}
	kinds := []string{"conns"}
	if stream {
		k.subs++
		kinds = append(kinds, "subs")
	}
	r.mu.Unlock()
	release, err := r.share(ctx, c, n, kinds...)
	if err != nil {
		r.close(c)
		return nil, err
	}
	c.release = release
	return c, nil
}

// close forgets c (and the subscription of a stream) and lets its leases go.
func (r *Registry) close(c *Conn) {
	if c.release != nil {
		c.release()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if k := r.keys[c.KeyID]; k != nil {
		delete(k.conns, c)
		if c.held {
			k.subs--
		}
		if len(k.conns) == 0 && k.subs == 0 {
			delete(r.keys, c.KeyID)
		}
	}
}

// Acquire takes one of the key's subscription slots until ctx ends; it fails over the cap,
// and, with Leases, while their Redis fails when the policy is to fail closed.
func (c *Conn) Acquire(ctx context.Context) error {
	r := c.reg
	n := r.opts.Caps.capOf(c.plan)
	r.mu.Lock()
	k := r.keys[c.KeyID]
	if k == nil || r.shutdown {
		r.mu.Unlock()
		return errShuttingDown
	}
	if k.subs >= n {
		r.mu.Unlock()
		return tooMany("subscriptions", n, c.plan)
	}
	k.subs++
	r.mu.Unlock()
	release, err := r.share(ctx, c, n, "subs")
	if err != nil {
		r.dropSub(c.KeyID, k)
		return err
	}
	context.AfterFunc(ctx, func() {
		release()
		r.dropSub(c.KeyID, k)
	})
	return nil
}

// dropSub gives back one of k's subscription slots, k being key id's.
func (r *Registry) dropSub(id int64, k *keyConns) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k.subs--
	if len(k.conns) == 0 && k.subs == 0 && r.keys[id] == k {
		delete(r.keys, id)
	}
}

// slotNames names the kinds of slots in refusals.
var slotNames = map[string]string{"conns": "connections", "subs": "subscriptions"}

// share takes, with Leases, a lease of each of kinds ("conns", "subs") for c under its key's
// cap n, counted on every instance, and returns what lets them go; without Leases it does
// nothing. Over the cap it refuses as this instance's cap does. When Redis fails,
// RegistryOptions.FailOpen decides: the slots are held here (renewals add their leases once
// Redis answers, while the key is under its cap), or refused as unavailable. A lease that a
// renewal finds lost and cannot add again under the cap (Redis lost it and other instances
// took the slots) cuts c off as too many (CloseTooMany, ReasonOverCap).
func (r *Registry) share(ctx context.Context, c *Conn, n int, kinds ...string) (func(), error) {
	id, plan := c.KeyID, c.plan
	l := r.opts.Leases
	if l == nil {
		return func() {}, nil
	}
	sets := make([]string, len(kinds))
	for i, kind := range kinds {
		sets[i] = l.set(kind, id)
	}
	tokens := l.tokens(sets)
	full, err := l.take(ctx, sets, tokens, n)
	switch {
	case err == nil && full >= 0:
		return nil, tooMany(slotNames[kinds[full]], n, plan)
	case err != nil && ctx.Err() != nil: // the client has gone
		l.drop(sets, tokens)
		return nil, ctx.Err()
	case err != nil && !r.opts.FailOpen:
		r.leaseFailed(err)
		l.drop(sets, tokens)
		return nil, &apierr.Error{Code: apierr.Unavailable, Err: err,
			Message: "cannot count this API key's subscriptions on every instance now; retry in a second"}
	case err != nil:
		r.leaseFailed(err)
	}
	l.keep(sets, tokens, n, func() { c.Cut(CloseTooMany, ReasonOverCap) })
	return func() {
		for i, set := range sets {
			l.release(set, tokens[i])
		}
	}, nil
}

// startLeasing starts Leases.run with the first connection; r.mu is held.
func (r *Registry) startLeasing() {
	if r.opts.Leases == nil || r.leasing != nil {
		return
	}
	done := make(chan struct{})
	r.leasing = done
	go func() {
		defer close(done)
		r.opts.Leases.run(r.ctx, r.leaseFailed)
	}()
}

// leaseFailed counts and logs a failure of the Redis of Leases.
func (r *Registry) leaseFailed(err error) {
	r.hub.metrics.capErrors.Inc()
	logEvery(&r.hub.metrics.lastCapLog, "live: the Redis of the subscription caps failed; caps fall back to this instance's "+
		"(or new subscriptions are refused, failing closed) until it answers", err)
}

// Cut closes c with code and reason; the first call wins.
func (c *Conn) Cut(code int, reason string) {
	c.mu.Lock()
	if c.code != 0 {
		c.mu.Unlock()
		return
	}
	c.code, c.reason = code, reason
	c.mu.Unlock()
	c.reg.hub.metrics.cutOff.WithLabelValues(cutLabel(code)).Inc()
	if f := c.writeDeadline.Load(); f != nil && code == CloseSlow {
		_ = (*f)(time.Now()) // it reads nothing: a write under way fails now, not at its deadline
	}
	c.cut(code, reason)
}

// setWriteDeadline gives c the write deadline of its connection, which a cut-off as too slow
// expires, so that the connection and its slot go at once.
func (c *Conn) setWriteDeadline(f func(time.Time) error) { c.writeDeadline.Store(&f) }

// writeFailed is told of every failed write to c's peer. A write that timed out (the peer
// took nothing for RegistryOptions.WriteTimeout) cuts c off as too slow, as the Hub does a
// subscriber that leaves its buffer full: gqlgen's transports go on after a failed write,
// taking every event and dropping it, so the peer would otherwise keep its connection and
// slots without reading. Other errors mean the connection is gone, which its reader sees.
func (c *Conn) writeFailed(err error) {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		c.Cut(CloseSlow, ReasonSlow)
	}
}

// endWith makes err what the SSE stream of c ends with, its error event before complete,
// unless it was cut off or ended already: its subscription ends, or its client misbehaved,
// without the connection being cut off for every subscription as Cut does.
func (c *Conn) endWith(err *apierr.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.code == 0 && c.ended == nil {
		c.ended = err
	}
}

// endEvent returns the error event that ends the stream of c, nil when none does: it was
// neither cut off nor ended with an error.
func (c *Conn) endEvent() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.ended != nil:
		return errorEvent(c.ended.Code, c.ended.Message)
	case c.code != 0:
		return errorEvent(cutCode(c.code), c.reason)
	}
	return nil
}

// Shutdown closes every connection with CloseGoingAway (an SSE stream ends after an error
// event saying so, which it waits for, at most WriteTimeout), lets every lease in Redis go
// and refuses new connections; the Hub's goroutines and the Registry's stop.
func (r *Registry) Shutdown() {
	r.mu.Lock()
	r.shutdown = true
	leasing := r.leasing
	var all []*Conn
	for _, k := range r.keys {
		for c := range k.conns {
			all = append(all, c)
		}
	}
	r.mu.Unlock()
	for _, c := range all {
		c.Cut(CloseGoingAway, ReasonShutdown)
	}
	ended := make(chan struct{})
	go func() { r.streams.Wait(); close(ended) }()
	select { // their last events written: net/http does not wait for connections taken from it
	case <-ended:
	case <-time.After(r.opts.WriteTimeout):
	}
	r.stop()
	if leasing != nil { // the leases go at once: their clients reconnect to other instances
		<-leasing
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := r.opts.Leases.releaseAll(ctx); err != nil {
			r.leaseFailed(err)
		}
		cancel()
	}
	r.hub.Close()
}

// loop checks the keys every RecheckEvery and, on a goroutine of its own, pings the
// WebSockets every PingEvery: a round of pings that waits on stalled sockets (each up to
// WriteTimeout) never holds up the cut-off of a revoked or suspended key.
func (r *Registry) loop() {
	defer close(r.done)
	pinging := make(chan struct{})
	go func() {
		defer close(pinging)
		every(r.ctx, r.opts.PingEvery, r.pingAll)
	}()
	every(r.ctx, r.opts.RecheckEvery, r.recheck)
	<-pinging
}

// every runs f every d until ctx ends.
func every(ctx context.Context, d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// recheck cuts off the connections of the keys Check names.
func (r *Registry) recheck() {
	if r.opts.Check == nil {
		return
	}
	r.mu.Lock()
	ids := make([]int64, 0, len(r.keys))
	for id := range r.keys {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(r.ctx, r.opts.RecheckEvery)
	bad, err := r.opts.Check(ctx, ids)
	cancel()
	if err != nil {
		logEvery(&r.hub.metrics.lastReadLog, "live: checking the keys of subscribers failed", err)
		return
	}
	for id, reason := range bad {
		r.mu.Lock()
		var conns []*Conn
		if k := r.keys[id]; k != nil {
			for c := range k.conns {
				conns = append(conns, c)
			}
		}
		r.mu.Unlock()
		for _, c := range conns {
			c.Cut(CloseForbidden, fmt.Sprintf("the API key %s", reason))
		}
	}
}
