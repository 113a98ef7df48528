package wire

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"petstore/apierr"
	"petstore/auth"
	"petstore/live"
	"petstore/live/conns"
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
// write by conns.RegistryOptions.WriteTimeout instead of the server's timeouts, and ends the stream
// with an error event saying why when the stream is cut off. Other requests pass untouched.
//
// The stream is served as Upgrade serves a WebSocket: the body read, the connection is taken
// from net/http and h runs on a goroutine of its own, writing the answer (chunked) with small
// buffers, while another waits for the client to close, or to send anything (watchClient);
// net/http's goroutine, its buffers and the middleware's frames are freed, and the request is
// logged and timed once the stream is set up. Where the connection cannot be taken (HTTP/2,
// HTTP/1.0), or the body cannot be read, h runs in the request.
func (r *Server) Stream(h http.Handler) gin.HandlerFunc {
	return func(c *gin.Context) {
		if !IsStream(c.Request) {
			return
		}
		p := auth.FromContext(c.Request.Context())
		if p == nil {
			return // auth.Require answers
		}
		c.Abort()
		s, err := r.openStream(c.Request.Context(), p, h)
		if err != nil {
			refuseStream(c, err)
			return
		}
		if !s.readRequest(c.Request) || !s.detach(c) {
			s.serveInRequest(c)
			r.reg.StreamDone()
		}
	}
}

// sseStream is one SSE stream being served.
type sseStream struct {
	reg    *conns.Registry
	conn   *conns.Conn
	wt     time.Duration // conns.RegistryOptions.WriteTimeout
	h      http.Handler
	ctx    context.Context    // the stream's, carrying conn
	cancel context.CancelFunc // ends the stream
	req    *http.Request      // with ctx, its body read beforehand (readRequest)
}

// openStream opens the connection of a stream of p, counted among the instance's
// (conns.Capacity) and among the streams conns.Registry.Shutdown waits for; it fails past the
// instance's capacity, over the key's caps or once shutdown has begun.
func (r *Server) openStream(reqCtx context.Context, p *auth.Principal, h http.Handler) (*sseStream, error) {
	if err := r.reg.AdmitConn(""); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(reqCtx))
	conn, err := r.reg.Open(reqCtx, p, func(int, string) { cancel() }, true)
	if err == nil && !r.reg.TrackStream() {
		r.reg.Close(conn)
		err = live.ErrShuttingDown
	}
	if err != nil {
		cancel()
		r.reg.ReleaseConn()
		return nil, err
	}
	return &sseStream{reg: r.reg, conn: conn, wt: r.writeTimeout, h: h, ctx: conns.WithConn(ctx, conn), cancel: cancel}, nil
}

// close lets the stream's connection go, and its place among the instance's.
func (s *sseStream) close() {
	s.reg.Close(s.conn)
	s.reg.ReleaseConn()
}

// refuseStream answers a stream that openStream refused: Retry-After 5 unless the instance is
// shutting down (1: another instance serves it at once).
func refuseStream(c *gin.Context, err error) {
	if code := apierr.From(err).Code; code == apierr.RateLimited || (code == apierr.Unavailable && err != live.ErrShuttingDown) {
		c.Header("Retry-After", "5")
	}
	apierr.Write(c.Writer, c.Request, err)
}

// readRequest reads the body of orig whole (an error reading it is the body's, read later)
// and makes s.req orig with the stream's context. It reports whether the connection may be
// taken from net/http: the body was read, and chunked bodies exist (not HTTP/1.0).
func (s *sseStream) readRequest(orig *http.Request) bool {
	body, err := io.ReadAll(orig.Body)
	s.req = orig.WithContext(s.ctx)
	s.req.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
	return err == nil && s.req.ProtoAtLeast(1, 1)
}

// detach takes the connection of c from net/http and serves the stream on it, on a
// goroutine of its own, which ends the stream's count among those that conns.Registry.Shutdown
// waits for (StreamDone); it reports whether it could.
func (s *sseStream) detach(c *gin.Context) bool {
	nc, brw, err := http.NewResponseController(c.Writer).Hijack()
	if err != nil {
		return false
	}
	s.conn.SetWriteDeadline(nc.SetWriteDeadline)
	go s.serveDetached(nc, brw.Reader.Buffered() > 0, c.Writer.Header().Clone())
	return true
}

// serveInRequest serves the stream in the request of c, as net/http's handler.
func (s *sseStream) serveInRequest(c *gin.Context) {
	stop := context.AfterFunc(c.Request.Context(), s.cancel) // the client went away
	defer stop()
	defer s.cancel()
	defer s.close()
	rc := http.NewResponseController(c.Writer)
	_ = rc.SetWriteDeadline(time.Time{}) // a stream outlives the server's WriteTimeout
	s.conn.SetWriteDeadline(rc.SetWriteDeadline)
	s.h.ServeHTTP(s.writer(c.Writer, rc.SetWriteDeadline), s.req)
}

// writer returns the sseWriter of the stream on w, whose write deadline deadline sets.
func (s *sseStream) writer(w http.ResponseWriter, deadline func(time.Time) error) *sseWriter {
	return &sseWriter{ResponseWriter: w, deadline: deadline, conn: s.conn, timeout: s.wt}
}

// serveDetached serves the stream on nc, taken from net/http, with header (the middleware's)
// on its answer. The stream ends when the client closes the connection or sends anything
// (watchClient); sent says it already did: net/http had read bytes past the request when the
// connection was taken.
func (s *sseStream) serveDetached(nc net.Conn, sent bool, header http.Header) {
	defer s.reg.StreamDone()
	defer s.close()
	defer s.cancel()
	defer nc.Close()
	_ = nc.SetDeadline(time.Time{}) // the server's timeouts of the request are over
	boundSendBuffer(nc)
	go watchClient(nc, sent, s.conn, s.cancel)
	w := &chunkedWriter{bw: bufio.NewWriterSize(nc, wsBufferSize), header: header}
	s.h.ServeHTTP(s.writer(w, nc.SetWriteDeadline), s.req)
	_ = nc.SetWriteDeadline(time.Now().Add(s.wt))
	w.end()
}

// errUnexpectedInput ends a stream whose client sent something after its request.
var errUnexpectedInput = apierr.Invalid("an event stream's client sends nothing after its request; the stream ends at the first byte sent")

// watchClient waits on nc, a stream's connection, for its client to close it, and then ends
// the stream with cancel. An SSE client has nothing to send after its request, which was read
// whole (within the body limit and the server's read timeout): the first byte it sends, or had
// sent with the request (sent), ends the stream too, with an error event saying why, so that
// nothing it sends is read past that byte. A read takes one byte at most.
func watchClient(nc net.Conn, sent bool, conn *conns.Conn, cancel context.CancelFunc) {
	defer cancel()
	if !sent {
		var b [1]byte
		n, _ := nc.Read(b[:])
		sent = n > 0
	}
	if sent {
		conn.EndWith(errUnexpectedInput)
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
