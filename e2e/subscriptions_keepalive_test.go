package e2e

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"petstore/app"
	"petstore/testkit/dbtest"
)

// TestServerPings: the server pings an idle socket (graphql-transport-ws ping), so that dead
// peers are found.
func TestServerPings(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits for a ping")
	}
	db := dbtest.New(t, "sqlite")
	s := newLiveServer(t, db, nil, app.DefaultConfig(), "business")
	w := s.connect(t, s.key)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, b, err := w.c.Read(ctx)
	if err != nil || !strings.Contains(string(b), `"ping"`) {
		t.Fatalf("got %s %v; want a ping within 30 s", b, err)
	}
}

// TestKeepAlive: with PETSTORE_WS_PING_INTERVAL at 200 ms, a graphql-transport-ws peer that
// never answers the pings is closed after three; a client of the older
// graphql-ws protocol, which answers nothing, gets its keep-alive (ka), never a ping it does not
// know, stays open while its WebSocket answers ping frames, and gets its events.
func TestKeepAlive(t *testing.T) {
	t.Parallel()
	cfg := app.DefaultConfig()
	cfg.WSPingInterval = 200 * time.Millisecond
	s := newLiveServer(t, dbtest.New(t, "sqlite"), nil, cfg, "business")

	silent, br, err := rawSubscribeReader(strings.TrimPrefix(s.url, "http://"), s.key)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	legacy, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.url, "http")+"/v1/graphql",
		&websocket.DialOptions{Subprotocols: []string{"graphql-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	defer legacy.CloseNow()
	send := func(m string) {
		if err := legacy.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"type":"connection_init","payload":{"Authorization":"Bearer ` + s.key + `"}}`)
	send(`{"type":"start","id":"1","payload":{"query":"subscription { petAdded { pet { name } } }"}}`)
	legacyMsgs := make(chan string, 100)
	go func() { // reading answers the ping frames
		defer close(legacyMsgs)
		for {
			_, b, err := legacy.Read(context.Background())
			if err != nil {
				legacyMsgs <- "closed: " + err.Error()
				return
			}
			legacyMsgs <- string(b)
		}
	}()

	start := time.Now()
	_ = silent.SetReadDeadline(start.Add(5 * time.Second))
	for {
		if _, err := readFrame(br); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("a peer that answers no ping is still open after 5 s; want closed after three pings")
			}
			break
		}
	}
	if d := time.Since(start); d < 400*time.Millisecond {
		t.Fatalf("a silent peer closed after %v; want after three pings of 200 ms", d)
	}

	deadline := time.After(2 * time.Second) // ten rounds of pings
	pings := 0
	for done := false; !done; {
		select {
		case <-deadline:
			done = true
		case m := <-legacyMsgs:
			if strings.Contains(m, "closed") || strings.Contains(m, `"ping"`) {
				t.Fatalf("graphql-ws client got %q; want only its keep-alives and events", m)
			}
			if strings.Contains(m, `"ka"`) {
				pings++
			}
		}
	}
	if pings < 5 {
		t.Fatalf("graphql-ws client got %d keep-alives in 2 s; want one every 200 ms", pings)
	}
	s.createPet(t, s.key, "Rex", "")
	timeout := time.After(5 * time.Second)
	for {
		select {
		case m := <-legacyMsgs:
			if strings.Contains(m, "Rex") {
				return
			}
		case <-timeout:
			t.Fatal("graphql-ws client got no event for the pet")
		}
	}
}

// TestKeepAliveWithoutSubprotocol: with PETSTORE_WS_PING_INTERVAL at 200 ms, a socket that
// names no subprotocol, which gqlgen serves as graphql-ws, gets that protocol's keep-alive (ka)
// and no ping message it cannot answer, stays open and gets its events.
func TestKeepAliveWithoutSubprotocol(t *testing.T) {
	t.Parallel()
	cfg := app.DefaultConfig()
	cfg.WSPingInterval = 200 * time.Millisecond
	s := newLiveServer(t, dbtest.New(t, "sqlite"), nil, cfg, "business")
	p := s.dialProtocol(t, "", s.key)
	p.send(operation("", "1", `subscription { petAdded { pet { name } } }`))
	kas := 0
	for deadline := time.After(2 * time.Second); kas >= 0; { // ten rounds of pings
		select {
		case m := <-p.msgs:
			if m.Type != "ka" {
				t.Fatalf("got %+v; want only keep-alives", m)
			}
			kas++
		case err := <-p.err:
			t.Fatalf("closed after %d keep-alives: %v", kas, err)
		case <-deadline:
			if kas < 5 {
				t.Fatalf("%d keep-alives in 2 s; want one every 200 ms", kas)
			}
			kas = -1
		}
	}
	s.createPet(t, s.key, "Rex", "")
	if m := p.read(); m.Type != "data" || !strings.Contains(string(m.Payload), "Rex") {
		t.Fatalf("got %s %s %s; want the event", m.Type, m.ID, m.Payload)
	}
}

// TestUnansweredLegacyPingsStarveKeepAlive: 16 graphql-ws sockets of one key that answer
// no ping frame, but send a harmless stop every 100 ms (so they are not dead), each hold one
// of the 16 pinging goroutines for WriteTimeout (10 s) per round. Healthy subscribers of
// another key, one of each protocol, answering every ping, must stay open: a round of pings
// that lasts 10 s must not make their last answer look three rounds old.
func TestUnansweredLegacyPingsStarveKeepAlive(t *testing.T) {
	t.Parallel()
	cfg := app.DefaultConfig()
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
