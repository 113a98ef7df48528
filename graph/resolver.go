package graph

import (
	"context"

	"petstore/models"
	"petstore/store"
	"petstore/store/pets"
)

// Resolver is the dependency-injection point of the resolvers, and the one place of business
// logic: REST calls the same resolvers that GraphQL runs. Resolvers return *apierr.Error values
// (invalid_request, not_found, unavailable, internal_error) and never use GraphQL-only context,
// so that they can be called outside a GraphQL operation.
type Resolver struct {
	pets      *pets.Store
	live      Subscriber
	published func(id int64)
	// genericLists turns the flat paths of lists off (marshalList): the reference that tests
	// hold them to.
	genericLists bool
}

// ResolverOptions are what a Resolver serves besides the pets it stores.
type ResolverOptions struct {
	// Live serves the petAdded subscription (conns.Registry); nil: it answers UNAVAILABLE.
	Live Subscriber
	// Published is told the id of each pet added once its transaction committed
	// (live.Hub.Publish); nil: nobody is.
	Published func(id int64)
}

// NewResolver returns the Resolver that stores and reads the pets in petStore, with the
// subscription and the publishing of opts.
func NewResolver(petStore *pets.Store, opts ResolverOptions) *Resolver {
	return &Resolver{pets: petStore, live: opts.Live, published: opts.Published}
}

// create validates input and stores the pet it describes. It returns INVALID_REQUEST naming
// the first bad field; once stored, the pet is published when its transaction, if any,
// commits.
func (r *Resolver) create(ctx context.Context, input models.NewPet) (*models.Pet, error) {
	if err := input.Validate(); err != nil {
		return nil, err
	}
	pet, err := r.pets.Create(ctx, input)
	if err != nil {
		return nil, err
	}
	r.publish(ctx, pet.ID)
	return pet, nil
}

// publish tells r.published about the pet with id once the transaction of ctx, if any,
// has committed (store.OnCommit): a rolled back insert is never told.
func (r *Resolver) publish(ctx context.Context, id int64) {
	if r.published != nil {
		store.OnCommit(ctx, func() { r.published(id) })
	}
}
