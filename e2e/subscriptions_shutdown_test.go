package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"petstore/config"
	"petstore/testkit/dbtest"
)

// TestShutdownClosesSubscribers: at shutdown, after the drain delay, WebSockets get 1001 and
// SSE streams an error event then complete.
func TestShutdownClosesSubscribers(t *testing.T) {
	t.Parallel()
	db := dbtest.New(t, "sqlite")
	s := newLiveServer(t, db, nil, config.Default(), "business")
	w := s.connect(t, s.key)
	w.subscribe("1", "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := sseEvents(s.sseStream(t, ctx, s.key, "").Body)
	s.waitActive(t, 2)
	s.svc.CloseStreams()
	if code, _ := w.closeStatus(5 * time.Second); code != websocket.StatusGoingAway {
		t.Fatalf("close %d; want 1001", code)
	}
	if e := recvEvent(t, events); !strings.Contains(e, "shutting down") {
		t.Fatalf("SSE: %q; want an error event saying the instance shuts down", e)
	}
	if e := recvEvent(t, events); e != "complete " {
		t.Fatalf("SSE: %q; want complete", e)
	}
}

// TestShutdownWithStalledSubscribers: at shutdown, a WebSocket with two operations and an SSE
// stream, both stalled with their writes blocked, do not hold the shutdown past its bound
// (RegistryOptions.WriteTimeout, 10 s, for the streams' last events): it returns, every
// subscription is let go and none is counted active, each counted once as shut down.
func TestShutdownWithStalledSubscribers(t *testing.T) {
	t.Parallel()
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
	s.waitActive(t, 3)
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
