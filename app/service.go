// Package app wires the service: it builds each part from the settings' values (config), in
// the order the parts depend on each other (metrics, rate limiter, records, pet store,
// subscriptions, resolvers, GraphQL, router), each whole, and runs the commands of the petstore
// program (cli.go): serve (serve.go), migrate and keys (keys.go). The settings' defaults and the
// rules a part owns over its settings are config.go's.
package app

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"petstore/auth"
	"petstore/clientaddr"
	"petstore/config"
	"petstore/documents"
	"petstore/graph"
	"petstore/graph/guard"
	"petstore/idempotency"
	"petstore/live/wire"
	"petstore/observe"
	"petstore/playground"
	"petstore/ratelimit"
	"petstore/reference"
	"petstore/rest"
	"petstore/store"
	"petstore/store/pets"
	"petstore/tracing"
	"petstore/webhooks"
)

// Service is the wired service: its whole HTTP handler and the parts Serve runs beside it.
type Service struct {
	Handler http.Handler // the API: REST, GraphQL, subscriptions, pages, health checks
	Metrics http.Handler // the Prometheus handler, for PETSTORE_METRICS_ADDR
	// Deps are what Handler's router serves, for tests and benchmarks that serve a router with
	// one part replaced.
	Deps    rest.Deps
	records *idempotency.Records
	drain   *drainer
	pages   *pets.PageCache     // nil: off
	late    *pets.LateBus       // nil: this instance alone
	docs    *documents.Registry // the trusted documents, read again as they change
	hooks   *webhooks.Dispatcher
}

// CloseStreams closes every subscriber connection, as shutdown does after the drain delay.
func (s *Service) CloseStreams() { s.drain.closeStreams() }

// New wires the service on db, with its rate limits, persisted queries and subscription leases
// in rdb when it is not nil (else in process). tr traces requests, GraphQL operations and
// resolvers; nil installs no tracing. The statements and commands of db and rdb are traced
// when they were opened and instrumented by tr. opts are for tests.
func New(cfg config.Config, db *store.DB, rdb redis.UniversalClient, tr *tracing.Tracer, opts ...Option) (*Service, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	metrics, err := newMetrics(db)
	if err != nil {
		return nil, err
	}
	authn := auth.NewAuthenticator(db.DB, db.Replicas, auth.PrefixFor(cfg.Env), cfg.KeyCacheTTL, cfg.DBTimeout)
	limiter, err := newLimiter(cfg, rdb, tr, metrics, authn, o)
	if err != nil {
		return nil, err
	}
	records, err := idempotency.New(db.DB, idempotencyConfig(cfg))
	if err != nil {
		return nil, err
	}
	late := newLateBus(cfg, rdb)
	pages, err := newPageCache(cfg, late, metrics)
	if err != nil {
		return nil, err
	}
	petStore := pets.New(db, cfg.DBTimeout, pages)
	wh, err := newWebhooks(cfg, db, petStore, metrics, o)
	if err != nil {
		return nil, err
	}
	subs, err := newLive(cfg, db, rdb, petStore, authn, limiter, metrics)
	if err != nil {
		return nil, err
	}
	docs, err := documents.NewRegistry(context.Background(), db.DB, graph.Preparer(graphqlLimits(cfg)), cfg.DBTimeout)
	if err != nil {
		return nil, fmt.Errorf("read the trusted documents: %w", err)
	}
	resolver := graph.NewResolver(petStore, graph.ResolverOptions{Live: subs.reg, Published: subs.hub.Publish})
	gql := graph.NewHandler(resolver, graphqlOptions(cfg, rdb, tr, subs, docs))
	drain := &drainer{closeStreams: subs.reg.Shutdown}
	deps, err := newDeps(cfg, parts{db, resolver, gql, authn, limiter, records, metrics, subs, drain, tr, wh.endpoints})
	if err != nil {
		return nil, err
	}
	return &Service{
		Handler: drain.Middleware(rest.NoSniff(rest.CORS(cfg.CORSOrigins, rest.NewRouter(deps)))),
		Metrics: metrics.Handler(),
		Deps:    deps,
		records: records,
		drain:   drain,
		pages:   pages,
		late:    late,
		docs:    docs,
		hooks:   wh.delivering(cfg),
	}, nil
}

// Background runs what the service does beside answering requests, until the function it
// returns is called: it removes expired Idempotency-Key records, reads the trusted documents
// again when they change, delivers webhooks (unless PETSTORE_WEBHOOK_DELIVER is false), and
// hears of the late pets of other instances (pets.LateBus.Listen).
func (s *Service) Background(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var done sync.WaitGroup
	done.Go(func() { s.records.RunPurger(ctx, idempotency.DefaultPurgeEvery) })
	done.Go(func() { s.docs.Run(ctx, documents.DefaultRefreshEvery) })
	if s.hooks != nil {
		done.Go(func() { s.hooks.Run(ctx) })
	}
	if s.pages != nil && s.late != nil {
		done.Go(func() { s.late.Listen(ctx, s.pages) })
	}
	return func() { cancel(); done.Wait() }
}

// newLateBus returns the bus on which this instance, under a random name, and the others
// sharing rdb tell each other of late pets; nil without Redis.
func newLateBus(cfg config.Config, rdb redis.UniversalClient) *pets.LateBus {
	if rdb == nil {
		return nil
	}
	return pets.NewLateBus(rdb, cfg.RedisKeyPrefix, rand.Text())
}

