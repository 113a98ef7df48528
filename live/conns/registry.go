package conns

import (
	"context"
	"fmt"
	"sync"
	"time"

	"petstore/auth"
	"petstore/live"
)

// DefaultPingEvery is how often every WebSocket gets a ping unless RegistryOptions.PingEvery
// says otherwise: within the idle timeouts of common proxies and balancers (60 s and more).
const DefaultPingEvery = 20 * time.Second

// CheckFunc returns, for the keys of ids that must lose their connections (revoked or
// suspended), the reason; it is called every RecheckEvery while they have some.
type CheckFunc func(ctx context.Context, ids []int64) (map[int64]string, error)

// RegistryOptions are the settings of a Registry.
type RegistryOptions struct {
	Caps Caps
	// Capacity bounds the connections of the instance as a whole; a zero field is sized for
	// DefaultMemory.
	Capacity Capacity
	// Check finds the keys to cut off; nil: none is.
	Check CheckFunc
	// Charge charges n units of the rate limit to p: an operation sent on a WebSocket its
	// cost, one sent on an SSE stream its cost past the one request of the stream, a page of
	// pets a subscription reads from the database past the first one request; it returns the
	// error of a refused one (rate_limited, key_suspended, invalid_request); nil: not charged.
	Charge func(ctx context.Context, p *auth.Principal, n int) error
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
	// Metrics counts connections, refusals and cut-offs; nil: counted but not exported.
	Metrics *Metrics
}

// withDefaults returns o with its zero fields set to the defaults.
func (o RegistryOptions) withDefaults() RegistryOptions {
	if o.RecheckEvery <= 0 {
		o.RecheckEvery = 2 * time.Second
	}
	if o.PingEvery <= 0 {
		o.PingEvery = DefaultPingEvery
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.Caps.PerPlan == nil {
		o.Caps = DefaultCaps()
	}
	o.Capacity = o.Capacity.withDefaults()
	if o.Metrics == nil {
		o.Metrics = NewMetrics()
	}
	return o
}

// Registry knows every subscriber connection of the instance: it applies the caps, cuts off
// the keys that are revoked or suspended and closes everything at shutdown. Its one goroutine
// starts with the first connection.
type Registry struct {
	opts    RegistryOptions
	hub     *live.Hub
	metrics *Metrics

	startOnce sync.Once
	ctx       context.Context
	stop      context.CancelFunc
	done      chan struct{}

	mu         sync.Mutex
	keys       map[int64]*keyConns
	conns      int            // WebSockets (from their upgrade) and SSE streams: Capacity.Connections
	pendingAll int            // WebSockets without a key not yet initialised: Capacity.Pending
	pending    map[string]int // the same by client address: Caps.PendingPerAddr
	shutdown   bool
	leasing    chan struct{}  // closed when Leases.run has returned; nil until it starts
	streams    sync.WaitGroup // SSE streams being served (Stream), which Shutdown waits for
}

// NewRegistry returns a Registry of the subscriptions of hub, which it closes at Shutdown.
func NewRegistry(hub *live.Hub, opts RegistryOptions) *Registry {
	ctx, stop := context.WithCancel(context.Background())
	opts = opts.withDefaults()
	m := opts.Metrics
	m.limit.WithLabelValues(refusedConnections).Set(float64(opts.Capacity.Connections))
	m.limit.WithLabelValues(refusedPending).Set(float64(opts.Capacity.Pending))
	return &Registry{opts: opts, hub: hub, metrics: m, ctx: ctx, stop: stop, done: make(chan struct{}),
		keys: map[int64]*keyConns{}, pending: map[string]int{}}
}

// Options returns the settings of r, the defaults filled in: what its transports bound
// their writes and pings with.
func (r *Registry) Options() RegistryOptions { return r.opts }

// Context returns the context of r's goroutines, which ends at Shutdown: the transports'
// goroutines that serve every connection (pings) end with it.
func (r *Registry) Context() context.Context { return r.ctx }

// Open registers a connection of p, closed by cut: a WebSocket, or a stream (an SSE stream),
// which holds its subscription slot too; it fails over the key's caps.
func (r *Registry) Open(ctx context.Context, p *auth.Principal, cut func(code int, reason string), stream bool) (*Conn, error) {
	r.startOnce.Do(func() { go r.loop() })
	n := r.opts.Caps.capOf(p.Plan.Name)
	c := &Conn{reg: r, KeyID: p.KeyID, plan: p.Plan.Name, cut: cut, held: stream, ws: !stream, principal: p}
	kinds, err := r.hold(c, n)
	if err != nil {
		return nil, err
	}
	release, err := r.share(ctx, c, n, kinds...)
	if err != nil {
		r.Close(c)
		return nil, err
	}
	c.release = release
	return c, nil
}

// hold counts c among its key's connections on this instance, and a stream's subscription
// too, under the cap n; it returns the kinds of slots taken, for share.
func (r *Registry) hold(c *Conn, n int) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.shutdown {
		return nil, live.ErrShuttingDown
	}
	r.startLeasing()
	k := r.keys[c.KeyID]
	if k == nil {
		k = &keyConns{conns: map[*Conn]struct{}{}}
		r.keys[c.KeyID] = k
	}
	if err := k.refuse(n, c.plan, c.held); err != nil {
		r.forgetIdle(c.KeyID, k)
		return nil, err
	}
	k.conns[c] = struct{}{}
	if !c.held {
		return []string{"conns"}, nil
	}
	k.subs++
	return []string{"conns", "subs"}, nil
}

// Close forgets c (and the subscription of a stream) and lets its leases go.
func (r *Registry) Close(c *Conn) {
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
		r.forgetIdle(c.KeyID, k)
	}
}

// connsOf returns the connections of key id.
func (r *Registry) connsOf(id int64) []*Conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.keys[id].list()
}

// loop checks the keys every RecheckEvery until Shutdown. (The transport pings the
// WebSockets on a goroutine of its own: a round of pings that waits on stalled sockets never
// holds up the cut-off of a revoked or suspended key.)
func (r *Registry) loop() {
	defer close(r.done)
	t := time.NewTicker(r.opts.RecheckEvery)
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-t.C:
			r.recheck()
		}
	}
}

// recheck cuts off the connections of the keys Check names.
func (r *Registry) recheck() {
	if r.opts.Check == nil {
		return
	}
	ids := r.keyIDs()
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(r.ctx, r.opts.RecheckEvery)
	bad, err := r.opts.Check(ctx, ids)
	cancel()
	if err != nil {
		r.metrics.checkLog.Warn("live: checking the keys of subscribers failed", err)
		return
	}
	for id, reason := range bad {
		for _, c := range r.connsOf(id) {
			c.Cut(live.CloseForbidden, fmt.Sprintf("the API key %s", reason))
		}
	}
}

// keyIDs returns the ids of the keys holding connections.
func (r *Registry) keyIDs() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]int64, 0, len(r.keys))
	for id := range r.keys {
		ids = append(ids, id)
	}
	return ids
}
