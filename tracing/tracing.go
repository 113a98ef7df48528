// Package tracing traces requests with OpenTelemetry: a span for each HTTP request (otelgin),
// for the GraphQL operation and each of its resolvers (an extension of gqlgen), for each SQL
// statement (otelsql, at the driver) and each Redis command (redisotel). The trace of a request
// continues the one its W3C traceparent header names, and its ID is in the request's log line.
//
// Tracing is on only when the standard OTEL_* variables ask for it (config.TracingFromEnv);
// off, nothing of this package is installed: a nil *Tracer installs nothing. Spans are sent
// with OTLP over HTTP, as the OTEL_EXPORTER_OTLP_* variables say, sampled as
// OTEL_TRACES_SAMPLER says, describing the service that OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES name (petstore by default).
//
// No span carries the API key, a header but User-Agent, the query string, a request or
// response body, the text or variables of a GraphQL document, the arguments of an SQL statement
// (its text has placeholders) or its error's message, or the arguments or keys of a Redis
// command (SECURITY.md).
package tracing

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/contrib/instrumentation/github.com/gin-gonic/gin/otelgin"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// ServiceName is the service.name of the spans unless OTEL_SERVICE_NAME says otherwise.
const ServiceName = "petstore"

// scope is the instrumentation scope of the spans this package makes itself (GraphQL).
const scope = "petstore/tracing"

// Tracer installs the instrumentation of each layer, sending spans to one tracer provider. A
// nil *Tracer is tracing off: its methods install nothing, and those that return middleware
// or an extension return nil.
type Tracer struct {
	tp       trace.TracerProvider
	prop     propagation.TextMapPropagator
	shutdown func(context.Context) error
}

// New returns a Tracer sending its spans to tp (in tests, an SDK provider with an in-memory
// exporter). Its propagator is W3C Trace Context alone: a request's baggage is not read.
func New(tp trace.TracerProvider) *Tracer {
	return &Tracer{tp: tp, prop: propagation.TraceContext{}, shutdown: func(context.Context) error { return nil }}
}

// Start returns the Tracer that exports with OTLP over HTTP as the OTEL_* variables of the
// process say, or nil when on is false (tracing off). Shut it down to send the last spans.
func Start(ctx context.Context, on bool) (*Tracer, error) {
	if !on {
		return nil, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, err
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(ServiceName)), // before WithFromEnv, which wins
		resource.WithTelemetrySDK(), resource.WithHost(), resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, err
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		slog.WarnContext(ctx, "tracing: spans not sent", "err", err)
	}))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)) // sampler: OTEL_TRACES_SAMPLER
	t := New(tp)
	t.shutdown = tp.Shutdown
	return t, nil
}

// ShutdownTimeout bounds Shutdown: an unreachable collector does not hold the process.
const ShutdownTimeout = 5 * time.Second

// Shutdown sends the spans not sent yet, within ShutdownTimeout, and stops the exporter;
// nothing when t is nil.
func (t *Tracer) Shutdown() error {
	if t == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	return t.shutdown(ctx)
}

// quietRoutes are the routes polled by orchestrators and scrapers, which get no span.
var quietRoutes = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// Middleware returns the Gin middleware that starts each request's server span, a child of
// the span its traceparent header names, or nil when t is nil. Install it first, so that the
// span covers the whole request and its log line.
func (t *Tracer) Middleware() gin.HandlerFunc {
	if t == nil {
		return nil
	}
	return otelgin.Middleware("",
		otelgin.WithTracerProvider(t.tp),
		otelgin.WithPropagators(t.prop),
		otelgin.WithMeterProvider(noop.NewMeterProvider()), // metrics are observe's
		otelgin.WithGinFilter(func(c *gin.Context) bool { return !quietRoutes[c.FullPath()] }),
	)
}

// InstrumentRedis makes rdb trace each command and pipeline with the command's name only,
// without its arguments or keys; nothing when t or rdb is nil.
func (t *Tracer) InstrumentRedis(rdb redis.UniversalClient) error {
	if t == nil || rdb == nil {
		return nil
	}
	return redisotel.InstrumentTracing(rdb,
		redisotel.WithTracerProvider(t.tp),
		redisotel.WithDBStatement(false),
		redisotel.WithCallerEnabled(false),
		redisotel.WithDialFilter(true),
	)
}

// PipelineContext returns the context function of a rate-limit pipeline in Redis
// (ratelimit.NewRedisCounters), or nil when t is nil. A pipeline decides the
// requests that queued together; its span is a child of the first one's span, and ends with
// the pipeline whether that request is still running or not.
func (t *Tracer) PipelineContext() func(first context.Context) context.Context {
	if t == nil {
		return nil
	}
	return func(first context.Context) context.Context {
		return trace.ContextWithSpanContext(context.Background(), trace.SpanContextFromContext(first))
	}
}

// TraceID returns the ID of the trace of ctx's span, as 32 hexadecimal digits, or "" when ctx
// has none (observe.RequestLog.TraceID).
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}
