package graph

import (
	"context"
	"time"

	"gorm.io/gorm"

	"petstore/store"
)

// Resolver is the dependency-injection point of the resolvers, and the one place of business
// logic: REST calls the same resolvers that GraphQL runs. Resolvers return *apierr.Error values
// (invalid_request, not_found, unavailable, internal_error) and never use GraphQL-only context,
// so that they can be called outside a GraphQL operation.
type Resolver struct {
	DB *gorm.DB
	// Replicas serve getPet and listings when one is fresh enough (see get and list); nil:
	// every read goes to DB. Set it before the first request.
	Replicas *store.Replicas
	// Live serves the petAdded subscription (live.Registry); nil: it answers UNAVAILABLE. Set
	// it before the first request.
	Live Subscriber
	// Published is told the id of each pet added once its transaction committed
	// (live.Hub.Publish); nil: nobody is.
	Published func(id int64)
	// queryTimeout bounds each statement: a database that does not answer in time makes the
	// request fail with UNAVAILABLE (503) instead of hanging.
	queryTimeout time.Duration
	insertSQL    string // createPetSQL, or galeraCreatePetSQL
	listSQL      listStatements
	replicaSQL   listStatements
	settle       *settler // on a Galera cluster (OnGalera), else nil
}

// NewResolver returns a Resolver that stores pets in db and gives each statement at most
// queryTimeout.
func NewResolver(db *gorm.DB, queryTimeout time.Duration) *Resolver {
	return &Resolver{DB: db, queryTimeout: queryTimeout, insertSQL: createPetSQL,
		listSQL: newListStatements(db.Dialector.Name(), queryTimeout), replicaSQL: replicaListStatements(queryTimeout)}
}

// OnGalera makes r add and list pets as a Galera cluster needs (galeraCreatePetSQL,
// galeraListStatements, settler): each insert and each page once its node has applied the
// cluster's earlier commits, and a cursor handed out only past ids settled for settle
// (GaleraSettle). Call it before the first request.
func (r *Resolver) OnGalera(settle time.Duration) {
	r.insertSQL = galeraCreatePetSQL
	r.listSQL = galeraListStatements(r.queryTimeout)
	r.settle = &settler{delay: settle}
}

// replica returns a replica for a read of ctx, or false when the read goes to the primary:
// there is no fresh replica, or ctx carries a transaction, whose reads run in it.
func (r *Resolver) replica(ctx context.Context) (store.Read, bool) {
	if store.InTx(ctx) {
		return store.Read{}, false
	}
	return r.Replicas.Pick()
}
