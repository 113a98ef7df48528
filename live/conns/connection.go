package conns

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"petstore/apierr"
	"petstore/auth"
	"petstore/live"
)

// Conn is one subscriber connection: a WebSocket once authenticated, or an SSE stream. It is
// the live.Conn of the subscriptions it runs.
type Conn struct {
	reg   *Registry
	KeyID int64
	plan  string
	cut   func(code int, reason string) // closes the connection; set once, at open
	// ws is true for a WebSocket, whose operations are charged one by one (an SSE stream is
	// charged one request as the HTTP request it is, its operation the rest of its cost).
	ws bool
	// principal is the connection's key, charged for the pages its subscriptions read from
	// the database past the first (live.Conn.Charge).
	principal *auth.Principal
	held      bool   // an SSE stream, which holds its subscription slot from open to close
	release   func() // lets the connection's lease go (RegistryOptions.Leases); nil without
	// writeDeadline sets the write deadline of the connection, once the transport has it
	// (SetWriteDeadline).
	writeDeadline atomic.Pointer[func(time.Time) error]
	// refused counts the operations of a WebSocket refused in a row (Registry.Refused).
	refused atomic.Int32

	mu     sync.Mutex
	reason string
	code   int
	ended  *apierr.Error // the error a stream ends with when it is not cut off (EndWith)
}

var _ live.Conn = (*Conn)(nil)

type connKey struct{}

// WithConn returns ctx carrying c.
func WithConn(ctx context.Context, c *Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// ConnFrom returns the connection of ctx, or nil.
func ConnFrom(ctx context.Context) *Conn { c, _ := ctx.Value(connKey{}).(*Conn); return c }

// Charge charges n units to c's key (RegistryOptions.Charge): an operation sent on it, or a
// page of pets read from the database for one of its subscriptions. Without a limiter it
// charges nothing.
func (c *Conn) Charge(ctx context.Context, n int) error {
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
	c.reg.metrics.cutOff.WithLabelValues(label).Inc()
	if f := c.writeDeadline.Load(); f != nil && code == live.CloseSlow {
		_ = (*f)(time.Now()) // it reads nothing: a write under way fails now, not at its deadline
	}
	c.cut(code, reason)
}

// SetWriteDeadline gives c the write deadline of its connection, which a cut-off as too slow
// expires, so that the connection and its slot go at once.
func (c *Conn) SetWriteDeadline(f func(time.Time) error) { c.writeDeadline.Store(&f) }

// WriteFailed is told of every failed write to c's peer. A write that timed out (the peer
// took nothing for RegistryOptions.WriteTimeout) cuts c off as too slow, as the Hub does a
// subscriber that leaves its buffer full: gqlgen's transports go on after a failed write,
// dropping every event, so the peer would otherwise keep its connection and slots without
// reading. Other errors mean the connection is gone, which its reader sees.
func (c *Conn) WriteFailed(err error) {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		c.Cut(live.CloseSlow, live.ReasonSlow)
	}
}

// End ends the subscription of ctx with err, not c: on a WebSocket the protocol's error
// message of the operation, which the transport reads once the subscription's channel is
// closed; on an SSE stream its error event before complete (EndWith).
func (c *Conn) End(ctx context.Context, err *apierr.Error) {
	if !c.ws {
		c.EndWith(err)
		return
	}
	transport.AddSubscriptionError(ctx, &gqlerror.Error{Message: err.Message,
		Extensions: map[string]any{"code": strings.ToUpper(string(err.Code))}})
}

// EndWith makes err what the SSE stream of c ends with, its error event before complete,
// unless it was cut off or ended already: its subscription ends, or its client misbehaved,
// without the connection being cut off for every subscription as Cut does.
func (c *Conn) EndWith(err *apierr.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.code == 0 && c.ended == nil {
		c.ended = err
	}
}

// Ending returns why the stream of c ends: the error it was ended with (EndWith), else the
// close code and reason it was cut off with (0 and "" for none).
func (c *Conn) Ending() (ended *apierr.Error, code int, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ended, c.code, c.reason
}
