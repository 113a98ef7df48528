package live

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"petstore/apierr"
	"petstore/auth"
	"petstore/models"
)

// IsStream reports whether r asks for GraphQL over Server-Sent Events.
func IsStream(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

// Stream returns the middleware of POST /v1/graphql with Accept: text/event-stream, placed
// after auth.Require (a missing, unknown or revoked key gets 401, an over-limit or suspended
// one 429, as any request): it holds one of the key's connection and subscription slots for
// the stream (429 rate_limited over the cap; 503 unavailable while the Redis of the caps fails
// and the policy is to fail closed), lifts the server's write timeout for it while
// bounding each write by RegistryOptions.WriteTimeout, and ends the stream with an error event
// saying why when the stream is cut off. Other requests pass untouched.
func (r *Registry) Stream() gin.HandlerFunc {
	return func(c *gin.Context) {
		if !IsStream(c.Request) {
			return
		}
		p := auth.FromContext(c.Request.Context())
		if p == nil {
			return // auth.Require answers
		}
		ctx, cancel := context.WithCancel(c.Request.Context())
		defer cancel()
		conn, err := r.open(ctx, p, func(int, string) { cancel() }, true)
		if err != nil {
			if apierr.From(err).Code == apierr.RateLimited {
				c.Header("Retry-After", "5")
			}
			apierr.Write(c.Writer, c.Request, err)
			c.Abort()
			return
		}
		defer r.close(conn)
		rc := http.NewResponseController(c.Writer)
		_ = rc.SetWriteDeadline(time.Time{}) // a stream outlives the server's WriteTimeout
		c.Writer = &sseWriter{ResponseWriter: c.Writer, rc: rc, conn: conn, timeout: r.opts.WriteTimeout}
		c.Request = c.Request.WithContext(WithConn(ctx, conn))
		c.Next()
	}
}

// sseWriter bounds each write of a stream, and puts an error event saying why before the
// complete event of a stream that was cut off.
type sseWriter struct {
	gin.ResponseWriter
	rc      *http.ResponseController
	conn    *Conn
	timeout time.Duration
}

var completeEvent = []byte("event: complete")

func (w *sseWriter) Write(b []byte) (int, error) {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	if bytes.HasPrefix(b, completeEvent) {
		if code, reason := w.conn.CutReason(); code != 0 {
			_, _ = w.ResponseWriter.Write(errorEvent(code, reason))
		}
	}
	return w.ResponseWriter.Write(b)
}

func (w *sseWriter) Flush() {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	w.ResponseWriter.Flush()
}

// errorEvent returns the next event of a GraphQL error saying why a stream ends.
func errorEvent(code int, reason string) []byte {
	c := apierr.Unavailable
	if code == CloseForbidden {
		c = apierr.Unauthorized
	}
	b, _ := json.Marshal(map[string]any{"errors": []map[string]any{{
		"message": reason, "extensions": map[string]any{"code": strings.ToUpper(string(c))},
	}}})
	return append(append([]byte("event: next\ndata: "), b...), "\n\n"...)
}

// Subscribe takes a subscription slot of the connection of ctx (an SSE stream holds its own
// already) until ctx ends, and returns the Hub's events: see Hub.Subscribe. Without a
// connection (a plain HTTP request) it fails.
func (r *Registry) Subscribe(ctx context.Context, status *models.PetStatus, afterID int64, resume bool) (<-chan *Event, error) {
	c := ConnFrom(ctx)
	if c == nil {
		return nil, apierr.Invalid("subscriptions run over WebSocket (graphql-transport-ws) or Server-Sent Events (Accept: text/event-stream)")
	}
	if !c.held {
		if err := c.Acquire(ctx); err != nil {
			return nil, err
		}
	}
	return r.hub.Subscribe(ctx, c, status, afterID, resume)
}

// Gate refuses an operation sent on a WebSocket when charge, which charges it as one request
// to the connection's key, refuses it. Other operations were charged as HTTP requests.
func (r *Registry) Gate(ctx context.Context) error {
	c := ConnFrom(ctx)
	if c == nil || !c.ws || r.opts.Charge == nil {
		return nil
	}
	return r.opts.Charge(ctx, c.principal)
}
