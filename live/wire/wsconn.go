package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"

	"petstore/live"
	"petstore/live/conns"
)

// wsConn is the transport.WebsocketConn of a socket: gqlgen's coder/websocket connection with
// a deadline on each write, each client message checked against its protocol, and the close
// codes the service chooses.
type wsConn struct {
	*coderConn
	net          net.Conn
	writeTimeout time.Duration              // conns.RegistryOptions.WriteTimeout
	conn         atomic.Pointer[conns.Conn] // once authenticated
	missed       atomic.Int32               // pings sent since the peer last sent something
	writing      atomic.Int32               // writes under way
	ponging      atomic.Bool                // a ping frame's pong is waited for (pingLegacy)
	closing      atomic.Bool                // closeWith chose the close: no operation is completed before it
	proto        protocolState              // what the peer's messages must agree with
	first        *firstMessage              // read before the transport took the socket; nil once read

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
	c.closing.Store(true)
}

// WriteClose closes with the code closeWith chose, else with code; gqlgen's close for a
// missing connection_init (1002) is graphql-transport-ws's 4408.
func (c *wsConn) WriteClose(code int, reason string) error {
	c.mu.Lock()
	if c.code != 0 {
		code, reason = c.code, c.reason
	} else if code == transport.WebsocketCloseProtocolError && reason == "connection initialisation timeout" {
		code = live.CloseInitTimeout
	}
	c.writeClosed = true
	c.mu.Unlock()
	_ = c.net.SetWriteDeadline(time.Now().Add(c.writeTimeout))
	return c.coderConn.WriteClose(code, reason)
}

// busy reports whether c is closing or has a write under way, which a ping would wait
// behind (and whose deadline it would move).
func (c *wsConn) busy() bool {
	c.mu.Lock()
	closed := c.writeClosed
	c.mu.Unlock()
	return closed || c.writing.Load() > 0
}

// WriteJSON writes v within conns.RegistryOptions.WriteTimeout; past it the subscriber is cut off
// as too slow (conns.Conn.WriteFailed), or, before connection_init, the connection is closed.
func (c *wsConn) WriteJSON(v any) error {
	c.writing.Add(1)
	defer c.writing.Add(-1)
	_ = c.net.SetWriteDeadline(time.Now().Add(c.writeTimeout))
	err := c.write(v)
	if err != nil {
		c.writeFailed(err)
	}
	return err
}

// write writes v marshalled, noted by the protocol's state before the peer can see them (and reuse their id). Once closeWith
// chose the close, a complete is dropped: gqlgen completes each operation as the connection
// ends, and a complete before a Retryable close would end the subscription for the client
// instead of letting it resume; the close frame says why.
func (c *wsConn) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if c.proto.sent(b) && c.closing.Load() {
		return nil
	}
	return c.writeText(b)
}

// writeFailed ends what a failed write to the peer ends: the subscriber's connection, when
// too slow (conns.Conn.WriteFailed); before connection_init, the socket, on a timeout (its reader
// ends, and with it the connection).
func (c *wsConn) writeFailed(err error) {
	if conn := c.conn.Load(); conn != nil {
		conn.WriteFailed(err)
	} else if errors.Is(err, os.ErrDeadlineExceeded) {
		_ = c.net.Close()
	}
}

// NextReader notes that the peer sent something, and closes the socket, before gqlgen's
// transport reads it, on a message its protocol forbids (protocolState.checkMessage): gqlgen
// would run a second operation under an active id, answer a second connection_init with 1002,
// and end a socket that sends another protocol's message with 1000.
func (c *wsConn) NextReader() (int, io.Reader, error) {
	t, data, err := c.readNext()
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

// readNext returns the first message, read before the transport took the socket, then the
// next ones read from it.
func (c *wsConn) readNext() (int, []byte, error) {
	if m := c.first; m != nil {
		c.first = nil
		return m.typ, m.data, nil
	}
	return c.coderConn.readMessage()
}
