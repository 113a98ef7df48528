package wire

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
	authorization string    // the upgrade's Authorization header
	addr          string    // the client address, while its pending slot is held
	since         time.Time // of the upgrade, from which the socket has InitTimeout to send connection_init
	coder         *coderConn
	first         *firstMessage // read by awaitFirst, for the transport's first read
	ws            *wsConn
	end           func() // ends the connection openWS opened; nil before
}

type wsStateKey struct{}

// Upgrade returns the handler of a WebSocket upgrade of /v1/graphql, placed after the
// identify chain instead of auth.Require: the key may come in connection_init. An upgrade
// whose Authorization header carries a valid key was charged to it by the chain; one without
// that header is charged to nobody here (see KeylessUpgrade), but to its key at
// connection_init. It refuses with 400 an Origin that is neither the request's own host nor
// allowed (by the CORS allow-list: rest.AllowsOrigin) and a request that is not a WebSocket
// handshake; with 503 (Retry-After) an upgrade past the instance's Capacity; with 429, for an
// upgrade without a valid key, a client address (clientAddr names it) holding
// conns.Caps.PendingPerAddr connections not yet initialised. Otherwise it hands
// the connection to h (the GraphQL handler, whose Websocket transport accepts it) on a
// goroutine of its own and returns: net/http's goroutine, its buffers and the middleware's
// frames are freed, and the socket costs what the transport keeps.
func (r *Server) Upgrade(allowed func(*http.Request) bool, clientAddr func(*http.Request) string, h http.Handler) gin.HandlerFunc {
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

// admitUpgrade returns the state of an upgrade Upgrade accepts, counted among the instance's
// connections (Capacity) and, when it carries no valid key, among the sockets not yet
// initialised of its client address and of the instance; else the refusal.
func (r *Server) admitUpgrade(c *gin.Context, allowed func(*http.Request) bool, clientAddr func(*http.Request) string) (*wsState, error) {
	req := c.Request
	if err := Handshake(req, allowed); err != nil {
		return nil, err
	}
	st := &wsState{authorization: req.Header.Get("Authorization"), since: time.Now()}
	if auth.FromContext(req.Context()) == nil {
		st.addr = clientAddr(req)
	}
	if err := r.reg.AdmitConn(st.addr); err != nil {
		c.Header("Retry-After", "5")
		return nil, err
	}
	return st, nil
}

// hijack takes the connection of c from net/http, accepts the WebSocket on it (writing the
// 101) and serves it on a goroutine of its own, with st in its request's context: the goroutine
// starts with the smallest stack and parks at once, in wsState.awaitFirst.
func (r *Server) hijack(c *gin.Context, st *wsState, h http.Handler) error {
	conn, brw, err := http.NewResponseController(c.Writer).Hijack()
	if err != nil {
		r.releasePending(st)
		r.reg.ReleaseConn()
		return apierr.Wrap(err)
	}
	boundSendBuffer(conn)
	ctx := context.WithValue(context.WithoutCancel(c.Request.Context()), wsStateKey{}, st)
	w := &detachedWriter{conn: conn, brw: smallBuffers(conn, brw), header: http.Header{}}
	req := c.Request.WithContext(ctx)
	if !st.accept(w, req) {
		r.endWS(st)
		_ = conn.Close()
		return nil
	}
	go w.serve(h, slimRequest(req), r)
	return nil
}

// endWS releases what the socket of st held once its serving ended (or it was never served):
// its pending slot, its place among the instance's connections and among the sockets pinged,
// and its connection, by ending the connection's context that openWS made (a cut-off may have
// ended it already). A socket's context has no cancellation of its own: each cancellable
// context and each context.AfterFunc costs an idle socket some 100 to 300 bytes for as long as
// it lives.
func (r *Server) endWS(st *wsState) {
	r.releasePending(st)
	r.reg.ReleaseConn()
	if st.ws != nil {
		r.untrackWS(st.ws)
	}
	if st.end != nil {
		st.end()
	}
}

// slimRequest returns what gqlgen's transport needs of the upgrade req, accepted already, for
// as long as the socket lives: its context, method, URL, host, client address and the Upgrade
// header by which gqlgen picks the transport (upgradeHeader, shared: gqlgen only reads it).
// The rest of the handshake, its header block above all, is left to the collector.
func slimRequest(req *http.Request) *http.Request {
	slim := &http.Request{Method: req.Method, URL: req.URL, Proto: req.Proto, ProtoMajor: req.ProtoMajor,
		ProtoMinor: req.ProtoMinor, Host: req.Host, RemoteAddr: req.RemoteAddr, Header: upgradeHeader}
	return slim.WithContext(req.Context())
}

// upgradeHeader is the header of every slimRequest.
var upgradeHeader = http.Header{"Upgrade": {"websocket"}}

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
// where the socket is charged to the key. conns.Caps.PendingPerAddr bounds such sockets per address,
// conns.Capacity.Pending on the instance, and InitTimeout their life without a key.
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

// detachedWriter is the http.ResponseWriter of a hijacked upgrade: it writes the answer's
// head itself (101, or an error before the upgrade) and hands the connection on, to
// coder/websocket.
type detachedWriter struct {
	conn   net.Conn
	brw    *bufio.ReadWriter
	header http.Header
	wrote  bool
}

// serve waits for the first message of the WebSocket accepted on w (wsState.awaitFirst), then
// runs h, gqlgen's transport, on w, which takes the socket over: its close handshake closes
// it. r releases what the socket held (Server.endWS) once it returns.
func (w *detachedWriter) serve(h http.Handler, req *http.Request, r *Server) {
	st, _ := req.Context().Value(wsStateKey{}).(*wsState)
	defer r.endWS(st)
	if !st.awaitFirst(w) {
		return
	}
	h.ServeHTTP(w, req)
	if st.coder != nil { // the transport did not take it
		_ = st.coder.ws.CloseNow()
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
	return w.conn, w.brw, nil
}
