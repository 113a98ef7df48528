package conns

import (
	"context"
	"fmt"

	"petstore/apierr"
	"petstore/live"
	"petstore/models"
)

// MaxRefusedInRow is how many operations in a row a WebSocket may send that are refused
// (answered with errors and no data: they do not parse, validate or pass the cost bounds, or
// are over the rate limit) before it is closed with live.CloseBadRequest. Each is charged, but the
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
		return c.Charge(ctx, cost)
	case cost > 1:
		return c.Charge(ctx, cost-1)
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
// them in a row is closed with live.CloseBadRequest.
func (r *Registry) Refused(ctx context.Context) {
	c := ConnFrom(ctx)
	if c == nil || !c.ws {
		return
	}
	if c.refused.Add(1) == MaxRefusedInRow {
		c.Cut(live.CloseBadRequest, fmt.Sprintf("%d operations in a row were refused; fix the client before reconnecting", MaxRefusedInRow))
	}
}

// Subscribe takes a subscription slot of the connection of ctx (an SSE stream holds its own
// already) until ctx ends, and returns the Hub's events: see live.Hub.Subscribe. Without a
// connection (a plain HTTP request) it fails. The Hub gives the slot back as the subscription
// leaves (live.Hub.SubscribeReleasing), or at once when it refuses the subscription.
func (r *Registry) Subscribe(ctx context.Context, status *models.PetStatus, afterID int64, resume bool) (<-chan *live.Event, error) {
	c := ConnFrom(ctx)
	if c == nil {
		return nil, apierr.Invalid("subscriptions run over WebSocket (graphql-transport-ws) or Server-Sent Events (Accept: text/event-stream)")
	}
	if c.held {
		return r.hub.Subscribe(ctx, c, status, afterID, resume)
	}
	release, err := c.acquire(ctx)
	if err != nil {
		return nil, err
	}
	events, err := r.hub.SubscribeReleasing(ctx, c, status, afterID, resume, release)
	if err != nil {
		release()
	}
	return events, err
}
