package graph

import (
	"cmp"
	"net/http"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"

	"petstore/graph/gqlhttp"
	"petstore/graph/guard"
)

// Options are the cost limits and caches of the GraphQL handler. A zero field takes its
// default (DefaultOptions); a negative limit or cache size turns that limit or cache off.
type Options struct {
	// ComplexityLimit is the most an operation may cost (default DefaultComplexityLimit). A
	// field costs one plus its selections; a list field (pets, petsConnection) costs one plus
	// its page size (limit, first; default 20) times the cost of one element:
	// pets(limit: 100) { id name categoryId status } costs 401.
	ComplexityLimit int
	// DepthLimit is how deep an operation's fields may nest, fragments followed (default
	// DefaultDepthLimit): { pets { id } } is 2 deep. __Type.ofType does not count, so that
	// GraphiQL's introspection query (6 deep) passes while a deep introspection query does not.
	DepthLimit int
	// TokenLimit is the most lexical tokens (names, punctuation, values) a query may have
	// (default DefaultTokenLimit); the parser stops at the first token past it.
	TokenLimit int
	// APQCache stores the queries of automatic persisted queries by their SHA-256; nil keeps
	// up to 8 MiB of them in process. Use guard.NewRedisAPQCache to share them between
	// instances. Only queries that parse, validate and pass every limit are stored; queries
	// over guard.MaxPersistedQueryBytes run but are not stored.
	APQCache graphql.Cache[string]
	// Websocket, when not nil, serves GraphQL over WebSocket upgrades (graphql-transport-ws:
	// subscriptions, queries and mutations; wire.Server.Websocket).
	Websocket *transport.Websocket
	// SSE serves GraphQL over Server-Sent Events: a POST with Accept: text/event-stream.
	SSE bool
	// PingEvery is how often an SSE stream gets a comment line, so that proxies and clients
	// see it alive (default 20 s).
	PingEvery time.Duration
	// Gate, when not nil, charges each operation that no RequestMeter charges, once its cost
	// is known, and is told whether it was admitted or refused (OperationGate): conns.Registry
	// charges the operations sent on a WebSocket or an SSE stream and closes a socket that
	// keeps sending refused ones.
	Gate OperationGate
	// QueryCacheSize is how many parsed and validated documents are kept in process, by their
	// text (default DefaultQueryCacheSize), within guard.QueryCacheBytes.
	QueryCacheSize int
	// Documents is the list of trusted documents (documents.Registry) that requests may name by
	// id, and DocumentsMode which documents run (default DocumentsAny); a nil list lists none.
	// A listed document runs as parsed, validated and priced once, when it was listed
	// (trustedDocuments).
	Documents     DocumentList
	DocumentsMode DocumentsMode
	// Tracer, when not nil, is installed first, to span operations and resolvers
	// (tracing.Tracer.GraphQL). If it intercepts fields, it must act on resolvers only
	// (graphql.FieldContext.IsResolver): the flat paths of lists of pets and of edges skip it
	// for Pet's and PetEdge's fields, and so does the shared rendering of a petAdded event for
	// PetAdded's and Pet's.
	Tracer graphql.HandlerExtension
}

// DefaultOptions returns the default limits, with persisted queries kept in process.
func DefaultOptions() Options {
	return Options{
		ComplexityLimit: DefaultComplexityLimit,
		DepthLimit:      DefaultDepthLimit,
		TokenLimit:      DefaultTokenLimit,
		QueryCacheSize:  DefaultQueryCacheSize,
		DocumentsMode:   DocumentsAny,
	}
}

// withDefaults returns o with each zero field set to its default and negative ones to 0 (off).
func (o Options) withDefaults() Options {
	def := DefaultOptions()
	pick := func(v, d int) int {
		if v == 0 {
			return d
		}
		return max(v, 0)
	}
	o.ComplexityLimit = pick(o.ComplexityLimit, def.ComplexityLimit)
	o.DepthLimit = pick(o.DepthLimit, def.DepthLimit)
	o.TokenLimit = pick(o.TokenLimit, def.TokenLimit)
	o.QueryCacheSize = pick(o.QueryCacheSize, def.QueryCacheSize)
	if o.APQCache == nil {
		o.APQCache = guard.NewAPQCache()
	}
	if o.Documents == nil {
		o.Documents = emptyList{}
	}
	o.DocumentsMode = cmp.Or(o.DocumentsMode, DocumentsAny)
	return o
}

