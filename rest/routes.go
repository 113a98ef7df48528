// Package rest is the thin Gin layer of the /v1 REST contract: each handler parses the HTTP
// request, calls the same resolver GraphQL runs, and writes the answer or the Error body.
package rest

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"petstore/apierr"
	"petstore/auth"
	"petstore/graph"
	"petstore/internal/jsonbody"
	"petstore/observe"
	"petstore/webhooks"
)

// Deps are what the router serves.
type Deps struct {
	Resolver   *graph.Resolver
	GraphQL    http.Handler                // the GraphQL handler, served at /v1/graphql
	OpenAPI    []byte                      // the OpenAPI document, served at /v1/openapi.json
	Playground http.Handler                // the GraphiQL page, served at /v1/playground without a key (a browser opening /v1/graphql is sent there); nil for none
	Reference  http.Handler                // the REST API reference, served at /v1/docs without a key (a browser opening / is sent there); nil for none
	SDL        []byte                      // the GraphQL schema, served at /v1/graphql/schema.graphql without a key; nil for none
	Identify   gin.HandlerFunc             // identifies the caller's key; leaves a key not found valid before for Lookup (auth.Authenticator.Identify)
	Lookup     gin.HandlerFunc             // reads the key table for a key Identify left pending (auth.Authenticator.Lookup); nil for none
	Limit      Limiter                     // rate limiter; nil for none
	Idempotent gin.HandlerFunc             // makes POST /v1/pets safe to retry (idempotency.Records.Middleware); nil for none
	ClientAddr gin.HandlerFunc             // works out the client address once (clientaddr.Proxies.Middleware); nil: the immediate peer
	RequestLog gin.HandlerFunc             // request ID and one log line per request (observe.RequestLog.Middleware); nil for none
	Trace      gin.HandlerFunc             // the server span of each request (tracing.Tracer.Middleware); nil for none
	Metrics    *observe.Metrics            // counts every request and serves GET /metrics; nil for none
	MetricsOff bool                        // GET /metrics is served on a listener of its own (PETSTORE_METRICS_ADDR): here it is 404
	Ready      func(context.Context) error // nil when the service can serve; for /readyz
	Draining   func() bool                 // true once shutdown has begun, when /readyz answers 503; nil for never
	Upgrade    gin.HandlerFunc             // serves a WebSocket upgrade of /v1/graphql in place of auth.Require (wire.Server.Upgrade); nil for none
	Keyless    func(*http.Request) bool    // reports a WebSocket upgrade without a key, which GET /v1/graphql charges to nobody (wire.KeylessUpgrade); nil for none
	Stream     gin.HandlerFunc             // serves GraphQL over Server-Sent Events in place of GraphQL (wire.Server.Stream); nil for none
	Streams    func(*http.Request) bool    // reports a request that Stream serves (wire.IsStream), charged one request as it opens; nil for none
	Immutable  bool                        // nothing but the API writes the pets (PETSTORE_PAGE_CACHE on): full pages and single pets are sent as immutable
	Webhooks   *webhooks.Endpoints         // the webhook endpoints of each key, served at /v1/webhooks; nil for none
}

// Limiter is the rate limiter as the router places it (ratelimit.Limiter).
type Limiter interface {
	// Gate refuses, before the key table is read for an uncached key, a client address over
	// its budget.
	Gate(c *gin.Context)
	// Middleware charges the request to its key or its address and sets the rate-limit headers.
	Middleware(c *gin.Context)
	// Meter is Middleware for a GraphQL operation over HTTP: the request of a valid key is
	// charged by the GraphQL handler, what its operation costs, and gets its headers then.
	Meter(c *gin.Context)
}

