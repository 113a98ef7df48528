package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"petstore/apierr"
	"petstore/live"
	"petstore/live/conns"
)

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

// sseWriter bounds each write of a stream with deadline, and puts what endEvent says
// before, or in place of, the complete event of a stream that was cut off or ended with an
// error.
type sseWriter struct {
	http.ResponseWriter // and http.Flusher
	deadline            func(time.Time) error
	conn                *conns.Conn
	timeout             time.Duration
}

var completeEvent = []byte("event: complete")

// Write writes b within the write timeout; when b completes a stream that was cut off or ended
// with an error, endEvent's event comes first, and the complete event only if it says so.
func (w *sseWriter) Write(b []byte) (int, error) {
	_ = w.deadline(time.Now().Add(w.timeout))
	if bytes.HasPrefix(b, completeEvent) {
		ev, complete := endEvent(w.conn)
		if ev != nil {
			_, _ = w.ResponseWriter.Write(ev)
		}
		if !complete {
			return len(b), nil
		}
	}
	n, err := w.ResponseWriter.Write(b)
	if err != nil {
		w.conn.WriteFailed(err) // a flush that timed out fails the next write
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

// commentEvent returns an SSE comment saying reason (one line), which clients skip: why a
// stream that its client should resume ends, for whoever reads the stream by hand.
func commentEvent(reason string) []byte {
	return []byte(": " + strings.NewReplacer("\r", " ", "\n", " ").Replace(reason) + "\n\n")
}

// endEvent returns what ends the stream of c before its complete event, nil when nothing does
// (it was neither cut off nor ended with an error), and whether the complete event follows. A
// stream ended with an error, or cut off for good, gets an error event saying why, then
// complete; one cut off with a Retryable code gets a comment saying why and no complete, so
// that its client reconnects (graphql-sse retries a stream that ends without complete).
func endEvent(c *conns.Conn) (ev []byte, complete bool) {
	ended, code, reason := c.Ending()
	switch {
	case ended != nil:
		return errorEvent(ended.Code, ended.Message), true
	case code != 0 && live.Retryable(code):
		return commentEvent(reason), false
	case code != 0:
		return errorEvent(cutCode(code), reason), true
	}
	return nil, true
}

// cutCode returns the error code of an SSE stream cut off with the final close code code.
func cutCode(code int) apierr.Code {
	if code == live.CloseForbidden {
		return apierr.Unauthorized
	}
	return apierr.Unavailable
}