// NewHandler returns the GraphQL handler over r: GraphQL over HTTP (GET for queries, POST with
// application/json), automatic persisted queries, and the cost limits of opts. Every error in a
// response carries extensions.code from the contract's vocabulary, upper-cased. Each operation
// is charged to the rate limit what it costs (meteredExecutor, OperationCost): through the
// request's RequestMeter over HTTP, through opts.Gate on a WebSocket or an SSE stream; the
// answer of a query or mutation carries the units charged in extensions.cost.
//
// Responses follow the GraphQL-over-HTTP specification. They use the media type the Accept
// header prefers of application/graphql-response+json and application/json, and
// application/json when it names neither (*/* and a missing Accept included). A request that
// cannot run (a query that does not parse or validate, or bad variables) is answered without a
// data entry, with 400 as application/graphql-response+json and with 200 as
// application/json. Whatever the media type:
//
//   - a refused operation (over ComplexityLimit, DepthLimit or TokenLimit, selecting __schema
//     more than once, or an introspection query nested too deep) gets 400 with
//     INVALID_REQUEST, before any resolver runs; so does a mutation of more than
//     guard.MaxMutationFields fields, a query of more than guard.MaxQueryFields root fields,
//     and (before it is validated) a document over guard.MaxDocumentSelections or
//     guard.MaxDocumentDefinitions;
//   - a body that is not a GraphQL request (not JSON, no query) gets 400 with INVALID_REQUEST;
//   - a batch (a JSON array of operations) gets 400 with INVALID_REQUEST: batching is not
//     supported, send one operation per request;
//   - a mutation sent with GET gets 405 with METHOD_NOT_ALLOWED and Allow: POST;
//   - a POST whose Content-Type is not application/json gets 415 with UNSUPPORTED_MEDIA_TYPE;
//   - a persisted query hash the server does not know gets 200 with PERSISTED_QUERY_NOT_FOUND
//     (what Apollo's clients expect before they send the query with its hash);
//   - a document that opts.DocumentsMode refuses gets Apollo Router's refusal: 404 with
//     PERSISTED_QUERY_NOT_IN_LIST for an id (or, but under DocumentsAny, a hash) that names no
//     listed document, 403 with QUERY_NOT_IN_SAFELIST for a text no listed document has
//     (DocumentsListed), 400 with PERSISTED_QUERY_ID_REQUIRED for any text (DocumentsIDs).
func NewHandler(r *Resolver, opts Options) http.Handler {
	opts = opts.withDefaults()
	cfg := Config{Resolvers: r}
	setCosts(&cfg.Complexity)
	es := NewExecutableSchema(cfg)
	srv := handler.New(es)
	srv.AddTransport(transport.Options{})
	var direct *directExec // direct.go
	if opts.Tracer == nil && !r.genericLists {
		direct = &directExec{r: r, es: es.(*executableSchema), pages: map[string]*directPage{}}
	}
	metered := func(t graphql.Transport) graphql.Transport { return meteredTransport{t, opts.Gate, direct} }
	if opts.Websocket != nil {
		srv.AddTransport(metered(*opts.Websocket)) // first: an upgrade is a GET
	}
	if opts.SSE {
		sse := transport.SSE{KeepAlivePingInterval: cmp.Or(opts.PingEvery, 20*time.Second)}
		srv.AddTransport(metered(gqlhttp.DocumentIDBody{Transport: sse})) // before POST
	}
	srv.AddTransport(metered(gqlhttp.NewTransport(http.MethodGet)))
	srv.AddTransport(metered(gqlhttp.NewTransport(http.MethodPost)))
	srv.AddTransport(gqlhttp.Unsupported{})
	var docs graphql.Cache[*ast.QueryDocument] = graphql.NoCache[*ast.QueryDocument]{}
	if opts.QueryCacheSize > 0 {
		docs = guard.NewDocumentCache(opts.QueryCacheSize)
	}
	docs = trustedCache{docs}
	srv.SetQueryCache(docs)
	srv.SetParserTokenLimit(opts.TokenLimit)
	for _, ext := range extensions(opts, docs, es.Schema()) {
		srv.Use(ext)
	}
	srv.SetDisableSuggestion(true)
	srv.SetValidationRulesFn(guard.ValidationRules)
	srv.SetErrorPresenter(presentError)
	srv.SetRecoverFunc(recoverPanic)
	srv.AroundResponses(normalizeCodes)
	return srv
}

// extensions returns the handler's extensions, in order; docs is the handler's query cache and
// schema its schema.
// None may be a graphql.FieldInterceptor but opts.Tracer: flat lists of pets and petAdded
// events are written without running any (flatpets.go, petadded.go).
func extensions(opts Options, docs graphql.Cache[*ast.QueryDocument], schema *ast.Schema) []graphql.HandlerExtension {
	apq := guard.NewPersistedQueries(opts.APQCache)
	var exts []graphql.HandlerExtension
	if opts.Gate != nil { // first: it sees the answer as sent
		exts = append(exts, operationRefusals{opts.Gate})
	}
	if opts.Tracer != nil {
		exts = append(exts, opts.Tracer)
	}
	exts = append(exts,
		trustedDocuments{opts.Documents, opts.DocumentsMode}, // before persisted queries and parsing
		extension.Introspection{},
		extension.AutomaticPersistedQuery{Cache: apq},
		guard.NewDocumentBounds(docs, opts.TokenLimit),
		guard.NewOperationLimits(opts.DepthLimit, opts.ComplexityLimit, schema),
		apq, // last: it stores the queries that passed every check before it
	)
	return exts
}