// NewRouter returns the whole HTTP surface: /v1 (REST, GraphQL, OpenAPI, playground, API
// reference, GraphQL schema), /healthz, /readyz and /metrics; / sends a browser to the
// reference and tells an API client where the API is.
func NewRouter(d Deps) *gin.Engine {
	r := newEngine(d)
	// Unknown paths and methods under /v1 are API answers too: identified and charged, so that
	// they carry the rate-limit headers, but answered without requiring a key. / is answered
	// uncharged, like the pages it leads to.
	ident := identify(d, nil, nil)
	r.NoRoute(slices.Concat(underV1(ident), []gin.HandlerFunc{atRoot(d.Reference != nil), notFound})...)
	r.NoMethod(append(underV1(ident), methodNotAllowed)...)

	get(r, "/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	get(r, "/readyz", ready(d.Ready, d.Draining))
	if d.Metrics != nil && !d.MetricsOff {
		get(r, "/metrics", gin.WrapH(d.Metrics.Handler()))
	}
	v1 := r.Group("/v1")
	webpageRoutes(v1, d)
	apiRoutes(v1, d, ident)
	return r
}

// newEngine returns the gin engine with the middleware every request goes through: the span
// first, so that it covers the whole request and the log line carries its trace ID; then the
// client address, read by the log and the limiter alike; then observation, before recovery,
// so that it sees every request and the 500 of a recovered panic, and every later log line
// carries the request ID; then recovery.
func newEngine(d Deps) *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	r.HandleMethodNotAllowed = true
	r.ContextWithFallback = true
	_ = r.SetTrustedProxies(nil) // c.ClientIP() is the peer: the client address is clientaddr's
	for _, m := range []gin.HandlerFunc{d.Trace, d.ClientAddr, d.RequestLog} {
		if m != nil {
			r.Use(m)
		}
	}
	if d.Metrics != nil {
		r.Use(d.Metrics.Middleware)
	}
	r.Use(gin.CustomRecoveryWithWriter(nil, recovered))
	return r
}

// webpageRoutes routes what /v1 serves without a key: the OpenAPI document, the playground,
// the REST reference and the GraphQL schema.
func webpageRoutes(v1 *gin.RouterGroup, d Deps) {
	get(v1, "/openapi.json", func(c *gin.Context) { c.Data(http.StatusOK, "application/json", d.OpenAPI) })
	if d.Playground != nil {
		get(v1, "/playground", gin.WrapH(d.Playground))
		get(v1, "/playground/assets/*asset", gin.WrapH(d.Playground))
	}
	if d.Reference != nil {
		get(v1, "/docs", gin.WrapH(d.Reference))
		get(v1, "/docs/assets/*asset", gin.WrapH(d.Reference))
	}
	if d.SDL != nil {
		get(v1, "/graphql/schema.graphql", serveSDL(d.SDL))
	}
}

// apiRoutes routes the operations of /v1, each behind ident (identify and charge), then the
// refusal of oversized requests and of the unidentified, and the body's bound.
func apiRoutes(v1 *gin.RouterGroup, d Deps, ident []gin.HandlerFunc) {
	chain := slices.Concat(ident, []gin.HandlerFunc{limitRequest, auth.Require, limitBody})
	api := v1.Group("", chain...)
	q, m := d.Resolver.Query(), d.Resolver.Mutation()
	get(api, "/pets", listPets(d.Resolver, d.Immutable))
	create := []gin.HandlerFunc{createPet(m)}
	if d.Idempotent != nil {
		create = slices.Insert(create, 0, d.Idempotent)
	}
	api.POST("/pets", create...)
	// getPet marks every answer deprecated, the 401 and 429 ones included.
	get(v1, "/pets/:petId", slices.Concat([]gin.HandlerFunc{deprecated}, chain, []gin.HandlerFunc{getPet(q, d.Immutable)})...)
	get(api, "/store/orders", listOrders)
	if d.Webhooks != nil {
		webhookRoutes(api, d.Webhooks)
	}
	graphqlRoutes(v1, d)
}

// graphqlRoutes routes /v1/graphql. An operation over HTTP is charged what it costs, once the
// GraphQL handler knows; a WebSocket upgrade or an event stream one request as it opens, its
// operations what they cost past that (live). A WebSocket upgrade is identified and charged,
// but its key may come in connection_init: one without a key is charged there, to the key.
func graphqlRoutes(v1 *gin.RouterGroup, d Deps) {
	metered := func(r *http.Request) bool { return !isUpgrade(r) && (d.Streams == nil || !d.Streams(r)) }
	gql := slices.Concat(identify(d, d.Keyless, metered), []gin.HandlerFunc{limitRequest, requireOrUpgrade(d.Upgrade), limitBody,
		gin.WrapH(d.GraphQL)})
	if d.Playground != nil {
		gql = slices.Insert(gql, 0, toPlayground) // a browser opening the endpoint gets the playground
	}
	v1.GET("/graphql", gql...) // GraphQL over HTTP defines GET and POST only
	post := []gin.HandlerFunc{gin.WrapH(d.GraphQL)}
	if d.Stream != nil {
		post = slices.Insert(post, 0, d.Stream)
	}
	v1.POST("/graphql", slices.Concat(identify(d, nil, metered), []gin.HandlerFunc{limitRequest, auth.Require, limitBody}, post)...)
}

