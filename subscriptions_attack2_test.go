package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"petstore/config"
	"petstore/internal/dbtest"
)

// rawLegacy opens a graphql-ws (legacy) WebSocket at addr with key and initialises it; the
// caller answers no ping frame (it never writes a pong).
func rawLegacy(addr, key string) (net.Conn, *bufio.Reader, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(c, "GET /v1/graphql HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"+
		"Sec-WebSocket-Protocol: graphql-ws\r\n\r\n", addr)
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
	writeFrame(c, `{"type":"connection_init","payload":{"Authorization":"Bearer `+key+`"}}`)
	if msg, err := readFrame(br); err != nil || !strings.Contains(msg, "connection_ack") {
		c.Close()
		return nil, nil, fmt.Errorf("init: %q %v", msg, err)
	}
	return c, br, nil
}

// TestUnansweredLegacyPingsStarveKeepAlive: 16 graphql-ws sockets of one key that answer
// no ping frame, but send a harmless stop every 100 ms (so they are not dead), each hold one
// of the 16 pinging goroutines for WriteTimeout (10 s) per round. Healthy subscribers of
// another key, one of each protocol, answering every ping, must stay open: a round of pings
// that lasts 10 s must not make their last answer look three rounds old.
func TestUnansweredLegacyPingsStarveKeepAlive(t *testing.T) {
	cfg := config.Default()
	cfg.WSPingInterval = 200 * time.Millisecond
	s := newLiveServer(t, dbtest.New(t, "sqlite"), nil, cfg, "business")
	addr := strings.TrimPrefix(s.url, "http://")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	for range 16 {
		c, _, err := rawLegacy(addr, s.key)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		go func() { // alive, never a pong; what it is sent stays in the kernel
			for ctx.Err() == nil {
				writeFrame(c, `{"type":"stop","id":"none"}`)
				time.Sleep(100 * time.Millisecond)
			}
		}()
	}

	victimKey := s.newKey(t, "pro")
	modern := s.connect(t, victimKey)
	modern.subscribe("1", "")
	modernErr := make(chan error, 1)
	go func() {
		for {
			if _, err := modern.readErr(time.Minute); err != nil { // answers pings
				modernErr <- err
				return
			}
		}
	}()
	legacy, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.url, "http")+"/v1/graphql",
		&websocket.DialOptions{Subprotocols: []string{"graphql-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	defer legacy.CloseNow()
	_ = legacy.Write(ctx, websocket.MessageText, []byte(`{"type":"connection_init","payload":{"Authorization":"Bearer `+victimKey+`"}}`))
	legacyErr := make(chan error, 1)
	go func() { // reading answers the ping frames
		for {
			if _, _, err := legacy.Read(context.Background()); err != nil {
				legacyErr <- err
				return
			}
		}
	}()

	timeout := time.After(13 * time.Second) // more than a round held by the silent sockets
	for {
		select {
		case err := <-modernErr:
			t.Fatalf("a graphql-transport-ws client answering every ping was closed: %v", err)
		case err := <-legacyErr:
			t.Fatalf("a graphql-ws client answering every ping frame was closed: %v", err)
		case <-timeout:
			return
		}
	}
}
