package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"petstore/app"
	"petstore/testkit/dbtest"
)

// TestShutdownClosesSubscribers: at shutdown, after the drain delay, WebSockets get 1001 with
// no complete for their operations, and SSE streams a comment saying why and no complete event:
// the ends graphql-ws and graphql-sse retry (a complete would end the subscription for them).
func TestShutdownClosesSubscribers(t *testing.T) {
	t.Parallel()
	db := dbtest.New(t, "sqlite")
	s := newLiveServer(t, db, nil, app.DefaultConfig(), "business")
	w := s.connect(t, s.key)
	w.subscribe("1", "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := sseEvents(s.sseStream(t, ctx, s.key, "").Body)
	s.waitActive(t, 2)
	s.svc.CloseStreams()
	var sent []string
	for {
		m, err := w.readErr(5 * time.Second)
		if err != nil {
			if code := websocket.CloseStatus(err); code != websocket.StatusGoingAway {
				t.Fatalf("close %d (%v); want 1001", code, err)
			}
			break
		}
		sent = append(sent, m.Type+" "+m.ID)
	}
	if len(sent) > 0 {
		t.Fatalf("the WebSocket got %q before its close; want nothing (no complete: the client resumes)", sent)
	}
	var tail []string
	for e := range events {
		tail = append(tail, e)
	}
	if len(tail) != 1 || !strings.HasPrefix(tail[0], ": ") || !strings.Contains(tail[0], "shutting down") {
		t.Fatalf("SSE ended with %q; want only a comment saying the instance shuts down (no complete)", tail)
	}
}

// TestShutdownWithStalledSubscribers: at shutdown, a WebSocket with two operations and an SSE
// stream, both stalled with their writes blocked, do not hold the shutdown past its bound
// (RegistryOptions.WriteTimeout, 10 s, for the streams' last events): it returns, every
// subscription is let go and none is counted active, each counted once as shut down.
func TestShutdownWithStalledSubscribers(t *testing.T) {
	t.Parallel()
	db := dbtest.New(t, "sqlite")
	s := newLiveServer(t, db, nil, app.DefaultConfig(), "business")
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