// get routes GET and HEAD on path to handlers: a HEAD is answered as its GET, identified,
// charged and validated alike, its body dropped by net/http, as RFC 9110 asks every server to
// answer HEAD where it answers GET.
func get(g gin.IRoutes, path string, handlers ...gin.HandlerFunc) {
	g.GET(path, handlers...)
	g.HEAD(path, handlers...)
}

// requireOrUpgrade returns auth.Require, or upgrade for a WebSocket upgrade when upgrade is
// not nil.
func requireOrUpgrade(upgrade gin.HandlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		if upgrade != nil && isUpgrade(c.Request) {
			upgrade(c)
			return
		}
		auth.Require(c)
	}
}

// isUpgrade reports whether r asks for a WebSocket upgrade.
func isUpgrade(r *http.Request) bool { return strings.EqualFold(r.Header.Get("Upgrade"), "websocket") }

// identify returns the middleware that identifies a /v1 request and charges it: the key from
// the cache; for a key the cache does not hold, the limiter's gate (an address over its budget
// is refused before the key table is read, unless its key is listed valid or the over-budget
// reads have one left), then the read; then the charge to the key, or to the client address
// when there is no valid key. A request that uncharged reports (nil: none) is charged to
// nobody; one that metered reports (nil: none) is charged by its handler (Limiter.Meter).
func identify(d Deps, uncharged, metered func(*http.Request) bool) []gin.HandlerFunc {
	chain := []gin.HandlerFunc{d.Identify}
	if d.Limit != nil {
		chain = append(chain, d.Limit.Gate)
	}
	if d.Lookup != nil {
		chain = append(chain, d.Lookup)
	}
	if d.Limit != nil {
		chain = append(chain, charge(d.Limit, uncharged, metered))
	}
	return chain
}

// charge returns l's charge of a request: none for those that uncharged reports, Meter for
// those that metered reports (either nil: none), else Middleware.
func charge(l Limiter, uncharged, metered func(*http.Request) bool) gin.HandlerFunc {
	if uncharged == nil && metered == nil {
		return l.Middleware
	}
	return func(c *gin.Context) {
		switch {
		case uncharged != nil && uncharged(c.Request):
		case metered != nil && metered(c.Request):
			l.Meter(c)
		default:
			l.Middleware(c)
		}
	}
}

// underV1 returns handlers that run hs only for paths under /v1.
func underV1(hs []gin.HandlerFunc) []gin.HandlerFunc {
	out := make([]gin.HandlerFunc, len(hs))
	for i, h := range hs {
		out[i] = func(c *gin.Context) {
			if p := c.Request.URL.Path; p == "/v1" || strings.HasPrefix(p, "/v1/") {
				h(c)
			}
		}
	}
	return out
}

// limitBody refuses bodies over jsonbody.MaxBytes: at once when Content-Length says so, else when the
// reader passes the limit. A request without a body (http.NoBody, most GETs) is left as it is.
func limitBody(c *gin.Context) {
	if c.Request.ContentLength > jsonbody.MaxBytes {
		writeError(c, jsonbody.ErrTooLarge)
		return
	}
	if c.Request.Body != http.NoBody {
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, jsonbody.MaxBytes)
	}
}

// ready answers /readyz: 200 while check passes and the instance is not draining, else 503
// unavailable.
func ready(check func(context.Context) error, draining func() bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		if draining != nil && draining() {
			writeError(c, apierr.New(apierr.Unavailable, "the instance is shutting down"))
			return
		}
		if check != nil {
			ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
			defer cancel()
			if err := check(ctx); err != nil {
				writeError(c, &apierr.Error{Code: apierr.Unavailable, Message: "the database is not answering", Err: err})
				return
			}
		}
		c.JSON(http.StatusOK, gin.H{"status": "ready"})
	}
}
