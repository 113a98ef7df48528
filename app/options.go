package app

import (
	"petstore/ratelimit"
	"petstore/webhooks"
)

// Option changes how New wires the service, for tests.
type Option func(*options)

// options are what Options set.
type options struct {
	resolver  webhooks.Resolver       // nil: the system's
	rateLimit func(*ratelimit.Config) // nil: the limiter as cfg sets it
}

// WithResolver makes webhook urls resolve with r, a test's resolver that answers private and
// metadata addresses for test names without any DNS traffic.
func WithResolver(r webhooks.Resolver) Option { return func(o *options) { o.resolver = r } }

// WithRateLimit lets set change the rate limiter's config, once cfg's settings are in it: a
// test's way to the limiter's tunings that are no setting (OverBudgetKeyReads).
func WithRateLimit(set func(*ratelimit.Config)) Option {
	return func(o *options) { o.rateLimit = set }
}
