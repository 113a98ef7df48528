package idempotency

import (
	"bufio"
	"bytes"
	"errors"
	"maps"
	"net"
	"net/http"

	"github.com/gin-gonic/gin"
)

// replayedHeaders are the response headers a record keeps and a replay sends again. The
// others (rate limits, request IDs, CORS) belong to each request and are set afresh.
var replayedHeaders = []string{"Content-Type", "Location", "X-Content-Type-Options"}

// bufferedWriter holds a handler's whole response, headers included, until the outcome is
// known: nothing reaches the client before the answer is committed (or known not to be).
type bufferedWriter struct {
	gin.ResponseWriter // the real writer; only CloseNotify goes through to it
	header             http.Header
	status             int
	wrote              bool
	body               bytes.Buffer
}

var _ gin.ResponseWriter = (*bufferedWriter)(nil)

// newBufferedWriter returns a buffer over w that starts with w's headers.
func newBufferedWriter(w gin.ResponseWriter) *bufferedWriter {
	return &bufferedWriter{ResponseWriter: w, header: w.Header().Clone(), status: http.StatusOK}
}

// Header returns the buffered headers.
func (w *bufferedWriter) Header() http.Header { return w.header }

// WriteHeader sets the status, until the body starts.
func (w *bufferedWriter) WriteHeader(code int) {
	if code > 0 && !w.wrote {
		w.status = code
	}
}

// WriteHeaderNow marks the headers written; they are sent with the rest.
func (w *bufferedWriter) WriteHeaderNow() { w.wrote = true }

// Write buffers b.
func (w *bufferedWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.body.Write(b)
}

// WriteString buffers s.
func (w *bufferedWriter) WriteString(s string) (int, error) {
	w.wrote = true
	return w.body.WriteString(s)
}

// Status returns the status the handler set (200 by default).
func (w *bufferedWriter) Status() int { return w.status }

// Size returns the bytes buffered, or -1 before anything was written (gin's convention).
func (w *bufferedWriter) Size() int {
	if !w.wrote {
		return -1
	}
	return w.body.Len()
}

// Written reports whether the handler started its response.
func (w *bufferedWriter) Written() bool { return w.wrote }

// Flush does nothing: the response leaves only once its outcome is recorded.
func (w *bufferedWriter) Flush() {}

// Hijack refuses: a buffered response cannot hand its connection over.
func (w *bufferedWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return nil, nil, errors.New("idempotency: a buffered response cannot be hijacked")
}

// Pusher returns nil: no server push from a buffered response.
func (w *bufferedWriter) Pusher() http.Pusher { return nil }

// answer returns the buffered response as a record keeps it.
func (w *bufferedWriter) answer() answer {
	a := answer{status: w.status, headers: map[string]string{}, body: bytes.Clone(w.body.Bytes())}
	for _, name := range replayedHeaders {
		if v := w.header.Get(name); v != "" {
			a.headers[name] = v
		}
	}
	return a
}

// sendTo writes the buffered response, headers included, to dst.
func (w *bufferedWriter) sendTo(dst gin.ResponseWriter) {
	h := dst.Header()
	clear(h)
	maps.Copy(h, w.header)
	dst.WriteHeader(w.status)
	dst.WriteHeaderNow()
	_, _ = dst.Write(w.body.Bytes())
}
