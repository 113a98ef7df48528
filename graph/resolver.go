package graph

import "gorm.io/gorm"

// Resolver is the dependency-injection point of the resolvers, and the one place of business
// logic: REST calls the same resolvers that GraphQL runs. Resolvers return *apierr.Error values
// (invalid_request, not_found, internal_error) and never use GraphQL-only context, so that they
// can be called outside a GraphQL operation.
type Resolver struct {
	DB *gorm.DB
}

// NewResolver returns a Resolver that stores pets in db.
func NewResolver(db *gorm.DB) *Resolver {
	return &Resolver{DB: db}
}
