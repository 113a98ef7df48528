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

// Charge charges an operation cost units to the key of its connection: the whole cost on a
// WebSocket (one for an operation refused before its cost was known, so that refused
// operations are charged too), what it costs past one request on an SSE stream, which was
// charged as the HTTP request it is. Its error refuses the operation. Operations of no
// connection are charged as HTTP requests.
func (r *Registry) Charge(ctx context.Context, cost int) error {
	switch c := ConnFrom(ctx); {
	case c == nil:
	case c.ws:
		return c.charge(ctx, cost)
	case cost > 1:
		return c.charge(ctx, cost-1)
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
