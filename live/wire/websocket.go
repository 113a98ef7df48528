package wire

import (
	"context"
	"net/http"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"

	"petstore/apierr"
	"petstore/auth"
	"petstore/live"
	"petstore/live/conns"
)

// MaxMessageBytes is the largest message a WebSocket client may send (a subscribe message with
// its query and variables); a larger one closes the connection with 1009 (message too big).
const MaxMessageBytes = 64 << 10

// InitTimeout is how long a WebSocket may stay open without connection_init: then it is
// closed with 4408.
const InitTimeout = 5 * time.Second

// authenticateFunc returns the key of an Authorization header, charging it one request (to
// the client address when it is not a valid key).
type authenticateFunc func(ctx context.Context, authorization string) (*auth.Principal, error)

// Websocket returns gqlgen's WebSocket transport (graphql-transport-ws, and the older
// graphql-ws) set up for the service: the key from connection_init's payload, else the
// upgrade's (authenticate checks it and charges the socket one request; an upgrade whose
// header key was valid, charged with the upgrade, is not charged again), the caps, 4408
// without connection_init within InitTimeout, messages up to MaxMessageBytes, pings every
// conns.RegistryOptions.PingEvery, and small buffers. A refused connection_init closes with
// refusalCode's code.
func (r *Server) Websocket(authenticate func(ctx context.Context, authorization string) (*auth.Principal, error)) transport.Websocket {
	limit := int64(MaxMessageBytes)
	return transport.Websocket{
		Implementation:   wsImplementation{srv: r},
		InitTimeout:      InitTimeout,
		PayloadReadLimit: &limit,
		InitFunc: func(ctx context.Context, payload transport.InitPayload) (context.Context, *transport.InitPayload, error) {
			return r.initApart(ctx, payload, authenticate)
		},
	}
}

// initApart runs initWS on a goroutine of its own, which ends: the key's lookup and check
// (database statements, deep stacks) would leave the connection's reading goroutine a large
// stack for as long as it lives.
func (r *Server) initApart(ctx context.Context, payload transport.InitPayload, authenticate authenticateFunc) (context.Context, *transport.InitPayload, error) {
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
}

// initWS authenticates a WebSocket at connection_init and opens its connection. The key is
// then forgotten, payload emptied (gqlgen's transport keeps it for as long as the socket
// lives; nothing reads it after connection_init): neither it nor its bytes stay in memory.
func (r *Server) initWS(ctx context.Context, payload transport.InitPayload, authenticate authenticateFunc) (context.Context, *transport.InitPayload, error) {
	st, _ := ctx.Value(wsStateKey{}).(*wsState)
	if st == nil || st.ws == nil {
		return refuse(ctx, live.CloseForbidden, apierr.Wrap(errNoUpgrade))
	}
	p, code, err := r.initKey(ctx, st, payload, authenticate)
	clear(payload)
	st.authorization = ""
	if err != nil {
		return refuse(ctx, code, err)
	}
	return r.openWS(ctx, st, p)
}

// initKey returns the key of a connection_init: its payload's, else the upgrade's (already
// authenticated when valid, else st.authorization); or the close code and error refusing it.
func (r *Server) initKey(ctx context.Context, st *wsState, payload transport.InitPayload, authenticate authenticateFunc) (*auth.Principal, int, error) {
	p := auth.FromContext(ctx) // the upgrade's key, charged with it
	if header := payload.Authorization(); header != "" || p == nil {
		if header == "" {
			header = st.authorization
		}
		var err error
		if p, err = authenticate(ctx, header); err != nil {
			return nil, refusalCode(err), err
		}
	}
	if err := r.reg.CheckKey(ctx, p); err != nil {
		return p, refusalCode(err), err
	}
	return p, 0, nil
}

// openWS opens the connection of the socket of st for p, under the key's caps, and gives
// back its pending slot. The connection's context ends when the connection is cut off, or
// when the socket's serving ends (st.end, called by Server.endWS).
func (r *Server) openWS(ctx context.Context, st *wsState, p *auth.Principal) (context.Context, *transport.InitPayload, error) {
	ctx, cancel := context.WithCancel(ctx)
	ws := st.ws
	c, err := r.reg.Open(ctx, p, func(code int, reason string) {
		ws.closeWith(code, reason)
		cancel()
	}, false)
	if err != nil {
		cancel()
		if apierr.From(err).Code == apierr.Unavailable {
			return refuse(ctx, live.CloseRetry, err)
		}
		return refuse(ctx, live.CloseTooMany, err)
	}
	c.SetWriteDeadline(ws.net.SetWriteDeadline)
	ws.conn.Store(c)
	r.releasePending(st)
	context.AfterFunc(ctx, func() { r.reg.Close(c) })
	st.end = cancel
	return conns.WithConn(ctx, c), nil, nil
}

// refusalCode returns the close code of a socket whose connection_init authenticate refused
// with err: 4403 for a key that is missing, unknown, revoked or suspended, 4429 over a rate
// limit, 1013 when the key or the limit cannot be checked now.
func refusalCode(err error) int {
	switch apierr.From(err).Code {
	case apierr.RateLimited:
		return live.CloseTooMany
	case apierr.Unavailable:
		return live.CloseRetry
	}
	return live.CloseForbidden
}

var errNoUpgrade = apiError("wire: a WebSocket without the Upgrade middleware")

// apiError is an error of this package's own, a constant.
type apiError string

func (e apiError) Error() string { return string(e) }

// refuse returns what InitFunc returns to close the connection with code and err's message.
func refuse(ctx context.Context, code int, err error) (context.Context, *transport.InitPayload, error) {
	msg := apierr.From(err).Message
	ctx = transport.WithWebsocketCloseCode(ctx, code)
	ctx = transport.AppendCloseReason(ctx, closeReason(msg))
	return ctx, nil, apiError(msg)
}

// wsImplementation hands gqlgen's transport the WebSocket that the Upgrade middleware
// accepted with coder/websocket (as gqlgen's own adapter does: coderConn) and whose first
// message it read (wsState.awaitFirst): small buffers, no server deadlines carried over from
// the upgrade request, a deadline on each write, and the close codes the service chooses.
type wsImplementation struct{ srv *Server }

func (i wsImplementation) Accept(w http.ResponseWriter, r *http.Request, _ transport.WebsocketAcceptOptions) (transport.WebsocketConn, error) {
	st, _ := r.Context().Value(wsStateKey{}).(*wsState)
	dw, ok := w.(*detachedWriter)
	if st == nil || st.coder == nil || !ok {
		return nil, errNoUpgrade
	}
	ws := &wsConn{coderConn: st.coder, net: dw.conn, writeTimeout: i.srv.writeTimeout, first: st.first}
	st.coder, st.first, st.ws = nil, nil, ws
	i.srv.trackWS(ws)
	return ws, nil
}

// closeReason cuts s to the 123 bytes a close frame allows.
func closeReason(s string) string {
	if len(s) <= 123 {
		return s
	}
	return s[:120] + "..."
}
