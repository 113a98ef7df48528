package live

import (
	"context"
	"fmt"
)

// MaxRefusedInRow is how many operations in a row a WebSocket may send that are refused
// (answered with errors and no data: they do not parse, validate or pass the cost bounds, or
// are over the rate limit) before it is closed with CloseBadRequest. Each is charged, but the
// socket of a client that loops on a broken operation, or that makes the server parse and
// validate costly documents, ends; graphql-ws clients do not reconnect after 4400.
const MaxRefusedInRow = 10

// Gate refuses an operation sent on a WebSocket when charge, which charges it as one request
// to the connection's key, refuses it. It is asked before the operation is parsed, so that
// refused operations are charged too. Other operations were charged as HTTP requests.
func (r *Registry) Gate(ctx context.Context) error {
	if c := ConnFrom(ctx); c != nil && c.ws {
		return c.charge(ctx, 1)
	}
	return nil
}

// Admitted is told that an operation passed every check and runs: the run of refused
// operations of its WebSocket ends.
func (r *Registry) Admitted(ctx context.Context) {
	if c := ConnFrom(ctx); c != nil && c.ws {
		c.refused.Store(0)
	}
}

// Refused is told that an operation was refused; the WebSocket that sent MaxRefusedInRow of
// them in a row is closed with CloseBadRequest.
func (r *Registry) Refused(ctx context.Context) {
	c := ConnFrom(ctx)
	if c == nil || !c.ws {
		return
	}
	if c.refused.Add(1) == MaxRefusedInRow {
		c.Cut(CloseBadRequest, fmt.Sprintf("%d operations in a row were refused; fix the client before reconnecting", MaxRefusedInRow))
	}
}
