package tracing

import (
	"context"
	"errors"

	"github.com/99designs/gqlgen/graphql"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"petstore/apierr"
)

// maxOperationName bounds the operation name in a span's name and attributes: the client
// chooses it.
const maxOperationName = 128

// GraphQL returns the gqlgen extension that spans each operation and, within it, each
// resolver (graph.Options.Tracer), or nil when t is nil. It spans no field that is not a
// resolver, such as Pet's, which the flat path of a list of pets writes without interceptors.
func (t *Tracer) GraphQL() graphql.HandlerExtension {
	if t == nil {
		return nil
	}
	return gqlTracer{tracer: t.tp.Tracer(scope)}
}

// gqlTracer is the extension of Tracer.GraphQL.
type gqlTracer struct{ tracer trace.Tracer }

var (
	_ graphql.OperationInterceptor = gqlTracer{}
	_ graphql.FieldInterceptor     = gqlTracer{}
)

// ExtensionName names the extension.
func (gqlTracer) ExtensionName() string { return "Tracing" }

// Validate accepts any schema.
func (gqlTracer) Validate(graphql.ExecutableSchema) error { return nil }

// InterceptOperation spans the operation, named after its type and name ("query Pets"), until
// its response is made.
func (g gqlTracer) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	kind, name := "query", ""
	if oc := graphql.GetOperationContext(ctx); oc != nil {
		if oc.Operation != nil {
			kind, name = string(oc.Operation.Operation), oc.Operation.Name
		}
		if len(name) > maxOperationName {
			name = name[:maxOperationName]
		}
	}
	spanName := kind
	if name != "" {
		spanName += " " + name
	}
	ctx, span := g.tracer.Start(ctx, spanName, trace.WithAttributes(
		attribute.String("graphql.operation.type", kind), attribute.String("graphql.operation.name", name)))
	responses := next(ctx)
	return func(ctx context.Context) *graphql.Response {
		defer span.End() // only the first response matters: no transport here streams
		return responses(ctx)
	}
}

// InterceptField spans a resolver, named after its type and field ("Query.pets").
func (g gqlTracer) InterceptField(ctx context.Context, next graphql.Resolver) (any, error) {
	fc := graphql.GetFieldContext(ctx)
	if fc == nil || !fc.IsResolver {
		return next(ctx)
	}
	ctx, span := g.tracer.Start(ctx, fc.Object+"."+fc.Field.Name)
	defer span.End()
	res, err := next(ctx)
	if err != nil {
		setErrorStatus(span, err)
	}
	return res, err
}

// setErrorStatus marks span failed when err is a server-side failure, with the error's code
// as its description; an error message, which may quote the client's input, is never kept.
func setErrorStatus(span trace.Span, err error) {
	var apiErr *apierr.Error
	if !errors.As(err, &apiErr) {
		span.SetStatus(codes.Error, string(apierr.Internal))
		return
	}
	if apiErr.Status() >= 500 {
		span.SetStatus(codes.Error, string(apiErr.Code))
	}
}
