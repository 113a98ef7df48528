package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"petstore/app"
	"petstore/testkit/dbtest"
)

// TestSlowSubscriber: a burst of pets reaches a subscriber that reads, complete and in order;
// a WebSocket and an SSE stream that stop reading are cut off (their memory bounded), counted
// on /metrics, and no longer counted active. Each is cut by whichever comes first: its buffer
// of events left full (the Hub) or a write to it timing out (the transport); both take 10 s
// from the same moment, so either may win.
func TestSlowSubscriber(t *testing.T) {
	t.Parallel()
	db := dbtest.New(t, "sqlite")
	s := newLiveServer(t, db, nil, app.DefaultConfig(), "business")
	w := s.connect(t, s.key)
	w.subscribe("1", "")
	addr := strings.TrimPrefix(s.url, "http://")
	stalled, err := rawSubscribe(addr, s.key)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	stalledStream, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stalledStream.Close()
	for _, c := range []net.Conn{stalled, stalledStream} {
		_ = c.(*net.TCPConn).SetReadBuffer(4096) // the kernel holds little of what it does not read
	}
	fmt.Fprintf(stalledStream, "POST /v1/graphql HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: %d\r\n\r\n%s",
		addr, s.key, len(streamQuery), streamQuery)
	s.waitActive(t, 3)  // the reader's and the two stalled
	const burst = 40000 // some 10 MB of events: more than the socket buffers hold
	if err := db.DB.Exec(`WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM n WHERE x < ?)
		INSERT INTO pets (name, category_id, status) SELECT hex(randomblob(100)), 1, 'available' FROM n`, burst).Error; err != nil {
		t.Fatal(err)
	}
	last := s.createPet(t, s.key, "wake", "") // commits after the burst and wakes the Hub
	var prev int64
	for {
		ev := w.next("1")
		var id int64
		fmt.Sscan(ev.Pet.ID, &id)
		if id != prev+1 {
			t.Fatalf("the reader got %d after %d; want every pet in order", id, prev)
		}
		if prev = id; id == last {
			break
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	// What the server's kernel holds for each stalled peer, until it is cut off: at most the
	// bounded send buffer (64 KiB, which Linux doubles), not the megabytes to which Linux
	// grows the buffer of a peer that does not read.
	held := map[string]int{}
	for !strings.Contains(metricsText(t, s.url), `petstore_subscribers_cut_off_total{reason="slow"} 2`) {
		for name, c := range map[string]net.Conn{"WebSocket": stalled, "SSE stream": stalledStream} {
			held[name] = max(held[name], sendQueue(c))
		}
		if time.Now().After(deadline) {
			text := metricsText(t, s.url)
			i := strings.Index(text, "petstore_subscri")
			t.Fatalf("the stalled subscriber was not cut off:\n%s", text[max(i, 0):])
		}
		time.Sleep(200 * time.Millisecond)
	}
	if n := activeSubscriptions(t, s.url); n != 1 {
		t.Fatalf("%d subscriptions active; want the reader's only", n)
	}
	for name, n := range held {
		if n == 0 || n > 256<<10 {
			t.Errorf("%s: the server's kernel held up to %d bytes unsent for a peer that read nothing; want some, at most 256 KiB", name, n)
		}
	}
}

// TestLegacyNonReaderIsCutOff: a graphql-ws subscriber that reads nothing but looks alive
// (a stop every 100 ms, and pong frames for the ping frames' payloads, which count 1, 2, ...
// and can be guessed) loses its subscription and its connection within 15 s of a burst of
// events that fills its socket. (With pings every 200 ms it goes as dead, before its write
// times out: gqlgen's reader waits behind the stalled write.)
func TestLegacyNonReaderIsCutOff(t *testing.T) {
	t.Parallel()
	db := dbtest.New(t, "sqlite")
	cfg := app.DefaultConfig()
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
	s.waitActive(t, 1)
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

// TestStalledSubscribersFreeTheirCaps: free keys hold their two subscriptions on stalled
// subscribers, one WebSocket with two operations and two SSE streams. A burst of pets fills
// them; each connection is cut off as too slow once (three cut-offs, not four), the active
// gauge drops to 0 and never below, and both keys open two subscriptions again at once.
func TestStalledSubscribersFreeTheirCaps(t *testing.T) {
	t.Parallel()
	db := dbtest.New(t, "sqlite")
	s := newLiveServer(t, db, nil, app.DefaultConfig(), "business")
	addr := strings.TrimPrefix(s.url, "http://")
	wsKey, sseKey := s.newKey(t, "free"), s.newKey(t, "free")

	ws, _, err := rawSubscribeReader(addr, wsKey) // operation 1
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	writeFrame(ws, `{"type":"subscribe","id":"2","payload":`+latencyQuery+`}`)
	stallConn(ws)
	for range 2 {
		c, err := rawStream(addr, sseKey)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		stallConn(c)
	}
	s.waitActive(t, 4)
	s.sseOverCap(t, wsKey)
	s.sseOverCap(t, sseKey)

	burstPets(t, s, db, 20000) // some 6 MB to each: more than the socket buffers hold
	waitCutOff(t, s, 3, 25*time.Second)
	cut := time.Now()
	within(t, time.Second, "no subscription counted active once all are cut off", func() bool {
		return activeSubscriptions(t, s.url) == 0
	})
	within(t, time.Second, "the cut-off stream's slots are free", func() bool {
		status, _, _, cancel := s.sseOpen(t, sseKey)
		if status != http.StatusOK {
			cancel()
			return false
		}
		if status, body, _, _ := s.sseOpen(t, sseKey); status != http.StatusOK {
			t.Fatalf("a second stream after the cut-off: %d %s", status, body)
		}
		return true
	})
	c := s.connectKey(t, wsKey)
	c.runs("1")
	c.runs("2")
	t.Logf("slots free %v after the third cut-off", time.Since(cut).Round(time.Millisecond))
	s.waitActive(t, 4) // the 4 opened after the cut-offs
}

// waitCutOff waits up to d for n slow cut-offs, checking meanwhile that the active gauge is
// never negative; it returns when the n-th was counted.
func waitCutOff(t *testing.T, s *liveServer, n int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if a := activeSubscriptions(t, s.url); a < 0 {
			t.Fatalf("petstore_subscriptions_active is %d", a)
		}
		if got := cutOffSlow(t, s.url); got >= n {
			if got > n {
				t.Fatalf("%d slow cut-offs; want %d (one per connection)", got, n)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not %d slow cut-offs within %v: %d", n, d, cutOffSlow(t, s.url))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
