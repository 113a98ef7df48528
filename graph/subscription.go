package graph

import (
	"context"

	"petstore/apierr"
	"petstore/live"
	"petstore/models"
	"petstore/store"
)

// Subscriber serves the petAdded subscription: the events of the pets added from now on (of
// status when it is not nil), after those above afterID when resume is true
// (live.Registry.Subscribe).
type Subscriber interface {
	Subscribe(ctx context.Context, status *models.PetStatus, afterID int64, resume bool) (<-chan *live.Event, error)
}

// petAdded checks the cursor and subscribes.
func (r *Resolver) petAdded(ctx context.Context, status *models.PetStatus, after *string) (<-chan *live.Event, error) {
	afterID, err := models.DecodeCursor(after)
	if err != nil {
		return nil, err
	}
	if r.Live == nil {
		return nil, apierr.New(apierr.Unavailable, "subscriptions are not served by this instance")
	}
	return r.Live.Subscribe(ctx, status, afterID, after != nil)
}

// published tells r.Published about the pet with id once the transaction of ctx, if any,
// has committed (store.OnCommit): a rolled back insert is never told.
func (r *Resolver) published(ctx context.Context, id int64) {
	if r.Published != nil {
		store.OnCommit(ctx, func() { r.Published(id) })
	}
}

// PetsAfter reads up to n pets after afterID in id order on the primary, of status when it is
// not nil, and whether more follow: a settled page of the listing (settledPage), so no pet it
// skips can commit later. It is live.HubOptions.Read.
func (r *Resolver) PetsAfter(ctx context.Context, afterID int64, n int, status *models.PetStatus) ([]models.Pet, bool, error) {
	return r.settledPage(ctx, n, afterID, status)
}

// LastPetID returns the highest pet id stored, 0 for none, once every id up to it is settled:
// where a Hub starts (live.HubOptions.LastID).
func (r *Resolver) LastPetID(ctx context.Context) (int64, error) {
	const q = "SELECT COALESCE(MAX(id), 0) FROM pets"
	for attempt := 0; ; attempt++ {
		var m store.Mark
		if r.settle != nil {
			m = r.settle.Mark()
		}
		id, err := r.lastID(ctx, q)
		if err != nil || r.settle == nil {
			return id, err
		}
		ok, err := r.settle.Check(ctx, m, m.Settled, id, nil, nil)
		if err != nil || ok {
			return id, err
		}
		if err := r.settle.Pause(ctx, attempt); err != nil {
			return 0, store.APIError(err)
		}
	}
}

// lastID runs q, which reads the highest pet id, on the primary.
func (r *Resolver) lastID(ctx context.Context, q string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, r.queryTimeout)
	defer cancel()
	var id int64
	if err := r.DB.Statement.ConnPool.QueryRowContext(ctx, q).Scan(&id); err != nil {
		return 0, store.APIError(err)
	}
	return id, nil
}
