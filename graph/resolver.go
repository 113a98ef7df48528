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
	// queryTimeout bounds each statement: a database that does not answer in time makes the
	// request fail with UNAVAILABLE (503) instead of hanging.
	queryTimeout time.Duration
	listSQL      listStatements
}

// NewResolver returns a Resolver that stores pets in db and gives each statement at most
// queryTimeout.
func NewResolver(db *gorm.DB, queryTimeout time.Duration) *Resolver {
	return &Resolver{DB: db, queryTimeout: queryTimeout, listSQL: newListStatements(db.Dialector.Name(), queryTimeout)}
}

// conn returns the handle a resolver runs one statement on: the request's transaction if it
// has one, bounded by QueryTimeout. Call cancel when the statement is done.
func (r *Resolver) conn(ctx context.Context) (*gorm.DB, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, r.queryTimeout)
	return store.Conn(ctx, r.DB), cancel
}
