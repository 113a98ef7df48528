package live

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"
	coderws "github.com/coder/websocket"
	"github.com/gin-gonic/gin"

	"petstore/apierr"
	"petstore/auth"
)

// wsBufferSize is the size of a WebSocket's read and write buffers: the notification of one
// pet is some 150 bytes, and larger messages are read and written in several steps. net/http's
// buffers (4 KiB each), kept by a stock upgrade, are dropped.
const wsBufferSize = 512

// MaxMessageBytes is the largest message a WebSocket client may send (a subscribe message with
// its query and variables); a larger one closes the connection with 1009 (message too big).
const MaxMessageBytes = 64 << 10

// InitTimeout is how long a WebSocket may stay open without connection_init: then it is
// closed with 4408.
const InitTimeout = 5 * time.Second

// wsState is what the upgrade leaves in the request context for the WebSocket transport.
type wsState struct {
	reg           *Registry
	authorization string // the upgrade's Authorization header
	addr          string // the client address, while its pending slot is held
	ws            *wsConn
}

type wsStateKey struct{}

// Upgrade returns the middleware of a WebSocket upgrade of /v1/graphql, placed after the
// identify chain (which charges the upgrade as one request) instead of auth.Require: the key
// may come in connection_init. It refuses an Origin that is neither the request's own host
// nor allowed by origins (the CORS allow-list; "*" allows any) with 400, and a client address
// holding Caps.PendingPerAddr connections not yet authenticated with 429; clientAddr names
// the address.
func (r *Registry) Upgrade(origins []string, clientAddr func(*http.Request) string) gin.HandlerFunc {
	return func(c *gin.Context) {
		req := c.Request
		if !originAllowed(req, origins) {
			apierr.Write(c.Writer, req, apierr.Invalid("the Origin %q may not open a WebSocket here (not in the allowed origins)", req.Header.Get("Origin")))
			c.Abort()
			return
		}
		addr := clientAddr(req)
		r.mu.Lock()
		full := r.pending[addr] >= r.opts.Caps.PendingPerAddr
		if !full {
			r.pending[addr]++
		}
		r.mu.Unlock()
		if full {
			c.Header("Retry-After", "5")
			apierr.Write(c.Writer, req, apierr.New(apierr.RateLimited,
				"this client address holds %d WebSocket connections not yet initialised, the most allowed", r.opts.Caps.PendingPerAddr))
			c.Abort()
			return
		}
		st := &wsState{reg: r, authorization: req.Header.Get("Authorization"), addr: addr}
		context.AfterFunc(req.Context(), func() { r.releasePending(st) })
		c.Request = req.WithContext(context.WithValue(req.Context(), wsStateKey{}, st))
	}
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

// originAllowed reports whether r's Origin may open a WebSocket: none (not a browser), the
// request's own host, or one of origins.
func originAllowed(r *http.Request, origins []string) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	if u, err := url.Parse(o); err == nil && strings.EqualFold(u.Host, r.Host) {
		return true
	}
	return slices.Contains(origins, "*") || slices.ContainsFunc(origins, func(a string) bool { return strings.EqualFold(a, o) })
}

// Websocket returns gqlgen's WebSocket transport (graphql-transport-ws, and the older
// graphql-ws) set up for the service: the key from the upgrade's Authorization header or
// connection_init's payload (authenticate checks it: an error closes with 4403), the caps,
// 4408 without connection_init within InitTimeout, messages up to MaxMessageBytes, pings
// every RegistryOptions.PingEvery, and small buffers.
func (r *Registry) Websocket(authenticate func(ctx context.Context, authorization string) (*auth.Principal, error)) transport.Websocket {
	limit := int64(MaxMessageBytes)
	return transport.Websocket{
		Implementation:   wsImplementation{reg: r},
		InitTimeout:      InitTimeout,
		PayloadReadLimit: &limit,
		InitFunc: func(ctx context.Context, payload transport.InitPayload) (context.Context, *transport.InitPayload, error) {
			return r.initWS(ctx, payload, authenticate)
		},
	}
}

