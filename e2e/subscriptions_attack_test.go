package e2e

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"petstore/config"
	"petstore/internal/testkit/dbtest"
	"petstore/store"
)

// burstPets inserts n pets of some 200-byte names in one statement, then one over REST with
// key, which wakes the Hub; it returns the last one's id.
func burstPets(t *testing.T, s *liveServer, db *store.DB, n int) int64 {
	t.Helper()
	if err := db.DB.Exec(`WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM n WHERE x < ?)
		INSERT INTO pets (name, category_id, status) SELECT hex(randomblob(100)), 1, 'available' FROM n`, n).Error; err != nil {
		t.Fatal(err)
	}
	return s.createPet(t, s.key, "wake", "")
}

// stallConn makes the kernel hold little of what c does not read.
func stallConn(c net.Conn) { _ = c.(*net.TCPConn).SetReadBuffer(4096) }

// cutOffSlow returns petstore_subscribers_cut_off_total{reason="slow"}.
func cutOffSlow(t *testing.T, base string) int {
	t.Helper()
	for line := range strings.SplitSeq(metricsText(t, base), "\n") {
		if v, ok := strings.CutPrefix(line, `petstore_subscribers_cut_off_total{reason="slow"} `); ok {
			var n int
			fmt.Sscan(v, &n)
			return n
		}
	}
	return 0
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

// TestStalledSubscribersFreeTheirCaps: free keys hold their two subscriptions on stalled
// subscribers, one WebSocket with two operations and two SSE streams. A burst of pets fills
// them; each connection is cut off as too slow once (three cut-offs, not four), the active
// gauge drops to 0 and never below, and both keys open two subscriptions again at once.
func TestStalledSubscribersFreeTheirCaps(t *testing.T) {
	db := dbtest.New(t, "sqlite")
	s := newLiveServer(t, db, nil, config.Default(), "business")
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
	time.Sleep(200 * time.Millisecond)
	if n := activeSubscriptions(t, s.url); n != 4 {
		t.Fatalf("%d subscriptions active; want 4", n)
	}
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
	time.Sleep(200 * time.Millisecond)
	if n := activeSubscriptions(t, s.url); n != 4 {
		t.Fatalf("%d subscriptions active; want the 4 opened after the cut-offs", n)
	}
}

// TestShutdownWithStalledSubscribers: at shutdown, a WebSocket with two operations and an SSE
// stream, both stalled with their writes blocked, do not hold the shutdown past its bound
// (RegistryOptions.WriteTimeout, 10 s, for the streams' last events): it returns, every
// subscription is let go and none is counted active, each counted once as shut down.
func TestShutdownWithStalledSubscribers(t *testing.T) {
	db := dbtest.New(t, "sqlite")
	s := newLiveServer(t, db, nil, config.Default(), "business")
	addr := strings.TrimPrefix(s.url, "http://")
	key := s.newKey(t, "pro")
	ws, err := rawSubscribe(addr, key)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	writeFrame(ws, `{"type":"subscribe","id":"2","payload":`+latencyQuery+`}`)
	stallConn(ws)
	stream, err := rawStream(addr, key)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	stallConn(stream)
	time.Sleep(200 * time.Millisecond)
	if n := activeSubscriptions(t, s.url); n != 3 {
		t.Fatalf("%d subscriptions active; want 3", n)
	}
	burstPets(t, s, db, 20000)
	time.Sleep(2 * time.Second) // their buffers full, their writes blocked, not yet cut off
	if n := cutOffSlow(t, s.url); n != 0 {
		t.Fatalf("%d cut off before the shutdown; want them stalled still", n)
	}
	start := time.Now()
	done := make(chan struct{})
	go func() { s.svc.CloseStreams(); close(done) }()
	select {
	case <-done:
	case <-time.After(14 * time.Second):
		t.Fatalf("the shutdown of the subscribers took over 14 s")
	}
	t.Logf("shutdown in %v", time.Since(start).Round(time.Millisecond))
	within(t, time.Second, "no subscription counted active after the shutdown", func() bool {
		return activeSubscriptions(t, s.url) == 0
	})
	text := metricsText(t, s.url)
	if !strings.Contains(text, `petstore_subscribers_cut_off_total{reason="shutdown"} 2`) {
		i := strings.Index(text, "petstore_subscri")
		t.Fatalf("want two connections cut off by the shutdown:\n%s", text[max(i, 0):])
	}
}
