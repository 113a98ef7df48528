package e2e

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
)

// latencyQuery is the subscription of BenchmarkPetAddedLatency's subscribers.
const latencyQuery = `{"query":"subscription { petAdded { cursor pet { id name } } }"}`

// rawSubscribe opens a graphql-transport-ws WebSocket at addr with key, initialises it and
// starts petAdded, reading nothing afterwards.
func rawSubscribe(addr, key string) (net.Conn, error) {
	c, _, err := rawSubscribeReader(addr, key)
	return c, err
}

// rawSubscribeReader is rawSubscribe, and returns the connection's reader too, which has read
// nothing after the acknowledgement.
func rawSubscribeReader(addr, key string) (net.Conn, *bufio.Reader, error) {
	c, br, err := rawInit(addr, "graphql-transport-ws", "Authorization: Bearer "+key+"\r\n", `{"type":"connection_init"}`)
	if err != nil {
		return nil, nil, err
	}
	writeFrame(c, `{"type":"subscribe","id":"1","payload":`+latencyQuery+`}`)
	return c, br, nil
}

// rawInit opens a WebSocket of protocol at addr with the header lines extra (each ending in
// CRLF), sends init and waits for connection_ack; it answers nothing after that.
func rawInit(addr, protocol, extra, init string) (net.Conn, *bufio.Reader, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(c, "GET /v1/graphql HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"+
		"Sec-WebSocket-Protocol: %s\r\n%s\r\n", addr, protocol, extra)
	br := bufio.NewReaderSize(c, 512)
	status, err := br.ReadString('\n')
	if err != nil || !strings.Contains(status, " 101 ") {
		c.Close()
		return nil, nil, fmt.Errorf("upgrade: %q %v", status, err)
	}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			c.Close()
			return nil, nil, err
		}
		if line == "\r\n" {
			break
		}
	}
	writeFrame(c, init)
	if msg, err := readFrame(br); err != nil || !strings.Contains(msg, "connection_ack") {
		c.Close()
		return nil, nil, fmt.Errorf("init: %q %v", msg, err)
	}
	return c, br, nil
}

// writeFrame writes msg as one masked text frame (a client's), of less than 64 KiB.
func writeFrame(w io.Writer, msg string) {
	b := []byte{0x81}
	if len(msg) < 126 {
		b = append(b, 0x80|byte(len(msg)))
	} else {
		b = append(b, 0x80|126, byte(len(msg)>>8), byte(len(msg)))
	}
	mask := [4]byte{1, 2, 3, 4}
	b = append(b, mask[:]...)
	for i := range len(msg) {
		b = append(b, msg[i]^mask[i%4])
	}
	_, _ = w.Write(b)
}

// readFrame reads one unmasked frame (a server's).
func readFrame(r io.Reader) (string, error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return "", err
	}
	n := int(h[1] & 0x7f)
	switch n {
	case 126:
		var e [2]byte
		if _, err := io.ReadFull(r, e[:]); err != nil {
			return "", err
		}
		n = int(binary.BigEndian.Uint16(e[:]))
	case 127:
		return "", fmt.Errorf("frame too long")
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return string(b), err
}

// rawLegacy opens a graphql-ws (legacy) WebSocket at addr with key and initialises it; the
// caller answers no ping frame (it never writes a pong).
func rawLegacy(addr, key string) (net.Conn, *bufio.Reader, error) {
	return rawInit(addr, "graphql-ws", "", `{"type":"connection_init","payload":{"Authorization":"Bearer `+key+`"}}`)
}

// streamQuery is the body of a petAdded stream.
const streamQuery = `{"query":"subscription { petAdded { cursor pet { id name } } }"}`

// rawStream opens a petAdded stream (POST /v1/graphql, Accept: text/event-stream) at addr with
// key, reads the answer's head and the stream's first comment, and reads nothing afterwards.
func rawStream(addr, key string) (net.Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(c, "POST /v1/graphql HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: %d\r\n\r\n%s",
		addr, key, len(streamQuery), streamQuery)
	br := bufio.NewReaderSize(c, 512)
	status, err := br.ReadString('\n')
	if err != nil || !strings.Contains(status, " 200 ") {
		c.Close()
		return nil, fmt.Errorf("stream: %q %v", status, err)
	}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			c.Close()
			return nil, err
		}
		if line == "\r\n" {
			break
		}
	}
	// The stream's first bytes: a chunk holding the comment ":\n\n" (chunked encoding).
	if first, err := br.ReadString(':'); err != nil || !strings.HasSuffix(first, ":") {
		c.Close()
		return nil, fmt.Errorf("stream's first event: %q %v", first, err)
	}
	return c, nil
}

// stallConn makes the kernel hold little of what c does not read.
func stallConn(c net.Conn) { _ = c.(*net.TCPConn).SetReadBuffer(4096) }

// sendQueue returns the bytes the kernel holds unsent or unacknowledged on the server's side of
// the loopback connection c (/proc/net/tcp's tx_queue), -1 when it cannot tell.
func sendQueue(c net.Conn) int {
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return -1
	}
	local := c.RemoteAddr().(*net.TCPAddr) // the server's end
	remote := c.LocalAddr().(*net.TCPAddr)
	want := fmt.Sprintf("0100007F:%04X 0100007F:%04X", local.Port, remote.Port)
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && f[1]+" "+f[2] == want {
			tx, _, _ := strings.Cut(f[4], ":")
			n, err := strconv.ParseInt(tx, 16, 64)
			if err != nil {
				return -1
			}
			return int(n)
		}
	}
	return -1
}
