package conns

import (
	"context"

	"petstore/apierr"
	"petstore/auth"
	"petstore/live"
)

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
// wire.InitTimeout without a key.
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

// keyConns is what one key holds on this instance.
type keyConns struct {
	conns map[*Conn]struct{}
	subs  int
}

// idle reports whether k holds nothing: its entry may go.
func (k *keyConns) idle() bool { return len(k.conns) == 0 && k.subs == 0 }

// list returns the connections of k, none when k is nil.
func (k *keyConns) list() []*Conn {
	if k == nil {
		return nil
	}
	conns := make([]*Conn, 0, len(k.conns))
	for c := range k.conns {
		conns = append(conns, c)
	}
	return conns
}

// refuse returns the refusal of a connection (and, for a stream, its subscription) of plan
// when k holds its cap n already, else nil.
func (k *keyConns) refuse(n int, plan string, stream bool) *apierr.Error {
	switch {
	case len(k.conns) >= n:
		return tooMany("connections", n, plan)
	case stream && k.subs >= n:
		return tooMany("subscriptions", n, plan)
	}
	return nil
}

// tooMany returns the refusal of a connection or subscription over the cap of plan (n).
func tooMany(what string, n int, plan string) *apierr.Error {
	return apierr.New(apierr.RateLimited,
		"this API key already holds %d %s, the most its %s plan allows at once; close one first", n, what, plan)
}

// Acquire takes one of the key's subscription slots until ctx ends; it fails over the cap,
// and, with Leases, while their Redis fails when the policy is to fail closed.
func (c *Conn) Acquire(ctx context.Context) error {
	release, err := c.acquire(ctx)
	if err != nil {
		return err
	}
	context.AfterFunc(ctx, release)
	return nil
}

// acquire takes one of the key's subscription slots, as Acquire does, until release.
func (c *Conn) acquire(ctx context.Context) (release func(), err error) {
	r := c.reg
	n := r.opts.Caps.capOf(c.plan)
	k, err := r.takeSub(c, n)
	if err != nil {
		return nil, err
	}
	leases, err := r.share(ctx, c, n, "subs")
	if err != nil {
		r.dropSub(c.KeyID, k)
		return nil, err
	}
	return func() {
		leases()
		r.dropSub(c.KeyID, k)
	}, nil
}

// takeSub counts a subscription of c's key on this instance under the cap n, and returns
// what the key holds.
func (r *Registry) takeSub(c *Conn, n int) (*keyConns, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := r.keys[c.KeyID]
	if k == nil || r.shutdown {
		return nil, live.ErrShuttingDown
	}
	if k.subs >= n {
		return nil, tooMany("subscriptions", n, c.plan)
	}
	k.subs++
	return k, nil
}

// dropSub gives back one of k's subscription slots, k being key id's.
func (r *Registry) dropSub(id int64, k *keyConns) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k.subs--
	r.forgetIdle(id, k)
}

// forgetIdle forgets k, key id's, when it holds nothing; r.mu is held.
func (r *Registry) forgetIdle(id int64, k *keyConns) {
	if k.idle() && r.keys[id] == k {
		delete(r.keys, id)
	}
}
