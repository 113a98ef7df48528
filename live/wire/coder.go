package wire

import (
	"context"
	"net/http"
	"sync"

	"github.com/99designs/gqlgen/graphql/handler/transport"
	coderws "github.com/coder/websocket"
)

// coderConn is a coder/websocket connection as gqlgen's own adapter
// (transport.CoderWebsocketImplementation) makes it, but for the connection being at hand.
// wsConn, which embeds it, is the transport.WebsocketConn: it reads and writes whole messages
// with it (readMessage, writeText) to check each.
type coderConn struct {
	ws *coderws.Conn

	mu      sync.Mutex
	closing bool // WriteClose started the close handshake
}

// acceptCoder accepts the WebSocket of w and r as gqlgen's adapter does: its subprotocols and
// response headers, without compression. The Origin is not checked here (Upgrade did).
func acceptCoder(w http.ResponseWriter, r *http.Request, opts transport.WebsocketAcceptOptions) (*coderConn, error) {
	for key, values := range opts.ResponseHeader {
		for _, v := range values {
			w.Header().Add(key, v)
		}
	}
	ws, err := coderws.Accept(w, r, &coderws.AcceptOptions{
		Subprotocols:       opts.Subprotocols,
		InsecureSkipVerify: true, // Upgrade checked the Origin against the CORS allow-list
		CompressionMode:    coderws.CompressionDisabled,
	})
	if err != nil {
		return nil, err
	}
	return &coderConn{ws: ws}, nil
}

// readMessage reads the next message whole; a normal close is transport.ErrWebsocketClosed.
func (c *coderConn) readMessage() (int, []byte, error) {
	typ, data, err := c.ws.Read(context.Background())
	if err != nil {
		switch coderws.CloseStatus(err) {
		case coderws.StatusNormalClosure, coderws.StatusNoStatusRcvd:
			return int(typ), nil, transport.ErrWebsocketClosed
		}
		return int(typ), nil, err
	}
	return int(typ), data, nil
}

// writeText writes b as one text message.
func (c *coderConn) writeText(b []byte) error {
	return c.ws.Write(context.Background(), coderws.MessageText, b)
}

// WriteClose starts the close handshake with code and message, once, on a goroutine of its
// own: coder/websocket waits up to 5 s for the peer's close frame, which the transport must
// not wait for.
func (c *coderConn) WriteClose(code int, message string) error {
	c.mu.Lock()
	started := c.closing
	c.closing = true
	c.mu.Unlock()
	if !started {
		go func() { _ = c.ws.Close(coderws.StatusCode(code), message) }()
	}
	return nil
}

// Close closes the connection at once, unless the close handshake, which closes it, started.
func (c *coderConn) Close() error {
	c.mu.Lock()
	closing := c.closing
	c.mu.Unlock()
	if closing {
		return nil
	}
	return c.ws.CloseNow()
}

// Subprotocol returns the subprotocol agreed on.
func (c *coderConn) Subprotocol() string { return c.ws.Subprotocol() }

// SetReadLimit bounds the messages read.
func (c *coderConn) SetReadLimit(limit int64) { c.ws.SetReadLimit(limit) }
