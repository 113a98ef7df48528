package conns

import (
	"fmt"

	"petstore/apierr"
)

// Capacity bounds what the instance holds of live connections as a whole, whatever their keys
// and client addresses, so that a flood of sockets from many addresses cannot take the process
// past its memory: Connections bounds every WebSocket (from its upgrade to its end, initialised
// or not) and SSE stream, Pending the WebSockets whose upgrade carries no valid key and whose
// connection_init has not yet named one. Beyond either, a new one gets 503 unavailable with
// Retry-After.
type Capacity struct {
	Connections int
	Pending     int
}

// Sizing of CapacityFor: what the rest of the service may take of the instance's memory, and
// what an idle connection costs of the rest.
const (
	// ReservedMemory is what the service keeps for itself: some 64 MiB of resident memory
	// under a full REST and GraphQL load, with its page cache full, plus the collector's 32
	// MiB of headroom past the live heap.
	ReservedMemory = 96 << 20
	// ConnectionMemory is what one connection may take: an idle WebSocket subscription, the
	// most expensive kind, rounded up. A socket not yet initialised takes less, and is
	// counted at this price too, since it becomes one.
	ConnectionMemory = 32 << 10
	// DefaultMemory is the memory an instance is sized for when nothing limits it (no
	// GOMEMLIMIT, no cgroup limit).
	DefaultMemory = 1 << 30
	// minConnections is the least CapacityFor gives, however small the memory.
	minConnections = 64
)

// CapacityFor returns the capacity of an instance that may use memory bytes (its GOMEMLIMIT,
// else its container's limit, else DefaultMemory): (memory - ReservedMemory) /
// ConnectionMemory connections, at least minConnections, and half of them pending, so that a
// flood of sockets without a key leaves room for the connections of keys.
func CapacityFor(memory int64) Capacity {
	n := int((memory - ReservedMemory) / ConnectionMemory)
	n = max(n, minConnections)
	return Capacity{Connections: n, Pending: n / 2}
}

// withDefaults returns c with its zero fields sized for DefaultMemory.
func (c Capacity) withDefaults() Capacity {
	d := CapacityFor(DefaultMemory)
	if c.Connections <= 0 {
		c.Connections = d.Connections
	}
	if c.Pending <= 0 {
		c.Pending = min(d.Pending, c.Connections)
	}
	return c
}

// Which limit refused a connection, the label of petstore_live_connections_refused_total.
const (
	refusedConnections = "connections"
	refusedPending     = "pending"
	refusedPerAddr     = "pending_per_address"
)

// atCapacity returns the 503 of a connection refused because the instance holds n of what
// (connections in all, or WebSockets not yet initialised).
func atCapacity(n int, what string) *apierr.Error {
	return &apierr.Error{Code: apierr.Unavailable, Message: fmt.Sprintf(
		"this instance holds %d %s, as many as its memory allows; retry in a few seconds (another instance may have room)", n, what)}
}

// takeConn counts a new connection of the instance, and for a WebSocket without a valid key
// (addr names its client address, "" for one with a key) a pending one, of addr's and of the
// instance's; it returns the refusal and the label of the limit that refused it. r.mu is held.
func (r *Registry) takeConn(addr string) (*apierr.Error, string) {
	capa := r.opts.Capacity
	switch {
	case r.conns >= capa.Connections:
		return atCapacity(capa.Connections, "live connections (WebSockets and event streams)"), refusedConnections
	case addr == "":
	case r.pending[addr] >= r.opts.Caps.PendingPerAddr:
		return apierr.New(apierr.RateLimited, "this client address holds %d WebSocket connections not yet initialised, the most allowed",
			r.opts.Caps.PendingPerAddr), refusedPerAddr
	case r.pendingAll >= capa.Pending:
		return atCapacity(capa.Pending, "WebSockets not yet initialised"), refusedPending
	}
	r.conns++
	if addr != "" {
		r.pendingAll++
		r.pending[addr]++
	}
	r.countConns()
	return nil, ""
}

// AdmitConn counts a new connection of the instance (a WebSocket from its upgrade, or an SSE
// stream), and for a WebSocket without a valid key a pending one of its client address addr
// ("" for one with a key); it returns the refusal past the instance's Capacity or
// Caps.PendingPerAddr, counted.
func (r *Registry) AdmitConn(addr string) *apierr.Error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err, limit := r.takeConn(addr)
	if err != nil {
		r.metrics.refused.WithLabelValues(limit).Inc()
	}
	return err
}

// ReleaseConn gives back a connection that AdmitConn counted.
func (r *Registry) ReleaseConn() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.conns--
	r.countConns()
}

// ReleasePending gives back the pending slot that AdmitConn counted for a socket of client
// address addr; the caller gives it back once.
func (r *Registry) ReleasePending(addr string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending[addr]--; r.pending[addr] <= 0 {
		delete(r.pending, addr)
	}
	r.pendingAll--
	r.countConns()
}

// countConns sets the gauges of the connections held; r.mu is held.
func (r *Registry) countConns() {
	r.metrics.conns.Set(float64(r.conns))
	r.metrics.pending.Set(float64(r.pendingAll))
}
