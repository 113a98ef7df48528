package live

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"petstore/apierr"
	"petstore/auth"
)

// IsStream reports whether r asks for GraphQL over Server-Sent Events.
func IsStream(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

// Stream returns the middleware of POST /v1/graphql with Accept: text/event-stream, placed
// after auth.Require (a missing, unknown or revoked key gets 401, an over-limit or suspended
// one 429, as any request) in place of h, the GraphQL handler: it holds one of the key's
// connection and subscription slots for the stream (429 rate_limited over the cap; 503
// unavailable while the Redis of the caps fails and the policy is to fail closed), bounds each
// write by RegistryOptions.WriteTimeout instead of the server's timeouts, and ends the stream
// with an error event saying why when the stream is cut off. Other requests pass untouched.
//
// The stream is served as Upgrade serves a WebSocket: the body read, the connection is taken
// from net/http and h runs on a goroutine of its own, writing the answer (chunked) with small
// buffers, while another waits for the client to close, or to send anything (watchClient);
// net/http's goroutine, its buffers and the middleware's frames are freed, and the request is
// logged and timed once the stream is set up. Where the connection cannot be taken (HTTP/2, HTTP/1.0), or the body cannot be read, h
// runs in the request.
func (r *Registry) Stream(h http.Handler) gin.HandlerFunc {
	return func(c *gin.Context) {
		if !IsStream(c.Request) {
			return
		}
		p := auth.FromContext(c.Request.Context())
		if p == nil {
			return // auth.Require answers
		}
		ctx, cancel := context.WithCancel(context.WithoutCancel(c.Request.Context()))
		conn, err := r.open(c.Request.Context(), p, func(int, string) { cancel() }, true)
		if err == nil && !r.track() {
			r.close(conn)
			err = errShuttingDown
		}
		if err != nil {
			cancel()
			if apierr.From(err).Code == apierr.RateLimited {
				c.Header("Retry-After", "5")
			}
			apierr.Write(c.Writer, c.Request, err)
			c.Abort()
			return
		}
		c.Abort()
		defer r.streams.Done()
		body, err := io.ReadAll(c.Request.Body)
		req := c.Request.WithContext(WithConn(ctx, conn))
		req.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
		if err == nil && req.ProtoAtLeast(1, 1) { // HTTP/1.0 has no chunked bodies
			if nc, brw, err := http.NewResponseController(c.Writer).Hijack(); err == nil {
				conn.setWriteDeadline(nc.SetWriteDeadline)
				r.streams.Add(1)
				go r.detach(nc, brw.Reader.Buffered() > 0, c.Writer.Header().Clone(), h, req, conn, cancel)
				return
			}
		}
		stop := context.AfterFunc(c.Request.Context(), cancel) // the client went away
		defer stop()
		defer cancel()
		defer r.close(conn)
		rc := http.NewResponseController(c.Writer)
		_ = rc.SetWriteDeadline(time.Time{}) // a stream outlives the server's WriteTimeout
		conn.setWriteDeadline(rc.SetWriteDeadline)
		h.ServeHTTP(&sseWriter{ResponseWriter: c.Writer, deadline: rc.SetWriteDeadline, conn: conn, timeout: r.opts.WriteTimeout}, req)
	}
}

// track counts a stream that Shutdown waits for, unless shutdown has begun.
func (r *Registry) track() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.shutdown {
		return false
	}
	r.streams.Add(1)
	return true
}

// detach serves the stream req of conn with h on nc, taken from net/http, with header (the
// middleware's) on its answer; cancel ends the stream. The stream ends when the client closes
// the connection or sends anything (watchClient); sent says it already did: net/http had read
// bytes past the request when the connection was taken.
func (r *Registry) detach(nc net.Conn, sent bool, header http.Header, h http.Handler, req *http.Request, conn *Conn, cancel context.CancelFunc) {
	defer r.streams.Done()
	defer r.close(conn)
	defer cancel()
	defer nc.Close()
	_ = nc.SetDeadline(time.Time{}) // the server's timeouts of the request are over
	boundSendBuffer(nc)
	go watchClient(nc, sent, conn, cancel)
	w := &chunkedWriter{bw: bufio.NewWriterSize(nc, wsBufferSize), header: header}
	h.ServeHTTP(&sseWriter{ResponseWriter: w, deadline: nc.SetWriteDeadline, conn: conn, timeout: r.opts.WriteTimeout}, req)
	_ = nc.SetWriteDeadline(time.Now().Add(r.opts.WriteTimeout))
	w.end()
}

