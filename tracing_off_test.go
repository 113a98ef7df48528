package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"petstore/auth"
	"petstore/config"
	"petstore/internal/dbtest"
	"petstore/store"
	"petstore/tracing"
)

// TestTracingOffInstallsNothing checks that with tracing off (the OTEL_* variables unset) the
// service makes no span, even with a global tracer provider and propagator that instrumentation
// left in place would fall back to, and that its request line is today's, without trace_id.
func TestTracingOffInstallsNothing(t *testing.T) {
	on, err := config.TracingFromEnv(func(string) string { return "" })
	if err != nil || on {
		t.Fatalf("TracingFromEnv with no variable: got %v, %v; want off", on, err)
	}
	tr, err := tracing.Start(t.Context(), on)
	if tr != nil || err != nil {
		t.Fatalf("tracing.Start(off): got %v, %v; want nil, nil", tr, err)
	}
	spans := tracetest.NewInMemoryExporter()
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans)))
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() { otel.SetTracerProvider(prevTP); otel.SetTextMapPropagator(prevProp) })

	db, err := store.Open(t.Context(), dbtest.DSN(t, "sqlite"), store.DefaultPool, tr.StoreOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := db.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	if d := fmt.Sprintf("%T", db.SQL().Driver()); strings.Contains(d, "otel") {
		t.Errorf("driver: got %s; want the store's own", d)
	}
	client, prefix := dbtest.Redis(t)
	cfg := config.Default()
	cfg.RateLimit.RedisKeyPrefix = prefix
	if err := tr.InstrumentRedis(client); err != nil {
		t.Fatal(err)
	}
	logs := captureLog(t)
	h, err := newTracedHandler(cfg, db, redis.UniversalClient(client), new(drainer), tr)
	if err != nil {
		t.Fatal(err)
	}
	key := (&testAPI{db: db, cfg: cfg}).createKey(t, auth.KeySpec{Plan: "business"})
	for _, r := range []*http.Request{
		httptest.NewRequest(http.MethodGet, "/v1/pets", nil),
		httptest.NewRequest(http.MethodPost, "/v1/graphql", strings.NewReader(`{"query":"{ pets { id } }"}`)),
	} {
		r.Header.Set("Authorization", "Bearer "+key)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Traceparent", incoming)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != http.StatusOK {
			t.Fatalf("%s %s: got %d; want 200", r.Method, r.URL.Path, rec.Code)
		}
		line := logs.requestLine(t, r.URL.Path)
		want := []string{"bytes", "client", "duration_ms", "key_id", "level", "method", "msg", "path", "request_id", "route", "status", "time"}
		if got := keysOf(line); !slices.Equal(got, want) {
			t.Errorf("request line of %s: got fields %v; want %v", r.URL.Path, got, want)
		}
	}
	if got := spans.GetSpans(); len(got) != 0 {
		t.Errorf("tracing off: got %d spans (first %q); want none", len(got), got[0].Name)
	}
}

// keysOf returns the sorted keys of line.
func keysOf(line logLine) []string {
	keys := make([]string, 0, len(line))
	for k := range line {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
