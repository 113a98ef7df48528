package observe

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"petstore/auth"
	"petstore/clientaddr"
)

// Bounds of the logged request line: a hostile client may send a path of up to the server's
// header limit, and a long method; the log keeps their start.
const (
	maxLoggedPath   = 1024
	maxLoggedMethod = 32
)

// traceIDField is the log field of the trace ID.
const traceIDField = "trace_id"

// quietRoute reports whether route is one of the operations routes, polled by orchestrators
// and scrapers, whose request lines are logged at debug level.
func quietRoute(route string) bool {
	switch route {
	case "/healthz", "/readyz", "/metrics":
		return true
	}
	return false
}

// RequestLog is the middleware that gives every request its ID (see the package doc) and
// writes one log line per request once it has been answered.
type RequestLog struct {
	log *slog.Logger // nil: slog.Default() at each request
	// TraceID, when not nil, returns the trace ID of a request's context, logged as trace_id
	// unless empty (tracing.TraceID). Nil (tracing off) adds nothing to the line.
	TraceID func(context.Context) string
}

// NewRequestLog returns a RequestLog writing to log, or to slog.Default() at each request
// when log is nil. Use a JSON handler for one JSON object per line.
func NewRequestLog(log *slog.Logger) *RequestLog { return &RequestLog{log: log} }

// Middleware is the gin.HandlerFunc of the RequestLog. Install it first, before gin's
// recovery (see the package doc). It sets X-Request-ID on the response and the request ID in
// the request's context before the rest of the chain runs, then logs the request.
func (rl *RequestLog) Middleware(c *gin.Context) {
	start := time.Now()
	id, value := requestIDFrom(c.Request.Header)
	c.Writer.Header()[headerKey] = value
	c.Request = c.Request.WithContext(withRequestID(c.Request.Context(), id))
	c.Next()
	rl.write(c, id, time.Since(start))
}

// write logs the request line of c, answered after d.
func (rl *RequestLog) write(c *gin.Context, id string, d time.Duration) {
	r, route, status := c.Request, c.FullPath(), c.Writer.Status()
	ctx, level, log := r.Context(), levelOf(route, status), rl.logger()
	if !log.Enabled(ctx, level) {
		return
	}
	line := requestLine{
		method: truncate(r.Method, maxLoggedMethod), route: routeLabel(route),
		path: truncate(r.URL.EscapedPath(), maxLoggedPath), status: status, duration: d,
		bytes: max(0, c.Writer.Size()), id: id,
	}
	if p := auth.FromContext(ctx); p != nil {
		line.keyID = p.KeyID
	}
	if rl.TraceID != nil {
		line.traceID = rl.TraceID(ctx)
	}
	line.client = client(r)
	// As log.LogAttrs, but with no source: the line's caller is always this function, and
	// finding it (runtime.Callers) was a tenth of the line's cost.
	rec := slog.NewRecord(time.Now(), level, "request", 0)
	rec.AddAttrs(line.attrs()...)
	_ = log.Handler().Handle(ctx, rec)
}

// requestLine is the content of a request's log line.
type requestLine struct {
	method, route, path, id, client string
	traceID                         string // "": none
	status, bytes                   int
	duration                        time.Duration
	keyID                           int64 // 0: no key
}

// attrs returns the fields of l as slog attributes, in the order they are logged.
func (l *requestLine) attrs() []slog.Attr {
	attrs := make([]slog.Attr, 0, 9)
	attrs = append(attrs,
		slog.String("method", l.method),
		slog.String("route", l.route),
		slog.String("path", l.path),
		slog.Int("status", l.status),
		slog.Float64("duration_ms", l.durationMillis()),
		slog.Int("bytes", l.bytes),
		slog.String(requestIDField, l.id),
	)
	if l.traceID != "" {
		attrs = append(attrs, slog.String(traceIDField, l.traceID))
	}
	attrs = append(attrs, slog.String("client", l.client))
	if l.keyID != 0 {
		attrs = append(attrs, slog.Int64("key_id", l.keyID))
	}
	return attrs
}

// durationMillis is the duration in milliseconds, to the microsecond.
func (l *requestLine) durationMillis() float64 { return float64(l.duration.Microseconds()) / 1000 }

// logger returns the logger of rl.
func (rl *RequestLog) logger() *slog.Logger {
	if rl.log != nil {
		return rl.log
	}
	return slog.Default()
}

// levelOf returns the level of the request line of a request to route answered with status.
func levelOf(route string, status int) slog.Level {
	switch {
	case quietRoute(route):
		return slog.LevelDebug
	case status >= http.StatusInternalServerError && status != http.StatusNotImplemented:
		return slog.LevelError
	}
	return slog.LevelInfo
}

// client returns r's client address as clientaddr worked it out (behind a trusted proxy, the
// client it names), or, when none could be, RemoteAddr as it came.
func client(r *http.Request) string {
	if a := clientaddr.From(r); a.IsValid() {
		return a.String()
	}
	return r.RemoteAddr
}

// truncate returns s cut to at most n bytes, marked with a trailing "..." when cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
