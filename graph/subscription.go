package graph

import (
	"context"

	"petstore/apierr"
	"petstore/live"
	"petstore/migrations"
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
// not nil, and whether more follow: the listing's statement, which on MySQL waits for every
// uncommitted lower id (see newListStatements), so no pet it skips can commit later. It is
// live.HubOptions.Read.
func (r *Resolver) PetsAfter(ctx context.Context, afterID int64, n int, status *models.PetStatus) ([]models.Pet, bool, error) {
	return r.page(ctx, r.DB.Statement.ConnPool, r.listSQL, n, afterID, status)
}

// LastPetID returns the highest pet id stored, 0 for none: where a Hub starts
// (live.HubOptions.LastID).
func (r *Resolver) LastPetID(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, r.queryTimeout)
	defer cancel()
	q := "SELECT COALESCE(MAX(id), 0) FROM pets"
	if r.DB.Dialector.Name() == migrations.MySQL {
		q += " LOCK IN SHARE MODE" // waits for the inserts under way to end
	}
	var id int64
	err := r.DB.Statement.ConnPool.QueryRowContext(ctx, q).Scan(&id)
	if err != nil {
		return 0, store.APIError(err)
	}
	return id, nil
}
