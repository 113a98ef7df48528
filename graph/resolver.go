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
	settle       *store.Settler // on MySQL (db.Settler), else nil
}

// NewResolver returns a Resolver that stores pets in db, reads from its replicas, and gives
// each statement at most queryTimeout. On a Galera cluster (db.Galera) each insert and each
// page waits until its node has applied the cluster's earlier commits (galeraCreatePetSQL,
// galeraListStatements).
func NewResolver(db *store.DB, queryTimeout time.Duration) *Resolver {
	r := &Resolver{DB: db.DB, Replicas: db.Replicas, queryTimeout: queryTimeout, insertSQL: createPetSQL,
		listSQL: newListStatements(db.Dialect, queryTimeout), replicaSQL: replicaListStatements(queryTimeout),
		settle: db.Settler}
	if db.Galera {
		r.insertSQL = galeraCreatePetSQL
		r.listSQL = galeraListStatements(queryTimeout)
	}
	return r
}

// replica returns a replica for a read of ctx, or false when the read goes to the primary:
// there is no fresh replica, or ctx carries a transaction, whose reads run in it.
func (r *Resolver) replica(ctx context.Context) (store.Read, bool) {
	if store.InTx(ctx) {
		return store.Read{}, false
	}
	return r.Replicas.Pick()
}
