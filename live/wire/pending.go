package wire

import (
	"errors"
	"net/http"
	"os"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"
	coderws "github.com/coder/websocket"

	"petstore/live"
)

// subprotocols are the subprotocols a WebSocket may agree on, in gqlgen's order of preference
// (its transport serves a socket naming none as legacyProtocol).
var subprotocols = []string{legacyProtocol, transportProtocol}

// firstMessage is the first message of a socket, read before gqlgen's transport takes it.
type firstMessage struct {
	typ  int
	data []byte
}

// accept accepts the WebSocket of st on w, writing the 101 as gqlgen's adapter does (its
// subprotocols, no compression), and reports whether it could: else the connection is to be
// closed.
func (st *wsState) accept(w *detachedWriter, r *http.Request) bool {
	cc, err := acceptCoder(w, r, transport.WebsocketAcceptOptions{ResponseHeader: http.Header{}, Subprotocols: subprotocols})
	if err != nil {
		return false
	}
	w.header = http.Header{} // the head is written
	cc.SetReadLimit(MaxMessageBytes)
	st.coder = cc
	return true
}

// awaitFirst reads the first message (the connection_init) of the socket st accepted on w
// within InitTimeout of the upgrade, before gqlgen's transport takes the socket over: until
// its client sends something, a socket holds its connection, small buffers, a coder/websocket
// connection and this goroutine, parked in a read with the smallest stack. The transport, with
// its goroutines and its state, comes only with the first message; the read deadline bounds
// the whole wait, however slowly the message comes. It reports whether the transport is to
// take the socket (wsImplementation.Accept); otherwise the socket was closed: with 4408 when
// nothing whole came in time.
func (st *wsState) awaitFirst(w *detachedWriter) bool {
	_ = w.conn.SetReadDeadline(st.since.Add(InitTimeout))
	_, err := w.brw.Reader.Peek(1)
	var first firstMessage
	if err == nil {
		first.typ, first.data, err = st.coder.readMessage()
	}
	_ = w.conn.SetReadDeadline(time.Time{})
	if err != nil {
		st.endPending(w, err)
		return false
	}
	st.first = &first
	return true
}

// endPending closes the socket of st, whose first message could not be read (err): with 4408 when
// its time ran out, within a second; at once otherwise (coder/websocket closed a message too
// large with 1009 already).
func (st *wsState) endPending(w *detachedWriter, err error) {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		_ = st.coder.ws.CloseNow()
		return
	}
	_ = w.conn.SetDeadline(time.Now().Add(time.Second))
	_ = st.coder.ws.Close(coderws.StatusCode(live.CloseInitTimeout), "connection initialisation timeout")
}
