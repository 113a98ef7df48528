package wire

import (
	"bufio"
	"net"
)

// wsBufferSize is the size of a WebSocket's write buffer (and an SSE stream's), held for as
// long as the socket lives: the notification of one pet is some 150 bytes, written whole, and
// a larger message is written in two steps (the buffer, then the rest of it straight to the
// connection). net/http's buffers (4 KiB each), kept by a stock upgrade, are dropped.
const wsBufferSize = 256

// wsReadBufferSize is the size of a WebSocket's read buffer, bufio's smallest: a client sends
// a few small messages (connection_init, subscribe, pong), whose frame header comes through
// the buffer and whose payload past it is read straight from the connection, and the buffer is
// held for as long as the socket lives.
const wsReadBufferSize = 16

// sendBufferBytes is the kernel's send buffer of a subscriber's connection (SO_SNDBUF, which
// Linux doubles): some 800 events. Without it the kernel grows the buffer of a peer that stops
// reading up to net.ipv4.tcp_wmem's maximum, and holds it until the connection, cut off, has
// gone.
const sendBufferBytes = 64 << 10

// boundSendBuffer sets the send buffer of conn, a subscriber's, to sendBufferBytes.
func boundSendBuffer(conn net.Conn) {
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(sendBufferBytes)
	}
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
