package graph

import (
	"context"
	"net/http"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"petstore/apierr"
	"petstore/graph/gqlhttp"
	"petstore/live"
)

// OperationGate charges the operations sent on a connection and watches how they end. Each
// method does nothing for an operation that is not the gate's to charge (an HTTP request,
// which its RequestMeter charges).
type OperationGate interface {
	// Charge charges the operation of ctx cost units of the rate limit: its OperationCost
	// once it parsed, validated and passed the bounds, or one when it was refused before. Its
	// error (an *apierr.Error) refuses the operation with the protocol's error message.
	Charge(ctx context.Context, cost int) error
	// Admitted is told that the operation passed every check, its charge included, and runs.
	Admitted(ctx context.Context)
	// Refused is told that the operation was answered with errors and no data: it did not run.
	Refused(ctx context.Context)
}

// RequestMeter is the http.ResponseWriter of an HTTP request whose rate-limit charge waits for
// what its operation costs (ratelimit.Limiter.Meter).
type RequestMeter interface {
	// ChargeRequest charges the request cost units, once: later calls charge nothing and
	// return what the first returned. It returns the units charged, and the refusal of the
	// request, if any: rate_limited, key_suspended or unavailable, which the meter has
	// answered itself, or invalid_request, which the caller answers.
	ChargeRequest(cost int) (charged int, err error)
}

// meteredTransport is a transport whose operations are charged by what they cost: over HTTP
// through the request's RequestMeter, the ResponseWriter, when it is one; else through gate.
type meteredTransport struct {
	graphql.Transport
	gate   OperationGate // nil for none
	direct *directExec   // nil: every operation on gqlgen's executor
}

// Do serves r with an executor that charges its operations.
func (t meteredTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	e := &meteredExecutor{GraphExecutor: exec, gate: t.gate, direct: t.direct}
	e.meter, _ = w.(RequestMeter)
	t.Transport.Do(w, r, e)
}

// meteredExecutor charges each operation its OperationCost (a listed document's, worked out once:
// operationCost) once it is parsed, validated and within the bounds, and one request when it is refused before that (it does not parse or
// validate, is over a bound, or names a persisted query the server does not know); over HTTP,
// a request refused before its operation is read (a body that is no GraphQL request) costs one
// request too. The answers of queries and mutations carry the cost in extensions.cost.
type meteredExecutor struct {
	graphql.GraphExecutor
	meter  RequestMeter  // the request's, over HTTP; nil for none
	gate   OperationGate // the connection's, when meter is nil; nil for none
	direct *directExec   // nil: every operation on gqlgen's executor
}

// CreateOperationContext parses, validates and checks the operation of params, then charges it.
func (e *meteredExecutor) CreateOperationContext(ctx context.Context, params *graphql.RawParams) (*graphql.OperationContext, gqlerror.List) {
	opCtx, errs := e.GraphExecutor.CreateOperationContext(ctx, params)
	cost := 1
	if errs == nil {
		cost = operationCost(opCtx)
	}
	if err := e.charge(ctx, cost); err != nil {
		apiErr := apierr.From(err)
		refusal := &gqlerror.Error{Message: apiErr.Message, Err: apiErr}
		gqlhttp.SetCode(refusal, apiErr.Code) // a protocol error's code (refusalCodes)
		return opCtx, gqlerror.List{refusal}
	}
	if errs == nil && e.gate != nil {
		e.gate.Admitted(ctx)
	}
	return opCtx, errs
}

// charge charges the operation of ctx cost units.
func (e *meteredExecutor) charge(ctx context.Context, cost int) error {
	switch {
	case e.meter != nil:
		_, err := e.meter.ChargeRequest(cost)
		return err
	case e.gate != nil:
		return e.gate.Charge(ctx, cost)
	}
	return nil
}

