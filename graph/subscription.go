package graph

import (
	"context"

	"petstore/apierr"
	"petstore/live"
	"petstore/models"
)

// Subscriber serves the petAdded subscription: the events of the pets added from now on (of
// status when it is not nil), after those above afterID when resume is true
// (conns.Registry.Subscribe).
type Subscriber interface {
	Subscribe(ctx context.Context, status *models.PetStatus, afterID int64, resume bool) (<-chan *live.Event, error)
}

// petAdded checks the cursor and subscribes. A subscription whose context ended while it
// started (its client gone, or its stream ended by the client's input) ends without an error of
// its own: the failure is the end's echo, and the end says why.
func (r *Resolver) petAdded(ctx context.Context, status *models.PetStatus, after *string) (<-chan *live.Event, error) {
	afterID, err := models.DecodeCursor(after)
	if err != nil {
		return nil, err
	}
	if r.live == nil {
		return nil, apierr.New(apierr.Unavailable, "subscriptions are not served by this instance")
	}
	events, err := r.live.Subscribe(ctx, status, afterID, after != nil)
	if err != nil && ctx.Err() != nil {
		ended := make(chan *live.Event)
		close(ended)
		return ended, nil
	}
	return events, err
}
