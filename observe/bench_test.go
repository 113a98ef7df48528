package observe

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"petstore/auth"
	"petstore/ratelimit"
)

// discardWriter is a ResponseWriter that keeps nothing but its header map, so that the
// benchmarks measure the router and the middleware, not a recorder.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}

// benchRouter returns a router serving GET /v1/pets/:petId behind middleware.
func benchRouter(b *testing.B, middleware ...gin.HandlerFunc) http.Handler {
	b.Helper()
	r := gin.New()
	r.Use(middleware...)
	r.GET("/v1/pets/:petId", func(c *gin.Context) { c.Status(http.StatusNoContent) })
	return r
}

// benchServe serves GET /v1/pets/42 through h b.N times.
func benchServe(b *testing.B, h http.Handler) {
	req := httptest.NewRequest(http.MethodGet, "/v1/pets/42", nil)
	w := &discardWriter{h: make(http.Header)}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		h.ServeHTTP(w, req)
	}
}

func benchMetrics(b *testing.B) *Metrics {
	b.Helper()
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	return m
}

func benchLog(level slog.Level) *RequestLog {
	return NewRequestLog(slog.New(NewJSONLogHandler(io.Discard, &slog.HandlerOptions{Level: level})))
}

// BenchmarkBare is the router alone: the baseline of the others.
func BenchmarkBare(b *testing.B) { benchServe(b, benchRouter(b)) }

// BenchmarkMetrics adds Metrics.Middleware.
func BenchmarkMetrics(b *testing.B) { benchServe(b, benchRouter(b, benchMetrics(b).Middleware)) }

// BenchmarkRequestLog adds RequestLog.Middleware writing JSON lines (to io.Discard).
func BenchmarkRequestLog(b *testing.B) {
	benchServe(b, benchRouter(b, benchLog(slog.LevelInfo).Middleware))
}

// BenchmarkRequestLogOff adds RequestLog.Middleware with its lines disabled by level: the
// cost of the request ID alone.
func BenchmarkRequestLogOff(b *testing.B) {
	benchServe(b, benchRouter(b, benchLog(slog.LevelError).Middleware))
}

// BenchmarkBoth is the service's order: RequestLog then Metrics.
func BenchmarkBoth(b *testing.B) {
	benchServe(b, benchRouter(b, benchLog(slog.LevelInfo).Middleware, benchMetrics(b).Middleware))
}

// BenchmarkBothParallel is BenchmarkBoth from every core.
func BenchmarkBothParallel(b *testing.B) {
	h := benchRouter(b, benchLog(slog.LevelInfo).Middleware, benchMetrics(b).Middleware)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		req := httptest.NewRequest(http.MethodGet, "/v1/pets/42", nil)
		w := &discardWriter{h: make(http.Header)}
		for pb.Next() {
			clear(w.h)
			h.ServeHTTP(w, req)
		}
	})
}

// BenchmarkObserveDecision is the limiter hook.
func BenchmarkObserveDecision(b *testing.B) {
	m := benchMetrics(b)
	b.ReportAllocs()
	for b.Loop() {
		m.ObserveDecision(1, "pro")
	}
}

// BenchmarkLimiterHook is the in-process limiter's middleware without and with the
// Config.OnDecision hook feeding Metrics.
func BenchmarkLimiterHook(b *testing.B) {
	p := &auth.Principal{KeyID: 1, Plan: auth.Plan{Name: "pro", PerMinute: 1 << 40, PerDay: 1 << 40}}
	for _, name := range []string{"off", "on"} {
		b.Run(name, func(b *testing.B) {
			cfg := ratelimit.DefaultConfig()
			if name == "on" {
				cfg.OnDecision = benchMetrics(b).ObserveDecision
			}
			l, err := ratelimit.New(cfg, ratelimit.NewMemoryCounters(nil))
			if err != nil {
				b.Fatal(err)
			}
			h := benchRouter(b, l.Middleware)
			req := httptest.NewRequest(http.MethodGet, "/v1/pets/42", nil)
			req = req.WithContext(auth.NewContext(req.Context(), p))
			w := &discardWriter{h: make(http.Header)}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				h.ServeHTTP(w, req)
			}
		})
	}
}
