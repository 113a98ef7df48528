package live

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"petstore/apierr"
	"petstore/auth"
)

// Conn is one subscriber connection: a WebSocket once authenticated, or an SSE stream.
type Conn struct {
	reg   *Registry
	KeyID int64
	plan  string
	cut   func(code int, reason string) // closes the connection; set once, at open
	// ws is true for a WebSocket, whose operations are charged one by one (an SSE stream is
	// charged one request as the HTTP request it is, its operation the rest of its cost).
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

// charge charges n units to c's key (RegistryOptions.Charge): an operation sent on it, or a
// page of pets read from the database for one of its subscriptions. Without a limiter it
// charges nothing.
func (c *Conn) charge(ctx context.Context, n int) error {
	if c.reg.opts.Charge == nil {
		return nil
	}
	return c.reg.opts.Charge(ctx, c.principal, n)
}

// Cut closes c with code and reason, counted under the reason label of code (cutLabel); the
// first call wins.
func (c *Conn) Cut(code int, reason string) { c.cutAs(cutLabel(code), code, reason) }

// cutAs is Cut counted under the reason label label.
func (c *Conn) cutAs(label string, code int, reason string) {
	c.mu.Lock()
	if c.code != 0 {
		c.mu.Unlock()
		return
	}
	c.code, c.reason = code, reason
	c.mu.Unlock()
	c.reg.hub.metrics.cutOff.WithLabelValues(label).Inc()
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
// dropping every event, so the peer would otherwise keep its connection and slots without
// reading. Other errors mean the connection is gone, which its reader sees.
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

// endEvent returns what ends the stream of c before its complete event, nil when nothing does
// (it was neither cut off nor ended with an error), and whether the complete event follows. A
// stream ended with an error, or cut off for good, gets an error event saying why, then
// complete; one cut off with a Retryable code gets a comment saying why and no complete, so
// that its client reconnects (graphql-sse retries a stream that ends without complete).
func (c *Conn) endEvent() (ev []byte, complete bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.ended != nil:
		return errorEvent(c.ended.Code, c.ended.Message), true
	case c.code != 0 && Retryable(c.code):
		return commentEvent(c.reason), false
	case c.code != 0:
		return errorEvent(cutCode(c.code), c.reason), true
	}
	return nil, true
}