// initWS authenticates a WebSocket at connection_init.
func (r *Registry) initWS(ctx context.Context, payload transport.InitPayload,
	authenticate func(context.Context, string) (*auth.Principal, error)) (context.Context, *transport.InitPayload, error) {
	st, _ := ctx.Value(wsStateKey{}).(*wsState)
	if st == nil || st.ws == nil {
		return refuse(ctx, CloseForbidden, apierr.Wrap(errNoUpgrade))
	}
	header := payload.Authorization()
	if header == "" {
		header = st.authorization
	}
	p, err := authenticate(ctx, header)
	if err != nil {
		return refuse(ctx, CloseForbidden, err)
	}
	if r.opts.Check != nil {
		bad, err := r.opts.Check(ctx, []int64{p.KeyID})
		if err != nil {
			return refuse(ctx, CloseRetry, &apierr.Error{Code: apierr.Unavailable, Message: "cannot check the API key now; retry later", Err: err})
		}
		if reason, ok := bad[p.KeyID]; ok {
			return refuse(ctx, CloseForbidden, apierr.New(apierr.Unauthorized, "the API key %s", reason))
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	ws := st.ws
	c, err := r.open(p, func(code int, reason string) {
		ws.closeWith(code, reason)
		cancel()
	})
	if err != nil {
		cancel()
		return refuse(ctx, CloseTooMany, err)
	}
	c.ws = true
	c.principal = p
	ws.conn.Store(c)
	r.releasePending(st)
	context.AfterFunc(ctx, func() { r.close(c) })
	return WithConn(ctx, c), nil, nil
}

var errNoUpgrade = apiError("live: a WebSocket without the Upgrade middleware")

type apiError string

func (e apiError) Error() string { return string(e) }

// refuse returns what InitFunc returns to close the connection with code and err's message.
func refuse(ctx context.Context, code int, err error) (context.Context, *transport.InitPayload, error) {
	msg := apierr.From(err).Message
	ctx = transport.WithWebsocketCloseCode(ctx, code)
	ctx = transport.AppendCloseReason(ctx, closeReason(msg))
	return ctx, nil, apiError(msg)
}

// closeReason cuts s to the 123 bytes a close frame allows.
func closeReason(s string) string {
	if len(s) <= 123 {
		return s
	}
	return s[:120] + "..."
}

// wsImplementation accepts WebSockets with coder/websocket (gqlgen's own adapter), after the
// Upgrade middleware: small buffers, no server deadlines carried over from the upgrade request,
// a deadline on each write, and the close codes the service chooses.
type wsImplementation struct{ reg *Registry }

func (i wsImplementation) Accept(w http.ResponseWriter, r *http.Request, opts transport.WebsocketAcceptOptions) (transport.WebsocketConn, error) {
	st, _ := r.Context().Value(wsStateKey{}).(*wsState)
	if st == nil {
		return nil, errNoUpgrade
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{}) // the server's ReadTimeout and WriteTimeout are for requests
	_ = rc.SetWriteDeadline(time.Time{})
	hw := &hijackWriter{ResponseWriter: w}
	impl := transport.CoderWebsocketImplementation{AcceptOptions: coderws.AcceptOptions{
		InsecureSkipVerify: true, // Upgrade checked the Origin against the CORS allow-list
		CompressionMode:    coderws.CompressionDisabled,
	}}
	conn, err := impl.Accept(hw, r, opts)
	if err != nil {
		return nil, err
	}
	ws := &wsConn{WebsocketConn: conn, net: hw.conn, reg: i.reg}
	ws.lastRead.Store(time.Now().UnixNano())
	st.ws = ws
	i.reg.mu.Lock()
	i.reg.ws[ws] = struct{}{}
	i.reg.mu.Unlock()
	context.AfterFunc(r.Context(), func() {
		i.reg.mu.Lock()
		delete(i.reg.ws, ws)
		i.reg.mu.Unlock()
	})
	return ws, nil
}

// hijackWriter hands coder/websocket the hijacked connection with small buffers, and keeps it
// for the write deadlines.
type hijackWriter struct {
	http.ResponseWriter
	conn net.Conn
}

func (h *hijackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	h.conn = conn
	if brw.Reader.Buffered() > 0 { // the client already sent more: keep the buffer that holds it
		return conn, brw, nil
	}
	return conn, bufio.NewReadWriter(bufio.NewReaderSize(conn, wsBufferSize), bufio.NewWriterSize(conn, wsBufferSize)), nil
}

// WriteHeaderNow sends the 101 answer on a writer that defers it (Gin's), as coder/websocket
// asks of such writers before it hijacks.
func (h *hijackWriter) WriteHeaderNow() {
	if w, ok := h.ResponseWriter.(interface{ WriteHeaderNow() }); ok {
		w.WriteHeaderNow()
	}
}

// Unwrap lets http.ResponseController reach the writer.
func (h *hijackWriter) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// wsConn is gqlgen's coder/websocket connection with deadlines and chosen close codes.
type wsConn struct {
	transport.WebsocketConn
	net      net.Conn
	reg      *Registry
	conn     atomic.Pointer[Conn] // once authenticated
	lastRead atomic.Int64         // Unix nanoseconds of the last message read

	mu          sync.Mutex
	code        int
	reason      string
	writeClosed bool
}

// closeWith makes the next close of the transport use code and reason.
func (c *wsConn) closeWith(code int, reason string) {
	c.mu.Lock()
	if c.code == 0 {
		c.code, c.reason = code, closeReason(reason)
	}
	c.mu.Unlock()
}

// WriteClose closes with the code closeWith chose, else with code; gqlgen's close for a
// missing connection_init (1002) is graphql-transport-ws's 4408.
func (c *wsConn) WriteClose(code int, reason string) error {
	c.mu.Lock()
	if c.code != 0 {
		code, reason = c.code, c.reason
	} else if code == transport.WebsocketCloseProtocolError && reason == "connection initialisation timeout" {
		code = CloseInitTimeout
	}
	c.writeClosed = true
	c.mu.Unlock()
	_ = c.net.SetWriteDeadline(time.Now().Add(c.reg.opts.WriteTimeout))
	return c.WebsocketConn.WriteClose(code, reason)
}

// WriteJSON writes v within RegistryOptions.WriteTimeout; past it the connection is closed.
func (c *wsConn) WriteJSON(v any) error {
	_ = c.net.SetWriteDeadline(time.Now().Add(c.reg.opts.WriteTimeout))
	return c.WebsocketConn.WriteJSON(v)
}

// NextReader notes when the peer last sent something.
func (c *wsConn) NextReader() (int, io.Reader, error) {
	t, r, err := c.WebsocketConn.NextReader()
	c.lastRead.Store(time.Now().UnixNano())
	return t, r, err
}

// SetReadLimit bounds the messages read.
func (c *wsConn) SetReadLimit(limit int64) {
	if l, ok := c.WebsocketConn.(transport.WebsocketReadLimiter); ok {
		l.SetReadLimit(limit)
	}
}

// pingMessage is graphql-transport-ws's ping; clients answer pong.
var pingMessage = json.RawMessage(`{"type":"ping"}`)

// pingAll pings every authenticated WebSocket, and closes those whose peer sent nothing
// for three rounds.
func (r *Registry) pingAll() {
	r.mu.Lock()
	conns := make([]*wsConn, 0, len(r.ws))
	for ws := range r.ws {
		if ws.conn.Load() != nil {
			conns = append(conns, ws)
		}
	}
	r.mu.Unlock()
	dead := time.Now().Add(-3 * r.opts.PingEvery).UnixNano()
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for _, ws := range conns {
		if ws.lastRead.Load() < dead {
			_ = ws.net.Close() // the read loop ends, and with it the connection
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			ws.mu.Lock()
			closed := ws.writeClosed
			ws.mu.Unlock()
			if !closed {
				_ = ws.WriteJSON(pingMessage)
			}
		}()
	}
	wg.Wait()
}