// newPageCache returns the page cache of cfg, nil when it is off, its figures exported by
// metrics; it tells the other instances of each late pet through late, when not nil.
func newPageCache(cfg config.Config, late *pets.LateBus, metrics *observe.Metrics) (*pets.PageCache, error) {
	if cfg.PageCacheBytes == 0 {
		return nil, nil
	}
	var publish func(id int64)
	if late != nil {
		publish = late.Publish
	}
	pages := pets.NewPageCache(cfg.PageCacheBytes, publish)
	return pages, metrics.Register(pets.NewCacheCollector(pages))
}

// newMetrics returns the service's Prometheus metrics, db's connection pool among them.
func newMetrics(db *store.DB) (*observe.Metrics, error) {
	metrics, err := observe.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		return nil, err
	}
	return metrics, metrics.RegisterDB(db.SQL())
}

// newLimiter returns the rate limiter of cfg (as o tunes it), counting in rdb when it is not
// nil, else in process, its decisions and store errors counted by metrics, reading at once the
// keys that authn lists whatever their address's budget.
func newLimiter(cfg config.Config, rdb redis.UniversalClient, tr *tracing.Tracer, metrics *observe.Metrics, authn *auth.Authenticator, o options) (*ratelimit.Limiter, error) {
	rl := limiterConfig(cfg)
	if o.rateLimit != nil {
		o.rateLimit(&rl)
	}
	var counters ratelimit.Counters = ratelimit.NewMemoryCounters(nil)
	if rdb != nil {
		counters = ratelimit.NewRedisCounters(rdb, rl.RedisKeyPrefix, tr.PipelineContext())
	}
	rl.OnDecision = metrics.ObserveDecision
	rl.Listed = authn.Listed
	limiter, err := ratelimit.New(rl, counters)
	if err != nil {
		return nil, err
	}
	return limiter, metrics.RegisterStoreErrors(limiter.StoreErrors)
}

// graphqlLimits returns the GraphQL options that cfg sets: which documents run, the cost
// limits and the size of the cache of parsed documents.
func graphqlLimits(cfg config.Config) graph.Options {
	g := cfg.GraphQL
	return graph.Options{
		DocumentsMode:   graph.DocumentsMode(g.DocumentsMode),
		ComplexityLimit: g.ComplexityLimit, DepthLimit: g.DepthLimit, TokenLimit: g.TokenLimit,
		QueryCacheSize: g.QueryCacheSize,
	}
}

// graphqlOptions returns cfg's GraphQL options (graphqlLimits) with what the wiring adds:
// persisted queries in rdb when it is not nil (under the key prefix of every key the service
// writes there), the trusted documents docs, the tracer's extension, and the subscriptions'
// transports and gate.
func graphqlOptions(cfg config.Config, rdb redis.UniversalClient, tr *tracing.Tracer, subs subscriptions, docs *documents.Registry) graph.Options {
	opts := graphqlLimits(cfg)
	opts.Documents = docs
	if rdb != nil {
		opts.APQCache = guard.NewRedisAPQCache(rdb, cfg.RedisKeyPrefix+"apq:", cfg.APQTTL)
	}
	opts.Tracer = tr.GraphQL()
	opts.Websocket, opts.SSE, opts.Gate = &subs.ws, true, subs.reg
	return opts
}

// parts are the wired parts that the router serves.
type parts struct {
	db       *store.DB
	resolver *graph.Resolver
	gql      http.Handler
	authn    *auth.Authenticator
	limiter  *ratelimit.Limiter
	records  *idempotency.Records
	metrics  *observe.Metrics
	subs     subscriptions
	drain    *drainer
	tr       *tracing.Tracer
	hooks    *webhooks.Endpoints
}

// newDeps returns what the router serves: p, the documents and pages, the client address of
// cfg's proxies, and the request log (traced when p.tr is not nil).
func newDeps(cfg config.Config, p parts) (rest.Deps, error) {
	doc, err := rest.OpenAPIDocument(cfg.PublicURL, cfg.StagingURL, rest.Contact{Email: cfg.ContactEmail, URL: cfg.ContactURL})
	if err != nil {
		return rest.Deps{}, err
	}
	proxies, err := clientaddr.ParseProxies(cfg.TrustedProxies)
	if err != nil {
		return rest.Deps{}, err
	}
	var traceID func(context.Context) string
	if p.tr != nil {
		traceID = tracing.TraceID
	}
	requestLog := &observe.RequestLog{TraceID: traceID} // to slog.Default(), set up by withConfig
	origins := rest.AllowsOrigin(cfg.CORSOrigins)       // the browser origins a WebSocket may come from
	return rest.Deps{
		Resolver:   p.resolver,
		GraphQL:    p.gql,
		OpenAPI:    doc,
		Playground: playground.HandlerWith("/v1/graphql", playground.Options{Documents: cfg.GraphQL.DocumentsMode}),
		Reference:  reference.Handler("/v1/openapi.json"),
		SDL:        graph.SDL(),
		Identify:   p.authn.Identify,
		Lookup:     p.authn.Lookup,
		Limit:      p.limiter,
		Idempotent: p.records.Middleware,
		ClientAddr: proxies.Middleware,
		RequestLog: requestLog.Middleware,
		Trace:      p.tr.Middleware(),
		Metrics:    p.metrics,
		MetricsOff: cfg.MetricsAddr != "",
		Ready:      p.db.Ready,
		Draining:   p.drain.Draining,
		Upgrade:    p.subs.wire.Upgrade(origins, p.limiter.ClientAddr, p.gql),
		Keyless:    wire.KeylessUpgrade(origins),
		Stream:     p.subs.wire.Stream(p.gql),
		Streams:    wire.IsStream,
		Immutable:  cfg.PageCacheBytes != 0,
		Webhooks:   p.hooks,
	}, nil
}
