// Package auth identifies API callers by their bearer keys: the key format (prefix, random
// part, checksum), hashing, the cached key lookup and the Gin middleware that serves every /v1
// API route, REST and GraphQL alike.
package auth

import "context"

// Plan is a rate-limit plan with its requests per minute and per day.
type Plan struct {
	Name      string
	PerMinute int64
	PerDay    int64
}

// The plans of the contract. Enterprise limits are set per key.
var (
	Free     = Plan{Name: "free", PerMinute: 60, PerDay: 1000}
	Pro      = Plan{Name: "pro", PerMinute: 300, PerDay: 10000}
	Business = Plan{Name: "business", PerMinute: 1000, PerDay: 100000}
)

// Enterprise is the name of the plan whose limits are set per key.
const Enterprise = "enterprise"

// PlanNames are the names of every plan, in the contract's order.
var PlanNames = []string{Free.Name, Pro.Name, Business.Name, Enterprise}

// Principal is the authenticated caller of a request: one API key and its limits.
type Principal struct {
	KeyID int64
	Plan  Plan // the key's plan; for enterprise keys, with the key's own limits
}

type principalKey struct{}

// NewContext returns ctx carrying p.
func NewContext(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal of the request, or nil when the request has no valid key.
func FromContext(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}
