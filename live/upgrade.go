package live

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"petstore/apierr"
	"petstore/auth"
)

// wsState is what the upgrade leaves in the request context for the WebSocket transport.
type wsState struct {
	reg           *Registry
	authorization string // the upgrade's Authorization header
	addr          string // the client address, while its pending slot is held
	ws            *wsConn
}

type wsStateKey struct{}

// Upgrade returns the handler of a WebSocket upgrade of /v1/graphql, placed after the
// identify chain instead of auth.Require: the key may come in connection_init. An upgrade
// whose Authorization header carries a valid key was charged to it by the chain; one without
// that header is charged to nobody here (see KeylessUpgrade), but to its key at
// connection_init. It refuses with 400 an Origin that is neither the request's own host nor
// allowed (by the CORS allow-list: rest.AllowsOrigin) and a request that is not a WebSocket
// handshake; with 429, for an upgrade without a valid key, a client address (clientAddr
// names it) holding Caps.PendingPerAddr connections not yet initialised. Otherwise it hands
// the connection to h (the GraphQL handler, whose Websocket transport accepts it) on a
// goroutine of its own and returns: net/http's goroutine, its buffers and the middleware's
// frames are freed, and the socket costs what the transport keeps.
func (r *Registry) Upgrade(allowed func(*http.Request) bool, clientAddr func(*http.Request) string, h http.Handler) gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Abort()
		st, err := r.admitUpgrade(c, allowed, clientAddr)
		if err == nil {
			err = r.hijack(c, st, h)
		}
		if err != nil {
			apierr.Write(c.Writer, c.Request, err)
		}
	}
}

// admitUpgrade returns the state of an upgrade Upgrade accepts, with the pending slot of its
// client address taken when it carries no valid key, else the refusal.
func (r *Registry) admitUpgrade(c *gin.Context, allowed func(*http.Request) bool, clientAddr func(*http.Request) string) (*wsState, error) {
	req := c.Request
	if err := Handshake(req, allowed); err != nil {
		return nil, err
	}
	st := &wsState{reg: r, authorization: req.Header.Get("Authorization")}
	if auth.FromContext(req.Context()) != nil {
		return st, nil
	}
	st.addr = clientAddr(req)
	if !r.takePending(st.addr) {
		c.Header("Retry-After", "5")
		return nil, apierr.New(apierr.RateLimited,
			"this client address holds %d WebSocket connections not yet initialised, the most allowed", r.opts.Caps.PendingPerAddr)
	}
	return st, nil
}

// hijack takes the connection of c from net/http and serves the upgrade with h on a
// goroutine of its own, with st in its request's context.
func (r *Registry) hijack(c *gin.Context, st *wsState, h http.Handler) error {
	conn, brw, err := http.NewResponseController(c.Writer).Hijack()
	if err != nil {
		r.releasePending(st)
		return apierr.Wrap(err)
	}
	boundSendBuffer(conn)
	ctx, cancel := context.WithCancel(context.WithValue(context.WithoutCancel(c.Request.Context()), wsStateKey{}, st))
	context.AfterFunc(ctx, func() { r.releasePending(st) })
	w := &detachedWriter{conn: conn, brw: smallBuffers(conn, brw), header: http.Header{}}
	go w.serve(h, c.Request.WithContext(ctx), cancel)
	return nil
}

// Handshake returns the 400 of a request that is not a WebSocket handshake the service
// accepts: Connection: Upgrade, Sec-WebSocket-Key and Sec-WebSocket-Version: 13, and an Origin
// that is none, the request's own host, or one that allowed allows; nil for one it accepts.
func Handshake(req *http.Request, allowed func(*http.Request) bool) *apierr.Error {
	if req.Header.Get("Sec-WebSocket-Key") == "" || req.Header.Get("Sec-WebSocket-Version") != "13" ||
		!strings.Contains(strings.ToLower(req.Header.Get("Connection")), "upgrade") {
		return apierr.Invalid("a WebSocket upgrade needs Connection: Upgrade, Sec-WebSocket-Key and Sec-WebSocket-Version: 13")
	}
	if !originAllowed(req, allowed) {
		return apierr.Invalid("the Origin %q may not open a WebSocket here (not in the allowed origins)", req.Header.Get("Origin"))
	}
	return nil
}

// KeylessUpgrade reports whether req is a WebSocket handshake that Upgrade accepts and that
// carries no Authorization header: the router charges it to nobody (its client address
// included), since a browser cannot set that header and sends its key in connection_init,
// where the socket is charged to the key. Caps.PendingPerAddr bounds such sockets per address
// and InitTimeout their life without a key.
func KeylessUpgrade(allowed func(*http.Request) bool) func(*http.Request) bool {
	return func(req *http.Request) bool {
		return req.Header.Get("Authorization") == "" && strings.EqualFold(req.Header.Get("Upgrade"), "websocket") &&
			Handshake(req, allowed) == nil
	}
}

// originAllowed reports whether r's Origin may open a WebSocket: none (not a browser), the
// request's own host, or one that allowed allows.
func originAllowed(r *http.Request, allowed func(*http.Request) bool) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	if u, err := url.Parse(o); err == nil && strings.EqualFold(u.Host, r.Host) {
		return true
	}
	return allowed(r)
}

// takePending takes one of addr's slots of sockets not yet initialised, and reports whether
// one was free.
func (r *Registry) takePending(addr string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending[addr] >= r.opts.Caps.PendingPerAddr {
		return false
	}
	r.pending[addr]++
	return true
}

// releasePending gives back the pending slot of st, once.
func (r *Registry) releasePending(st *wsState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st.addr == "" {
		return
	}
	if r.pending[st.addr]--; r.pending[st.addr] <= 0 {
		delete(r.pending, st.addr)
	}
	st.addr = ""
}

// detachedWriter is the http.ResponseWriter of a hijacked upgrade: it writes the answer's
// head itself (101, or an error before the upgrade) and hands the connection on.
type detachedWriter struct {
	conn   net.Conn
	brw    *bufio.ReadWriter
	header http.Header
	wrote  bool
	taken  bool // the WebSocket took the connection over
}

// serve runs h on w, then closes the connection unless the WebSocket took it over (its close
// handshake closes it); cancel ends req's context.
func (w *detachedWriter) serve(h http.Handler, req *http.Request, cancel context.CancelFunc) {
	defer cancel()
	h.ServeHTTP(w, req)
	if !w.taken {
		_ = w.conn.Close()
	}
}

func (w *detachedWriter) Header() http.Header { return w.header }

func (w *detachedWriter) WriteHeader(code int) {
	if w.wrote {
		return
	}
	w.wrote = true
	if code != http.StatusSwitchingProtocols {
		w.header.Set("Connection", "close")
	}
	_ = w.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(w.conn, "HTTP/1.1 %d %s\r\n", code, http.StatusText(code))
	_ = w.header.Write(w.conn)
	_, _ = io.WriteString(w.conn, "\r\n")
	_ = w.conn.SetWriteDeadline(time.Time{})
}

func (w *detachedWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.conn.Write(b)
}

// Hijack hands the connection to coder/websocket.
func (w *detachedWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.taken = true
	return w.conn, w.brw, nil
}
