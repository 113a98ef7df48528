package live

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/gin-gonic/gin"

	"petstore/apierr"
	"petstore/auth"
)

// wsBufferSize is the size of a WebSocket's read and write buffers: the notification of one
// pet is some 150 bytes, and larger messages are read and written in several steps. net/http's
// buffers (4 KiB each), kept by a stock upgrade, are dropped.
const wsBufferSize = 512

// wsReadBufferSize is the size of a WebSocket's read buffer: a client sends a few small
// messages (connection_init, subscribe, pong), which a smaller buffer reads in more system
// calls, and the buffer is held for as long as the socket lives.
const wsReadBufferSize = 128

// sendBufferBytes is the kernel's send buffer of a subscriber's connection (SO_SNDBUF, which
// Linux doubles): some 800 events. Without it the kernel grows the buffer of a peer that stops
// reading up to net.ipv4.tcp_wmem's maximum (4 MiB here), and holds it until the connection,
// cut off, has gone.
const sendBufferBytes = 64 << 10

// boundSendBuffer sets the send buffer of conn, a subscriber's, to sendBufferBytes.
func boundSendBuffer(conn net.Conn) {
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(sendBufferBytes)
	}
}

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

// Upgrade returns the handler of a WebSocket upgrade of /v1/graphql, placed after the
// identify chain instead of auth.Require: the key may come in connection_init. An upgrade
// whose Authorization header carries a valid key was charged to it by the chain; one without
// that header is charged to nobody here (see KeylessUpgrade), but to its key at
// connection_init. It refuses an Origin that is neither the request's own host nor allowed (by
// the CORS allow-list: rest.AllowsOrigin) with 400, a request that is not a WebSocket
// handshake with 400, and, for an upgrade without a valid key, a client address (clientAddr
// names it) holding Caps.PendingPerAddr connections not yet initialised with 429. Otherwise
// it hands the connection to h (the GraphQL handler, whose Websocket transport accepts it) on
// a goroutine of its own and returns: net/http's goroutine, its buffers and the middleware's
// frames are freed, and the socket costs what the transport keeps.
func (r *Registry) Upgrade(allowed func(*http.Request) bool, clientAddr func(*http.Request) string, h http.Handler) gin.HandlerFunc {
	return func(c *gin.Context) {
		req := c.Request
		if err := Handshake(req, allowed); err != nil {
			apierr.Write(c.Writer, req, err)
			c.Abort()
			return
		}
		addr := ""
		if auth.FromContext(req.Context()) == nil {
			addr = clientAddr(req)
			if !r.takePending(addr) {
				c.Header("Retry-After", "5")
				apierr.Write(c.Writer, req, apierr.New(apierr.RateLimited,
					"this client address holds %d WebSocket connections not yet initialised, the most allowed", r.opts.Caps.PendingPerAddr))
				c.Abort()
				return
			}
		}
		st := &wsState{reg: r, authorization: req.Header.Get("Authorization"), addr: addr}
		conn, brw, err := http.NewResponseController(c.Writer).Hijack()
		if err != nil {
			r.releasePending(st)
			apierr.Write(c.Writer, req, apierr.Wrap(err))
			c.Abort()
			return
		}
		c.Abort()
		boundSendBuffer(conn)
		ctx, cancel := context.WithCancel(context.WithValue(context.WithoutCancel(req.Context()), wsStateKey{}, st))
		context.AfterFunc(ctx, func() { r.releasePending(st) })
		w := &detachedWriter{conn: conn, brw: smallBuffers(conn, brw), header: http.Header{}}
		detached := req.WithContext(ctx)
		go func() {
			defer cancel()
			h.ServeHTTP(w, detached)
			if !w.taken {
				_ = conn.Close() // else the WebSocket's close handshake closes it
			}
		}()
	}
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

// smallBuffers returns the buffers of a hijacked connection: wsReadBufferSize and
// wsBufferSize, unless the client already sent more than the request (then net/http's reader,
// which holds it).
func smallBuffers(conn net.Conn, brw *bufio.ReadWriter) *bufio.ReadWriter {
	if brw.Reader.Buffered() > 0 {
		return bufio.NewReadWriter(brw.Reader, bufio.NewWriterSize(conn, wsBufferSize))
	}
	return bufio.NewReadWriter(bufio.NewReaderSize(conn, wsReadBufferSize), bufio.NewWriterSize(conn, wsBufferSize))
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

// Websocket returns gqlgen's WebSocket transport (graphql-transport-ws, and the older
// graphql-ws) set up for the service: the key from connection_init's payload, else the
// upgrade's (authenticate checks it and charges the socket one request to it, or to the
// client address when it is not a valid key; an upgrade whose header key was valid, charged
// with the upgrade, is not charged again), the caps, 4408 without connection_init within
// InitTimeout, messages up to MaxMessageBytes, pings every RegistryOptions.PingEvery, and small
// buffers. A refused connection_init closes with refusalCode's code.
func (r *Registry) Websocket(authenticate func(ctx context.Context, authorization string) (*auth.Principal, error)) transport.Websocket {
	limit := int64(MaxMessageBytes)
	return transport.Websocket{
		Implementation:   wsImplementation{reg: r},
		InitTimeout:      InitTimeout,
		PayloadReadLimit: &limit,
		InitFunc: func(ctx context.Context, payload transport.InitPayload) (context.Context, *transport.InitPayload, error) {
			// On a goroutine of its own, which ends: the key's lookup and check (database
			// statements, deep stacks) would leave the connection's reading goroutine a
			// stack of 32 KiB for as long as it lives.
			var (
				out  context.Context
				ack  *transport.InitPayload
				err  error
				done = make(chan struct{})
			)
			go func() {
				defer close(done)
				out, ack, err = r.initWS(ctx, payload, authenticate)
			}()
			<-done
			return out, ack, err
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
	p := auth.FromContext(ctx) // the upgrade's key, charged with it
	if header := payload.Authorization(); header != "" || p == nil {
		if header == "" {
			header = st.authorization
		}
		var err error
		if p, err = authenticate(ctx, header); err != nil {
			return refuse(ctx, refusalCode(err), err)
		}
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
	c, err := r.open(ctx, p, func(code int, reason string) {
		ws.closeWith(code, reason)
		cancel()
	}, false)
	if err != nil {
		cancel()
		if apierr.From(err).Code == apierr.Unavailable {
			return refuse(ctx, CloseRetry, err)
		}
		return refuse(ctx, CloseTooMany, err)
	}
	c.ws = true
	c.setWriteDeadline(ws.net.SetWriteDeadline)
	ws.conn.Store(c)
	r.releasePending(st)
	context.AfterFunc(ctx, func() { r.close(c) })
	return WithConn(ctx, c), nil, nil
}

// refusalCode returns the close code of a socket whose connection_init authenticate refused
// with err: 4403 for a key that is missing, unknown, revoked or suspended, 4429 over a rate
// limit, 1013 when the key or the limit cannot be checked now.
func refusalCode(err error) int {
	switch apierr.From(err).Code {
	case apierr.RateLimited:
		return CloseTooMany
	case apierr.Unavailable:
		return CloseRetry
	}
	return CloseForbidden
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

// wsImplementation accepts WebSockets with coder/websocket (as gqlgen's own adapter does:
// coderConn), after the Upgrade middleware: small buffers, no server deadlines carried over
// from the upgrade request, a deadline on each write, and the close codes the service chooses.
type wsImplementation struct{ reg *Registry }

func (i wsImplementation) Accept(w http.ResponseWriter, r *http.Request, opts transport.WebsocketAcceptOptions) (transport.WebsocketConn, error) {
	st, _ := r.Context().Value(wsStateKey{}).(*wsState)
	if st == nil {
		return nil, errNoUpgrade
	}
	dw, ok := w.(*detachedWriter)
	if !ok {
		return nil, errNoUpgrade
	}
	conn, err := acceptCoder(dw, r, opts)
	if err != nil {
		return nil, err
	}
	dw.header = http.Header{} // the head is written and read: the socket's goroutine, which holds dw, need not hold it
	ws := &wsConn{coderConn: conn, net: dw.conn, reg: i.reg}
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

// wsConn is gqlgen's coder/websocket connection with deadlines and chosen close codes.
type wsConn struct {
	*coderConn
	net     net.Conn
	reg     *Registry
	conn    atomic.Pointer[Conn] // once authenticated
	missed  atomic.Int32         // pings sent since the peer last sent something
	writing atomic.Int32         // writes under way
	ponging atomic.Bool          // a ping frame's pong is waited for (pingLegacy)
	proto   protocolState        // what the peer's messages must agree with

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
	return c.coderConn.WriteClose(code, reason)
}

// WriteJSON writes v within RegistryOptions.WriteTimeout; past it the subscriber is cut off
// as too slow (Conn.writeFailed), or, before connection_init, the connection is closed. The
// events of a subscription (next messages) are written without marshalling their payload
// again, the same bytes as json.Marshal writes.
func (c *wsConn) WriteJSON(v any) error {
	c.writing.Add(1)
	defer c.writing.Add(-1)
	_ = c.net.SetWriteDeadline(time.Now().Add(c.reg.opts.WriteTimeout))
	var err error
	if payload, id, ok := nextMessage(v); ok {
		err = c.writeNext(payload, id)
	} else {
		var b []byte
		if b, err = json.Marshal(v); err == nil {
			c.proto.sent(b) // before the peer can see it and reuse the id
			err = c.writeText(b)
		}
	}
	if err != nil {
		if conn := c.conn.Load(); conn != nil {
			conn.writeFailed(err)
		} else if errors.Is(err, os.ErrDeadlineExceeded) {
			_ = c.net.Close() // its reader ends, and with it the connection
		}
	}
	return err
}

// NextReader notes that the peer sent something, and closes the socket, before gqlgen's
// transport reads it, on a message its protocol forbids (protocolState.checkMessage): gqlgen
// would run a second operation under an active id, answer a second connection_init with 1002,
// and end a socket that sends another protocol's message with 1000.
func (c *wsConn) NextReader() (int, io.Reader, error) {
	t, data, err := c.coderConn.readMessage()
	c.missed.Store(0)
	if err != nil {
		return t, nil, err
	}
	if code, reason := c.proto.checkMessage(c.Subprotocol(), data); code != 0 {
		c.closeWith(code, reason)
		return t, nil, errProtocol
	}
	return t, bytes.NewReader(data), nil
}

// pingMessage is graphql-transport-ws's ping; clients answer pong.
var pingMessage = json.RawMessage(`{"type":"ping"}`)

// transportProtocol is graphql-transport-ws, whose clients answer pingMessage.
const transportProtocol = "graphql-transport-ws"

// legacyProtocol is the older protocol gqlgen's transport also speaks (subscriptions-transport-ws),
// whose clients answer nothing: they get its keep-alive, keepAliveMessage, and a WebSocket ping,
// which their WebSocket answers with a pong. gqlgen serves a socket that names no subprotocol
// as one of it.
const legacyProtocol = "graphql-ws"

var keepAliveMessage = json.RawMessage(`{"type":"ka"}`)

// pingLegacy pings ws, a socket of legacyProtocol: a pong within WriteTimeout counts as the
// peer's message. The pong is waited for on a goroutine of its own, one per socket at most:
// a peer that answers none would otherwise hold one of pingAll's goroutines for WriteTimeout
// each round.
func (r *Registry) pingLegacy(ws *wsConn) {
	if ws.WriteJSON(keepAliveMessage) != nil || !ws.ponging.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer ws.ponging.Store(false)
		ctx, cancel := context.WithTimeout(r.ctx, r.opts.WriteTimeout)
		defer cancel()
		if ws.ws.Ping(ctx) == nil {
			ws.missed.Store(0)
		}
	}()
}

// pingAll pings every authenticated WebSocket with no write under way (a ping would wait
// behind it, and move its deadline), and closes those whose peer answered none of the last
// three pings: counted by socket, so that a round that takes long (sockets whose writes block)
// makes no other peer look dead.
func (r *Registry) pingAll() {
	r.mu.Lock()
	conns := make([]*wsConn, 0, len(r.ws))
	for ws := range r.ws {
		if ws.conn.Load() != nil {
			conns = append(conns, ws)
		}
	}
	r.mu.Unlock()
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for _, ws := range conns {
		if ws.missed.Load() >= 3 {
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
			if closed || ws.writing.Load() > 0 {
				return
			}
			ws.missed.Add(1)
			if ws.Subprotocol() != transportProtocol { // legacyProtocol, or none
				r.pingLegacy(ws)
			} else {
				_ = ws.WriteJSON(pingMessage)
			}
		}()
	}
	wg.Wait()
}
