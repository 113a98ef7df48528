package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"petstore/app"
	"petstore/live"
	"petstore/live/wire"
	"petstore/testkit/dbtest"
)

// TestLiveCapacity: the instance holds at most PETSTORE_WS_PENDING_MAX WebSockets not yet
// initialised and PETSTORE_LIVE_CONNECTIONS_MAX WebSockets and SSE streams in all, whatever
// their addresses and keys; past either, an upgrade or a stream gets 503 unavailable with
// Retry-After and an Error body naming the bound, counted by the limit it met, and a place
// freed is taken again.
func TestLiveCapacity(t *testing.T) {
	t.Parallel()
	cfg := app.DefaultConfig()
	cfg.LiveConnectionsMax, cfg.WSPendingMax = 5, 2
	s := newLiveServer(t, dbtest.New(t, "sqlite"), nil, cfg, "business")
	var pending []*wsClient
	for range cfg.WSPendingMax {
		w, err := s.dial(t, nil)
		if err != nil {
			t.Fatal(err)
		}
		pending = append(pending, w)
	}
	refusedAtCapacity(t, s, "WebSockets not yet initialised", func() *http.Response {
		w, _ := s.dial(t, nil)
		return w.resp
	})
	if _, err := s.open(s.key, true); err != nil { // a key in the upgrade: not pending
		t.Fatalf("a socket with the key in its upgrade: %v; want it open", err)
	}
	_ = pending[0].c.CloseNow()
	within(t, 2*time.Second, "the closed socket's place freed", func() bool {
		return metricValue(t, s, "petstore_live_connections") == 2
	})
	s.connect(t, s.key).subscribe("1", "") // pending until its connection_init: then not
	for range 2 {                          // the fourth and fifth connections
		stream := s.sseStream(t, t.Context(), s.key, "")
		defer stream.Body.Close()
	}
	refusedAtCapacity(t, s, "live connections", func() *http.Response {
		status, body, resp, cancel := s.sseOpen(t, s.key)
		defer cancel()
		resp.Body = io.NopCloser(strings.NewReader(body))
		if status != resp.StatusCode {
			t.Fatalf("status %d, response %d", status, resp.StatusCode)
		}
		return resp
	})
	refusedAtCapacity(t, s, "live connections", func() *http.Response {
		w, _ := s.dial(t, http.Header{"Authorization": {"Bearer " + s.key}})
		return w.resp
	})
	text := metricsText(t, s.url)
	for _, want := range []string{
		`petstore_live_connections_limit{kind="connections"} 5`, `petstore_live_connections_limit{kind="pending"} 2`,
		`petstore_live_connections_refused_total{limit="pending"} 1`, `petstore_live_connections_refused_total{limit="connections"} 2`,
		"petstore_live_connections 5", "petstore_live_connections_pending 1",
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// refusedAtCapacity checks that open's answer is a 503 unavailable Error body naming what, with
// Retry-After.
func refusedAtCapacity(t *testing.T, s *liveServer, what string, open func() *http.Response) {
	t.Helper()
	resp := open()
	if resp == nil {
		t.Fatalf("no answer; want 503 (%s)", what)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "5" ||
		!strings.Contains(string(b), `"code":"unavailable"`) || !strings.Contains(string(b), what) {
		t.Fatalf("past the capacity: %d Retry-After %q %s; want 503 unavailable naming %q with Retry-After 5",
			resp.StatusCode, resp.Header.Get("Retry-After"), b, what)
	}
}

// TestPendingSocketTimesOutFromItsUpgrade: a socket that starts its connection_init and sends
// no more is closed with 4408 InitTimeout after its upgrade, not after its first byte: a
// trickle does not stretch the wait.
func TestPendingSocketTimesOutFromItsUpgrade(t *testing.T) {
	t.Parallel()
	s := newLiveServer(t, dbtest.New(t, "sqlite"), nil, app.DefaultConfig(), "free")
	c, br := rawUpgrade(t, strings.TrimPrefix(s.url, "http://"), "127.0.0.1")
	upgraded := time.Now()
	time.Sleep(wire.InitTimeout - time.Second)
	if _, err := c.Write([]byte{0x81, 0x80 | 60}); err != nil { // a masked text frame of 60 bytes, its header begun
		t.Fatal(err)
	}
	code, err := readClose(c, br, wire.InitTimeout)
	if err != nil || code != live.CloseInitTimeout {
		t.Fatalf("close %d (%v); want %d", code, err, live.CloseInitTimeout)
	}
	if after := time.Since(upgraded); after > wire.InitTimeout+time.Second {
		t.Fatalf("closed %v after the upgrade; want within %v", after.Round(time.Millisecond), wire.InitTimeout)
	}
}

// rawUpgrade opens a keyless graphql-transport-ws socket at addr from the local address from
// and returns it once upgraded, with its reader; it fails t when the upgrade is refused.
func rawUpgrade(t testing.TB, addr, from string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, br, resp, err := dialUpgrade(addr, from)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, br
}

// dialUpgrade sends a keyless graphql-transport-ws upgrade to addr from the local address
// from; it returns the connection, its reader past the answer's head, and the answer (whose
// body, unless it is a 101, is read).
func dialUpgrade(addr, from string) (net.Conn, *bufio.Reader, *http.Response, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, nil, nil, err
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET /v1/graphql HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n", addr)
	br := bufio.NewReaderSize(c, 256)
	resp, err := http.ReadResponse(br, nil)
	if err == nil && resp.StatusCode != http.StatusSwitchingProtocols {
		b, _ := io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(bytes.NewReader(b))
	}
	_ = c.SetDeadline(time.Time{})
	if err != nil {
		c.Close()
		return nil, nil, nil, err
	}
	return c, br, resp, nil
}

// readClose reads frames from c until the server's close frame, within timeout, and returns
// its code.
func readClose(c net.Conn, br *bufio.Reader, timeout time.Duration) (int, error) {
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	for {
		var head [2]byte
		if _, err := io.ReadFull(br, head[:]); err != nil {
			return -1, err
		}
		payload := make([]byte, head[1]&0x7f) // the server's control frames are short and unmasked
		if _, err := io.ReadFull(br, payload); err != nil {
			return -1, err
		}
		if head[0]&0x0f == 0x8 && len(payload) >= 2 {
			return int(payload[0])<<8 | int(payload[1]), nil
		}
	}
}
