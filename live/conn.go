package live

import (
	"context"
	"fmt"
	"sync"
	"time"

	"petstore/apierr"
	"petstore/auth"
)

// Close codes of a WebSocket the service closes. The 44xx ones are graphql-transport-ws's.
const (
	CloseGoingAway   = 1001 // the instance shuts down: reconnect (elsewhere) and resume with after
	CloseSlow        = 1008 // policy violation: the subscriber did not keep up
	CloseRetry       = 1013 // try again later: the database failed while resuming
	CloseForbidden   = 4403 // missing, unknown, revoked or suspended key
	CloseInitTimeout = 4408 // no connection_init in time
	CloseTooMany     = 4429 // the key holds as many connections as its plan allows
)

// ReasonShutdown is the close reason when the instance shuts down.
const ReasonShutdown = "the instance is shutting down: reconnect and resume with after"

// Caps bound what one subject may hold at once on an instance.
type Caps struct {
	// PerPlan is the most subscriptions (and WebSocket connections) a key of each plan may
	// hold; a plan it does not name, enterprise, gets Enterprise.
	PerPlan map[string]int
	// Enterprise is the cap of enterprise keys (default 1,000).
	Enterprise int
	// PendingPerAddr is the most WebSocket connections one client address may hold before
	// they are authenticated (default 8).
	PendingPerAddr int
}

// DefaultCaps returns the documented caps: free 2, pro 20, business 200, enterprise 1,000;
// 8 unauthenticated WebSocket connections per client address.
func DefaultCaps() Caps {
	return Caps{PerPlan: map[string]int{auth.Free.Name: 2, auth.Pro.Name: 20, auth.Business.Name: 200},
		Enterprise: 1000, PendingPerAddr: 8}
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
	// Charge charges an operation sent on a WebSocket to p as one request, and returns the
	// error of a refused one (rate_limited, key_suspended); nil: not charged.
	Charge func(ctx context.Context, p *auth.Principal) error
	// RecheckEvery is how often the keys with connections are checked (default 2 s).
	RecheckEvery time.Duration
	// PingEvery is how often every WebSocket gets a ping (default 20 s); a peer that sent
	// nothing for three of them is closed.
	PingEvery time.Duration
	// WriteTimeout bounds each write to a subscriber (default 10 s): a peer that does not read
	// is closed then.
	WriteTimeout time.Duration
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
		opts.PingEvery = 20 * time.Second
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
	// charged as the HTTP requests they are); principal is its key.
	ws        bool
	principal *auth.Principal
	held      bool // an SSE stream, which holds its subscription slot from the start

	mu     sync.Mutex
	reason string
	code   int
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

// open registers a connection of p, closed by cut; it fails over the key's cap.
func (r *Registry) open(p *auth.Principal, cut func(code int, reason string)) (*Conn, error) {
	r.startOnce.Do(func() { go r.loop() })
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.shutdown {
		return nil, errShuttingDown
	}
	k := r.keys[p.KeyID]
	if k == nil {
		k = &keyConns{conns: map[*Conn]struct{}{}}
		r.keys[p.KeyID] = k
	}
	if n := r.opts.Caps.capOf(p.Plan.Name); len(k.conns) >= n {
		return nil, tooMany("connections", n, p.Plan.Name)
	}
	c := &Conn{reg: r, KeyID: p.KeyID, plan: p.Plan.Name, cut: cut}
	k.conns[c] = struct{}{}
	return c, nil
}

// close forgets c.
func (r *Registry) close(c *Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if k := r.keys[c.KeyID]; k != nil {
		delete(k.conns, c)
		if len(k.conns) == 0 && k.subs == 0 {
			delete(r.keys, c.KeyID)
		}
	}
}

// Acquire takes one of the key's subscription slots until ctx ends; it fails over the cap.
func (c *Conn) Acquire(ctx context.Context) error {
	r := c.reg
	r.mu.Lock()
	k := r.keys[c.KeyID]
	if k == nil {
		r.mu.Unlock()
		return errShuttingDown
	}
	if n := r.opts.Caps.capOf(c.plan); k.subs >= n {
		r.mu.Unlock()
		return tooMany("subscriptions", n, c.plan)
	}
	k.subs++
	r.mu.Unlock()
	context.AfterFunc(ctx, func() {
		r.mu.Lock()
		k.subs--
		if len(k.conns) == 0 && k.subs == 0 && r.keys[c.KeyID] == k {
			delete(r.keys, c.KeyID)
		}
		r.mu.Unlock()
	})
	return nil
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
	c.cut(code, reason)
}

// CutReason returns the code and reason c was cut off with, 0 and "" while it is not.
func (c *Conn) CutReason() (int, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.code, c.reason
}

// Shutdown closes every connection with CloseGoingAway (an SSE stream ends after an error
// event saying so) and refuses new ones; the Hub's goroutines and the Registry's stop.
func (r *Registry) Shutdown() {
	r.mu.Lock()
	r.shutdown = true
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
	r.stop()
	r.hub.Close()
}

// loop checks the keys every RecheckEvery and pings the WebSockets every PingEvery.
func (r *Registry) loop() {
	defer close(r.done)
	check := time.NewTicker(r.opts.RecheckEvery)
	ping := time.NewTicker(r.opts.PingEvery)
	defer check.Stop()
	defer ping.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-check.C:
			r.recheck()
		case <-ping.C:
			r.pingAll()
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
