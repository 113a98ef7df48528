package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"petstore/auth"
	"petstore/config"
	"petstore/internal/testkit/dbtest"
	"petstore/live"
)

// rawLegacy opens a graphql-ws (legacy) WebSocket at addr with key and initialises it; the
// caller answers no ping frame (it never writes a pong).
func rawLegacy(addr, key string) (net.Conn, *bufio.Reader, error) {
	return rawInit(addr, "graphql-ws", "", `{"type":"connection_init","payload":{"Authorization":"Bearer `+key+`"}}`)
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

// TestRevokedKeyWithStalledSockets: a key holds 19 stalled graphql-transport-ws subscribers
// (filled by a burst of events) and one that reads, and another key one stalled legacy socket
// that answers no ping; pings run every 2 s, overlapping the stalled writes. Revoked, the
// key's reading socket is closed with 4403 within 5 s, the active gauge drops to the other
// key's one subscription within 5 s, and every stalled socket of the key ends.
func TestRevokedKeyWithStalledSockets(t *testing.T) {
	db := dbtest.New(t, "sqlite")
	cfg := config.Default()
	cfg.WSPingInterval = 2 * time.Second // dead after 6 s: the stalled sockets answer no ping
	s := newLiveServer(t, db, nil, cfg, "business")
	addr := strings.TrimPrefix(s.url, "http://")
	key, rec, err := auth.CreateKey(context.Background(), db.DB, s.cfg.KeyPrefix(), auth.KeySpec{Plan: "pro"})
	if err != nil {
		t.Fatal(err)
	}
	var stalled []net.Conn
	for range 19 {
		c, err := rawSubscribe(addr, key)
		if err != nil {
			t.Fatal(err)
		}
		stallConn(c)
		defer c.Close()
		stalled = append(stalled, c)
	}
	other, _, err := rawLegacy(addr, s.key)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	writeFrame(other, `{"type":"start","id":"1","payload":{"query":"subscription { petAdded { pet { name } } }"}}`)
	w := s.connect(t, key)
	w.subscribe("1", "")
	time.Sleep(300 * time.Millisecond)
	if n := activeSubscriptions(t, s.url); n != 21 {
		t.Fatalf("%d subscriptions active; want 21", n)
	}
	burstPets(t, s, db, 3000)
	for range 3001 {
		w.next("1")
	}
	if err := auth.RevokeKey(context.Background(), db.DB, rec.ID); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if code, reason := w.closeStatus(10 * time.Second); code != live.CloseForbidden || !strings.Contains(reason, "revoked") {
		t.Fatalf("close %d %q; want %d saying revoked", code, reason, live.CloseForbidden)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the reading socket closed after %v; want within 5 s", d)
	}
	for activeSubscriptions(t, s.url) > 1 {
		if time.Since(start) > 5*time.Second {
			t.Fatalf("%d subscriptions active 5 s after the revocation; want the other key's 1", activeSubscriptions(t, s.url))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("gauge at 1 after %v", time.Since(start))
	ended := make(chan time.Duration, len(stalled))
	for _, c := range stalled {
		go func() {
			_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
			_, err := io.Copy(io.Discard, c)
			if err != nil {
				ended <- -1
				return
			}
			ended <- time.Since(start)
		}()
	}
	var last time.Duration
	for range stalled {
		d := <-ended
		if d < 0 {
			t.Fatal("a stalled socket of the revoked key still open 15 s on")
		}
		last = max(last, d)
	}
	t.Logf("every stalled socket ended %v after the revocation", last)
}

// TestLegacyNonReaderIsCutOff: a graphql-ws subscriber that reads nothing but looks alive
// (a stop every 100 ms, and pong frames for the ping frames' payloads, which count 1, 2, ...
// and can be guessed) loses its subscription and its connection within 15 s of a burst of
// events that fills its socket. (With pings every 200 ms it goes as dead, before its write
// times out: gqlgen's reader waits behind the stalled write.)
func TestLegacyNonReaderIsCutOff(t *testing.T) {
	db := dbtest.New(t, "sqlite")
	cfg := config.Default()
	cfg.WSPingInterval = 200 * time.Millisecond
	s := newLiveServer(t, db, nil, cfg, "business")
	c, _, err := rawLegacy(strings.TrimPrefix(s.url, "http://"), s.key)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stallConn(c)
	writeFrame(c, `{"type":"start","id":"1","payload":{"query":"subscription { petAdded { pet { name } } }"}}`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for i := 1; ctx.Err() == nil; i++ {
			writeFrame(c, `{"type":"stop","id":"none"}`)
			p := fmt.Sprint(i) // a masked pong frame with the i-th ping's payload
			b := []byte{0x8a, 0x80 | byte(len(p)), 0, 0, 0, 0}
			_, _ = c.Write(append(b, p...))
			time.Sleep(100 * time.Millisecond)
		}
	}()
	time.Sleep(300 * time.Millisecond)
	if n := activeSubscriptions(t, s.url); n != 1 {
		t.Fatalf("%d subscriptions active; want 1", n)
	}
	burstPets(t, s, db, 3000)
	start := time.Now()
	for activeSubscriptions(t, s.url) != 0 {
		if time.Since(start) > 15*time.Second {
			t.Fatal("the non-reading graphql-ws subscriber still holds its subscription 15 s after the burst")
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.Copy(io.Discard, c); errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("its connection still open 5 s after its subscription went") // EOF or reset: closed
	}
	t.Logf("gone %v after the burst", time.Since(start))
}
