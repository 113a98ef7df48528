package e2e

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"petstore/app"
	"petstore/auth"
	"petstore/observe"
	"petstore/store"
	"petstore/testkit/dbtest"
	"petstore/tracing"
)

// BenchmarkTracing measures one REST and one GraphQL request through the whole handler, on
// SQLite with the limiter in process and request lines written (to io.Discard), with tracing
// off (what the service runs when no OTEL_* variable is set) and on (every request sampled,
// its spans handed to a batch processor whose exporter drops them). Compare allocs/op: off
// must be what it was before tracing existed.
func BenchmarkTracing(b *testing.B) {
	prev := slog.Default()
	slog.SetDefault(slog.New(observe.NewJSONLogHandler(io.Discard, nil)))
	b.Cleanup(func() { slog.SetDefault(prev) })
	for _, mode := range []string{"off", "on"} {
		var tr *tracing.Tracer
		if mode == "on" {
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardExporter{}), sdktrace.WithSampler(sdktrace.AlwaysSample()))
			b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			tr = tracing.New(tp)
		}
		db, err := store.Open(context.Background(), dbtest.DSN(b, "sqlite"), store.DefaultPool, tr.StoreOptions()...)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = db.Close() })
		if _, err := db.Migrate(context.Background()); err != nil {
			b.Fatal(err)
		}
		cfg := app.DefaultConfig()
		h, err := newTracedHandler(cfg, db, nil, tr)
		if err != nil {
			b.Fatal(err)
		}
		key := (&testAPI{db: db, cfg: cfg}).createKey(b, auth.KeySpec{Plan: "enterprise", PerMinute: 1 << 40, PerDay: 1 << 40})
		seed(b, h, key, 20)
		for _, req := range []struct{ name, method, path, body string }{
			{"rest", http.MethodGet, "/v1/pets?limit=20", ""},
			{"graphql", http.MethodPost, "/v1/graphql", `{"query":"{ pets(limit: 20) { id name categoryId status } }"}`},
		} {
			b.Run(mode+"/"+req.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					r := httptest.NewRequest(req.method, req.path, strings.NewReader(req.body))
					r.Header.Set("Authorization", "Bearer "+key)
					r.Header.Set("Content-Type", "application/json")
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, r)
					if rec.Code != http.StatusOK {
						b.Fatalf("got %d %s", rec.Code, rec.Body)
					}
				}
			})
		}
	}
}

// discardExporter drops the spans it is given.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }
