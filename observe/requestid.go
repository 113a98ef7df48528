package observe

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"unsafe"
)

// Header is the request and response header that carries the request ID.
const Header = "X-Request-ID"

// headerKey is Header in the canonical form net/http stores it under, so that reading and
// writing it need no canonicalization.
var headerKey = http.CanonicalHeaderKey(Header)

// MaxRequestIDLen is the longest client-sent request ID that is kept.
const MaxRequestIDLen = 128

// requestIDField is the log field of the request ID.
const requestIDField = "request_id"

// requestIDKey is the context key of the request ID.
type requestIDKey struct{}

// RequestID returns the request ID that RequestLog.Middleware put in ctx, or "" when none.
func RequestID(ctx context.Context) string {
	if c, ok := ctx.Value(requestIDKey{}).(*idContext); ok {
		return c.id
	}
	return ""
}

// withRequestID returns ctx carrying id.
func withRequestID(ctx context.Context, id string) context.Context {
	return &idContext{Context: ctx, id: id}
}

// idContext is a context carrying a request ID: one allocation, where context.WithValue takes
// a second to box the string as an any.
type idContext struct {
	context.Context
	id string
}

// Value returns the idContext itself for requestIDKey, and the parent's value for any other
// key.
func (c *idContext) Value(key any) any {
	if _, ok := key.(requestIDKey); ok {
		return c
	}
	return c.Context.Value(key)
}

// requestIDFrom returns the request ID of a request with header h: its own when it sent one
// valid X-Request-ID value, else a new one; and the value of the response's X-Request-ID
// header, which carries it.
func requestIDFrom(h http.Header) (string, []string) {
	if vs := h[headerKey]; len(vs) == 1 && validRequestID(vs[0]) {
		return vs[0], []string{vs[0]}
	}
	id := newRequestID()
	return id.value[0], id.value[:]
}

// validRequestID reports whether id has 1 to MaxRequestIDLen characters, each a letter, a
// digit or one of . _ ~ - (the unreserved characters of RFC 3986): safe in logs, URLs and
// headers as is.
func validRequestID(id string) bool {
	if len(id) == 0 || len(id) > MaxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !unreserved(id[i]) {
			return false
		}
	}
	return true
}

// unreserved reports whether b is an unreserved character of RFC 3986.
func unreserved(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	return b == '.' || b == '_' || b == '~' || b == '-'
}

// newID is a new request ID and the header value that carries it, in one allocation.
type newID struct {
	value [1]string // the ID, whose bytes are text
	text  [32]byte
}

// newRequestID returns 128 random bits as 32 hexadecimal digits. The bits come from the
// runtime's per-thread ChaCha8 generator (seeded by the system's), which costs no system call:
// a request ID ties a client's view to the logs and is no secret.
func newRequestID() *newID {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
	id := new(newID)
	hex.Encode(id.text[:], b[:])
	// text is never written again: the string may share its bytes.
	id.value[0] = unsafe.String(&id.text[0], len(id.text))
	return id
}

// NewLogHandler returns a handler that passes every record to h with the request ID of the
// record's context added as request_id, unless the record has a request_id already. Wrap
// the handler of the default logger with it so that every line logged with a request's
// context (slog.InfoContext(r.Context(), ...)) names its request. Under WithGroup, the field
// lands inside the group, like any other attribute of the record.
func NewLogHandler(h slog.Handler) slog.Handler { return logHandler{Handler: h} }

// NewJSONLogHandler returns NewLogHandler(slog.NewJSONHandler(w, opts)): the service's
// handler, one JSON object per line.
func NewJSONLogHandler(w io.Writer, opts *slog.HandlerOptions) slog.Handler {
	return NewLogHandler(slog.NewJSONHandler(w, opts))
}

// logHandler is the handler of NewLogHandler.
type logHandler struct{ slog.Handler }

// Handle adds the request ID of ctx to r and passes it on.
func (h logHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := RequestID(ctx); id != "" && !hasAttr(r, requestIDField) {
		r = r.Clone()
		r.AddAttrs(slog.String(requestIDField, id))
	}
	return h.Handler.Handle(ctx, r)
}

// WithAttrs returns the wrapped handler with attrs, still adding request IDs.
func (h logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return logHandler{Handler: h.Handler.WithAttrs(attrs)}
}

// WithGroup returns the wrapped handler with the group, still adding request IDs.
func (h logHandler) WithGroup(name string) slog.Handler {
	return logHandler{Handler: h.Handler.WithGroup(name)}
}

// hasAttr reports whether r has a top-level attribute named key.
func hasAttr(r slog.Record, key string) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = a.Key == key
		return !found
	})
	return found
}