// DispatchOperation runs the operation of opCtx (directly when it can: dispatch), the cost of a
// query or mutation in its answer's extensions. A subscription's responses wait for its next
// event first, through a live.Relay, before gqlgen's interceptors run: its goroutine idles on
// a small stack. A subscription keeps opCtx for as long as it lives, without the statistics
// of the extensions (dropStats).
func (e *meteredExecutor) DispatchOperation(ctx context.Context, opCtx *graphql.OperationContext) (graphql.ResponseHandler, context.Context) {
	if opCtx.Operation.Operation == ast.Subscription {
		dropStats(opCtx)
		ctx, relay := live.WithRelay(ctx)
		var next graphql.ResponseHandler
		onFreshStack(func() { next, ctx = e.GraphExecutor.DispatchOperation(ctx, opCtx) })
		return func(ctx context.Context) *graphql.Response {
			relay.Wait(ctx)
			return next(ctx)
		}, ctx
	}
	next, ctx := e.dispatch(ctx, opCtx)
	cost := operationCost(opCtx)
	return func(ctx context.Context) *graphql.Response { return withCost(next(ctx), cost) }, ctx
}

// dropStats drops the statistics the extensions kept in opCtx (the complexity, the listed
// document, a persisted query to store), which are read only while the operation is created
// and charged, and keeps the timings: their map costs an idle subscription some 350 bytes.
func dropStats(opCtx *graphql.OperationContext) {
	s := &opCtx.Stats
	opCtx.Stats = graphql.Stats{OperationStart: s.OperationStart, Read: s.Read, Parsing: s.Parsing, Validation: s.Validation}
}

// DispatchError answers an operation that does not run. Over HTTP it charges one request when
// the request was not charged yet, and the answer carries what the request was charged.
func (e *meteredExecutor) DispatchError(ctx context.Context, list gqlerror.List) *graphql.Response {
	if e.meter == nil {
		return e.GraphExecutor.DispatchError(ctx, list)
	}
	charged, _ := e.meter.ChargeRequest(1)
	return withCost(e.GraphExecutor.DispatchError(ctx, list), charged)
}

// withCost returns resp with cost in its extensions (none when cost is zero: nothing charged).
func withCost(resp *graphql.Response, cost int) *graphql.Response {
	switch {
	case resp == nil || cost == 0:
	case resp.Extensions == nil && cost < len(costExtensions):
		resp.Extensions = costExtensions[cost]
	case resp.Extensions == nil:
		resp.Extensions = map[string]any{"cost": cost}
	default:
		resp.Extensions["cost"] = cost
	}
	return resp
}

// costExtensions are the extensions of the answers that cost 1 to 16 units, shared by all of
// them, read-only: nothing writes to an answer's extensions once withCost has set them (the
// transports marshal them), and a new map per answer would cost two allocations.
var costExtensions = func() (m [17]map[string]any) {
	for i := 1; i < len(m); i++ {
		m[i] = map[string]any{"cost": i}
	}
	return m
}()

// operationRefusals tells its gate of each operation answered with errors and no data (an
// operation refused, whose answer gqlgen's DispatchError passes through the response
// interceptors).
type operationRefusals struct{ gate OperationGate }

var _ interface {
	graphql.HandlerExtension
	graphql.ResponseInterceptor
} = operationRefusals{}

func (operationRefusals) ExtensionName() string                   { return "OperationRefusals" }
func (operationRefusals) Validate(graphql.ExecutableSchema) error { return nil }

// InterceptResponse tells the gate of a response with errors and no data.
func (g operationRefusals) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	resp := next(ctx)
	if resp != nil && len(resp.Data) == 0 && len(resp.Errors) > 0 {
		g.gate.Refused(ctx)
	}
	return resp
}

// onFreshStack runs f on a goroutine of its own, which ends, and waits for it; a panic of f
// goes on in the caller. The stack f needs (a subscription's start: its resolver, database
// statements, caps) grows that goroutine's, not the caller's, which then idles on the stack it
// started with.
func onFreshStack(f func()) {
	var p any
	done := make(chan struct{})
	go func() {
		defer func() {
			p = recover()
			close(done)
		}()
		f()
	}()
	<-done
	if p != nil {
		panic(p)
	}
}
