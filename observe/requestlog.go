package observe

import (
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"petstore/auth"
)

// Bounds of the logged request line: a hostile client may send a path of up to the server's
// header limit, and a long method; the log keeps their start.
const (
	maxLoggedPath   = 1024
	maxLoggedMethod = 32
)

// quietRoutes are the operations routes, polled by orchestrators and scrapers, whose request
// lines are logged at debug level.
var quietRoutes = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// RequestLog is the middleware that gives every request its ID (see the package doc) and
// writes one log line per request once it has been answered.
type RequestLog struct {
	log *slog.Logger // nil: slog.Default() at each request
}

// NewRequestLog returns a RequestLog writing to log, or to slog.Default() at each request
// when log is nil. Use a JSON handler for one JSON object per line.
func NewRequestLog(log *slog.Logger) *RequestLog { return &RequestLog{log: log} }

// Middleware is the gin.HandlerFunc of the RequestLog. Install it first, before gin's
// recovery (see the package doc). It sets X-Request-ID on the response and the request ID in
// the request's context before the rest of the chain runs, then logs the request.
func (rl *RequestLog) Middleware(c *gin.Context) {
	start := time.Now()
	id := requestIDFrom(c.Request.Header)
	c.Writer.Header()[headerKey] = []string{id}
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
	attrs := make([]slog.Attr, 0, 10)
	attrs = append(attrs,
		slog.String("method", truncate(r.Method, maxLoggedMethod)),
		slog.String("route", routeLabel(route)),
		slog.String("path", truncate(r.URL.EscapedPath(), maxLoggedPath)),
		slog.Int("status", status),
		slog.Float64("duration_ms", float64(d.Microseconds())/1000),
		slog.Int("bytes", max(0, c.Writer.Size())),
		slog.String(requestIDField, id),
		slog.String("client", peer(r.RemoteAddr)),
	)
	if p := auth.FromContext(ctx); p != nil {
		attrs = append(attrs, slog.Int64("key_id", p.KeyID))
	}
	log.LogAttrs(ctx, level, "request", attrs...)
}

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
	case quietRoutes[route]:
		return slog.LevelDebug
	case status >= http.StatusInternalServerError && status != http.StatusNotImplemented:
		return slog.LevelError
	}
	return slog.LevelInfo
}

// peer returns the address part of remoteAddr ("203.0.113.7:51234" gives "203.0.113.7"), or
// remoteAddr itself when it has no port.
func peer(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		return remoteAddr
	}
	return host
}

// truncate returns s cut to at most n bytes, marked with a trailing "..." when cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
