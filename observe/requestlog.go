package observe

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gin-gonic/gin"

	"petstore/auth"
	"petstore/clientaddr"
	"petstore/internal/jsonstr"
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
	if h, ok := log.Handler().(logHandler); ok && h.lines != nil {
		var addr [64]byte // the client address's text, only for appendJSON
		fast := line      // line's strings leak to slog below, fast's do not
		fast.client = appendClient(addr[:0], r)
		bp := lineBuffers.Get().(*[]byte)
		*bp = fast.appendJSON((*bp)[:0], time.Now(), level)
		_, _ = h.lines.Write(*bp)
		lineBuffers.Put(bp)
		return
	}
	line.client = client(r)
	log.LogAttrs(ctx, level, "request", line.attrs()...)
}

// requestLine is the content of a request's log line.
type requestLine struct {
	method, route, path, id, client string
	traceID                         string // "": none
	status, bytes                   int
	duration                        time.Duration
	keyID                           int64 // 0: no key
}

// attrs returns the fields of l as slog attributes, in the order of appendJSON.
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

// appendJSON appends l as slog.JSONHandler writes a record of message "request" at t with the
// fields of attrs, and a newline.
func (l *requestLine) appendJSON(b []byte, t time.Time, level slog.Level) []byte {
	b = append(b, `{"time":"`...)
	b = appendTime(b, t)
	b = append(b, `","level":`...)
	b = jsonstr.Append(b, level.String())
	b = append(b, `,"msg":"request","method":`...)
	b = jsonstr.Append(b, l.method)
	b = jsonstr.Append(append(b, `,"route":`...), l.route)
	b = jsonstr.Append(append(b, `,"path":`...), l.path)
	b = strconv.AppendInt(append(b, `,"status":`...), int64(l.status), 10)
	// slog writes floats as encoding/json does: 'f' formatting in this range.
	b = appendMillis(append(b, `,"duration_ms":`...), l.duration.Microseconds())
	b = strconv.AppendInt(append(b, `,"bytes":`...), int64(l.bytes), 10)
	b = jsonstr.Append(append(b, `,"`+requestIDField+`":`...), l.id)
	if l.traceID != "" {
		b = jsonstr.Append(append(b, `,"`+traceIDField+`":`...), l.traceID)
	}
	b = jsonstr.Append(append(b, `,"client":`...), l.client)
	if l.keyID != 0 {
		b = strconv.AppendInt(append(b, `,"key_id":`...), l.keyID, 10)
	}
	return append(b, "}\n"...)
}

// appendMillis appends us microseconds in milliseconds as slog writes durationMillis, as
// strconv.AppendFloat(b, float64(us)/1000, 'f', -1, 64) does: for us from 0 to 10^15, whose
// millisecond values have at most 15 significant digits, the shortest decimal that gives
// float64(us)/1000 back is us/1000 itself, trailing zeros cut; others are left to strconv.
func appendMillis(b []byte, us int64) []byte {
	if us < 0 || us >= 1e15 {
		return strconv.AppendFloat(b, float64(us)/1000, 'f', -1, 64)
	}
	b = strconv.AppendInt(b, us/1000, 10)
	frac := us % 1000
	if frac == 0 {
		return b
	}
	digits, n := [3]byte{byte('0' + frac/100), byte('0' + frac/10%10), byte('0' + frac%10)}, 3
	for digits[n-1] == '0' {
		n--
	}
	return append(append(b, '.'), digits[:n]...)
}

// secondStamp is the RFC 3339 form of a whole second in a location.
type secondStamp struct {
	unix  int64
	loc   *time.Location
	stamp []byte // date and time (19 bytes), then the zone
}

// lastSecond is the secondStamp of the last request line's second.
var lastSecond atomic.Pointer[secondStamp]

// appendTime appends t as t.AppendFormat(b, time.RFC3339Nano) does, the date, time and zone
// formatted once a second, not on every line.
func appendTime(b []byte, t time.Time) []byte {
	unix, loc := t.Unix(), t.Location()
	s := lastSecond.Load()
	if s == nil || s.unix != unix || s.loc != loc {
		if y := t.Year(); y < 0 || y > 9999 { // not four digits
			return t.AppendFormat(b, time.RFC3339Nano)
		}
		s = &secondStamp{unix: unix, loc: loc, stamp: t.Truncate(time.Second).AppendFormat(nil, time.RFC3339)}
		lastSecond.Store(s)
	}
	b = append(b, s.stamp[:19]...)
	if ns := t.Nanosecond(); ns != 0 {
		digits := [10]byte{'.'}
		for i := 9; i > 0; i-- {
			digits[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := 10
		for digits[n-1] == '0' {
			n--
		}
		b = append(b, digits[:n]...)
	}
	return append(b, s.stamp[19:]...)
}

// lineBuffers holds the buffers request lines are written in.
var lineBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

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

// appendClient returns client(r), its text appended to b when it is an address: a string
// that shares b's bytes (or those of a larger array when b is too short), to be read only
// while b is not written.
func appendClient(b []byte, r *http.Request) string {
	if a := clientaddr.From(r); a.IsValid() {
		b = a.AppendTo(b)
		return unsafe.String(unsafe.SliceData(b), len(b))
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
