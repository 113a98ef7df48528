package e2e

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"petstore/app"
	"petstore/auth"
	"petstore/config"
	"petstore/store"
	"petstore/testkit/dbtest"
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
	cfg := app.DefaultConfig()
	cfg.RedisKeyPrefix = prefix
	if err := tr.InstrumentRedis(client); err != nil {
		t.Fatal(err)
	}
	logs := captureLog(t)
	h, err := newTracedHandler(cfg, db, redis.UniversalClient(client), tr)
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

// TestTracingExportsOTLP runs `petstore serve` with OTEL_EXPORTER_OTLP_ENDPOINT at a stand-in
// collector and checks that the spans of a request, in the caller's trace and under
// OTEL_SERVICE_NAME, reach it over OTLP/HTTP by the end of the shutdown.
func TestTracingExportsOTLP(t *testing.T) {
	var mu sync.Mutex
	var bodies []byte
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/traces" && r.Header.Get("Content-Type") == "application/x-protobuf" {
			mu.Lock()
			bodies = append(bodies, b...)
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	// The SDK reads its variables from the process; run reads them through its getenv.
	env := []string{"OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL, "OTEL_SERVICE_NAME", "petstore-e2e"}
	for i := 0; i < len(env); i += 2 {
		t.Setenv(env[i], env[i+1])
	}
	base, key, stop, done := startServer(t, env...)
	r, _ := http.NewRequest(http.MethodGet, base+"/v1/pets", nil)
	r.Header.Set("Authorization", "Bearer "+key)
	r.Header.Set("Traceparent", incoming)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	stop()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	traceID, _ := hex.DecodeString(incomingTrace)
	mu.Lock()
	defer mu.Unlock()
	for _, want := range [][]byte{traceID, []byte("GET /v1/pets"), []byte("petstore-e2e"), []byte("sql.stmt.query")} {
		if !bytes.Contains(bodies, want) {
			t.Errorf("the collector received no %q in %d bytes", want, len(bodies))
		}
	}
}