// errUnexpectedInput ends a stream whose client sent something after its request.
var errUnexpectedInput = apierr.Invalid("an event stream's client sends nothing after its request; the stream ends at the first byte sent")

// watchClient waits on nc, a stream's connection, for its client to close it, and then ends
// the stream with cancel. An SSE client has nothing to send after its request, which was read
// whole (within the body limit and the server's read timeout): the first byte it sends, or had
// sent with the request (sent), ends the stream too, with an error event saying why, so that
// nothing it sends is read past that byte. A read takes one byte at most.
func watchClient(nc net.Conn, sent bool, conn *Conn, cancel context.CancelFunc) {
	defer cancel()
	if !sent {
		var b [1]byte
		n, _ := nc.Read(b[:])
		sent = n > 0
	}
	if sent {
		conn.endWith(errUnexpectedInput)
	}
}

// errReader returns its error, or io.EOF for none: the end of a body read beforehand.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err == nil {
		return 0, io.EOF
	}
	return 0, e.err
}

// chunkedWriter is the http.ResponseWriter of a detached stream: it writes an HTTP/1.1 answer
// whose body is chunked, through bw, and closes the connection after it. It is safe for
// concurrent use (gqlgen's pings may come as the stream ends); what comes after end is dropped.
type chunkedWriter struct {
	header http.Header

	mu    sync.Mutex
	bw    *bufio.Writer
	wrote bool
	ended bool
}

// Header returns the answer's header, the middleware's as the stream was taken over.
func (w *chunkedWriter) Header() http.Header { return w.header }

// WriteHeader writes the answer's head, once.
func (w *chunkedWriter) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writeHeader(code)
}

// writeHeader writes the head unless it was; w.mu is held.
func (w *chunkedWriter) writeHeader(code int) {
	if w.wrote {
		return
	}
	w.wrote = true
	w.header.Del("Content-Length")
	w.header.Set("Transfer-Encoding", "chunked")
	w.header.Set("Connection", "close")
	if w.header.Get("Date") == "" {
		w.header.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	}
	fmt.Fprintf(w.bw, "HTTP/1.1 %d %s\r\n", code, http.StatusText(code))
	_ = w.header.Write(w.bw)
	_, _ = w.bw.WriteString("\r\n")
}

// Write writes b as one chunk.
func (w *chunkedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return 0, net.ErrClosed
	}
	w.writeHeader(http.StatusOK)
	if len(b) == 0 {
		return 0, nil
	}
	fmt.Fprintf(w.bw, "%x\r\n", len(b))
	_, _ = w.bw.Write(b)
	_, err := w.bw.WriteString("\r\n")
	return len(b), err
}

// Flush sends what was written.
func (w *chunkedWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.ended {
		_ = w.bw.Flush()
	}
}

// end writes the last chunk and flushes.
func (w *chunkedWriter) end() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writeHeader(http.StatusOK)
	_, _ = w.bw.WriteString("0\r\n\r\n")
	_ = w.bw.Flush()
	w.ended = true
}

// sseWriter bounds each write of a stream with deadline, and puts an error event saying why
// before the complete event of a stream that was cut off or ended with an error
// (Conn.endEvent).
type sseWriter struct {
	http.ResponseWriter // and http.Flusher
	deadline            func(time.Time) error
	conn                *Conn
	timeout             time.Duration
}

var completeEvent = []byte("event: complete")

// Write writes b within the write timeout, after an error event saying why when b completes a
// stream that was cut off or ended with an error.
func (w *sseWriter) Write(b []byte) (int, error) {
	_ = w.deadline(time.Now().Add(w.timeout))
	if bytes.HasPrefix(b, completeEvent) {
		if ev := w.conn.endEvent(); ev != nil {
			_, _ = w.ResponseWriter.Write(ev)
		}
	}
	n, err := w.ResponseWriter.Write(b)
	if err != nil {
		w.conn.writeFailed(err) // a flush that timed out fails the next write
	}
	return n, err
}

// Flush sends what was written.
func (w *sseWriter) Flush() {
	_ = w.deadline(time.Now().Add(w.timeout))
	w.ResponseWriter.(http.Flusher).Flush()
}

// errorEvent returns the next event of a GraphQL error saying why a stream ends: code and
// message as a response's error carries them.
func errorEvent(code apierr.Code, message string) []byte {
	b, _ := json.Marshal(map[string]any{"errors": []map[string]any{{
		"message": message, "extensions": map[string]any{"code": strings.ToUpper(string(code))},
	}}})
	return append(append([]byte("event: next\ndata: "), b...), "\n\n"...)
}
