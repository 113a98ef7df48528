package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/redis/go-redis/v9"

	"petstore/auth"
	"petstore/config"
	"petstore/internal/testkit/dbtest"
	"petstore/live"
)

// TestWebSocketRefusals: what a hostile or careless WebSocket client tries, and gets.
func TestWebSocketRefusals(t *testing.T) {
	db := dbtest.New(t, "sqlite")
	cfg := config.Default()
	cfg.CORSOrigins = []string{"https://app.example", "https://*.partner.example"}
	s := newLiveServer(t, db, nil, cfg, "business")

	t.Run("no connection_init", func(t *testing.T) {
		w, err := s.dial(t, nil)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if code, _ := w.closeStatus(10 * time.Second); code != live.CloseInitTimeout {
			t.Fatalf("close %d; want %d", code, live.CloseInitTimeout)
		}
		if d := time.Since(start); d < live.InitTimeout-time.Second {
			t.Fatalf("closed after %v; want about %v", d, live.InitTimeout)
		}
	})
	for name, payload := range map[string]string{
		"no key":      `{}`,
		"unknown key": fmt.Sprintf(`{"Authorization":"Bearer %s"}`, auth.NewKey(cfg.KeyPrefix())),
		"not bearer":  `{"Authorization":"Basic eDp5"}`,
	} {
		t.Run(name, func(t *testing.T) {
			w, err := s.dial(t, nil)
			if err != nil {
				t.Fatal(err)
			}
			w.send(wsMsg{Type: "connection_init", Payload: json.RawMessage(payload)})
			if code, reason := w.closeStatus(5 * time.Second); code != live.CloseForbidden || reason == "" {
				t.Fatalf("close %d %q; want %d with a reason", code, reason, live.CloseForbidden)
			}
		})
	}
	t.Run("key in the upgrade's header", func(t *testing.T) {
		w, err := s.dial(t, http.Header{"Authorization": {"Bearer " + s.key}})
		if err != nil {
			t.Fatal(err)
		}
		w.send(wsMsg{Type: "connection_init"})
		if m := w.read(); m.Type != "connection_ack" {
			t.Fatalf("got %+v; want connection_ack", m)
		}
	})
	t.Run("cross-site origin", func(t *testing.T) {
		w, err := s.dial(t, http.Header{"Origin": {"https://evil.example"}})
		if err == nil || w.resp == nil || w.resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("dial from a foreign origin: %v %v; want 400", err, w.resp)
		}
		for _, origin := range []string{"https://app.example", "https://shop.partner.example"} { // matched as CORS matches
			w, err := s.dial(t, http.Header{"Origin": {origin}})
			if err != nil {
				t.Fatalf("dial from the allowed origin %s: %v", origin, err)
			}
			_ = w.c.CloseNow()
		}
		if w, err := s.dial(t, http.Header{"Origin": {"https://partner.example.evil"}}); err == nil || w.resp == nil || w.resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("dial from a look-alike origin: %v %v; want 400", err, w.resp)
		}
	})
	t.Run("huge message", func(t *testing.T) {
		w := s.connect(t, s.key)
		big := strings.Repeat("x", live.MaxMessageBytes+1)
		p, _ := json.Marshal(map[string]any{"query": "{ pets { id } }", "variables": map[string]any{"x": big}})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = w.c.Write(ctx, websocket.MessageText, append([]byte(`{"type":"subscribe","id":"1","payload":`), append(p, '}')...))
		if code, _ := w.closeStatus(5 * time.Second); code != websocket.StatusMessageTooBig {
			t.Fatalf("close %d; want %d", code, websocket.StatusMessageTooBig)
		}
	})
	t.Run("queries work over the socket", func(t *testing.T) {
		w := s.connect(t, s.key)
		p, _ := json.Marshal(map[string]any{"query": "{ pets { id } }"})
		w.send(wsMsg{Type: "subscribe", ID: "q", Payload: p})
		if m := w.read(); m.Type != "next" || !strings.Contains(string(m.Payload), `"pets"`) {
			t.Fatalf("got %+v; want the pets", m)
		}
	})
}

// TestSubscriptionCaps: a free key holds at most 2 subscriptions at once, on WebSocket and
// SSE alike; closing one frees its slot.
func TestSubscriptionCaps(t *testing.T) {
	db := dbtest.New(t, "sqlite")
	s := newLiveServer(t, db, nil, config.Default(), "free")
	w := s.connect(t, s.key)
	w.subscribe("1", "")
	w.subscribe("2", "")
	w.subscribe("3", "")
	m := w.read() // the three start at once: one of them is refused
	if (m.Type != "error" && m.Type != "next") || !strings.Contains(string(m.Payload), "RATE_LIMITED") {
		t.Fatalf("third subscription: %s %s %s; want its refusal", m.Type, m.ID, m.Payload)
	}
	if c := w.read(); c.Type != "complete" || c.ID != m.ID {
		t.Fatalf("after the refusal: %+v; want complete of %s", c, m.ID)
	}
	running := map[string]string{"1": "2", "2": "1", "3": "1"}[m.ID]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := s.sseStream(t, ctx, s.key, "")
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(b), `"code":"rate_limited"`) || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("SSE over the cap: %d %s; want 429 rate_limited with Retry-After", resp.StatusCode, b)
	}
	w.send(wsMsg{Type: "complete", ID: running})
	time.Sleep(200 * time.Millisecond)
	w.subscribe("4", "")
	if m, err := w.readErr(500 * time.Millisecond); err == nil && m.ID == "4" {
		t.Fatalf("after one closed: %+v; want the subscription to run", m)
	}
}

// TestWebSocketRateLimit: each operation on a socket is charged; over the limit the
// operation gets the protocol's error, before any event; SSE gets 429 with Retry-After.
func TestWebSocketRateLimit(t *testing.T) {
	db := dbtest.New(t, "sqlite")
	s := newLiveServer(t, db, nil, config.Default(), "business")
	key, _, err := auth.CreateKey(context.Background(), db.DB, s.cfg.KeyPrefix(), auth.KeySpec{Plan: "enterprise", PerMinute: 2, PerDay: 100})
	if err != nil {
		t.Fatal(err)
	}
	w := s.connect(t, key) // the upgrade is anonymous: charged to the address
	w.subscribe("1", "")   // 1
	w.subscribe("2", "")   // 2
	w.subscribe("3", "")   // over
	m := w.read()          // one of the three, charged at once
	if m.Type != "error" || !strings.Contains(string(m.Payload), "RATE_LIMITED") {
		t.Fatalf("third operation: %s %s %s; want an error message with RATE_LIMITED", m.Type, m.ID, m.Payload)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := s.sseStream(t, ctx, key, "")
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("SSE over the limit: %d %v; want 429 with Retry-After", resp.StatusCode, resp.Header)
	}
}

// TestRevokedKeyLosesSubscriptions: revoking a key closes its WebSockets with 4403 and ends
// its SSE streams with an error event, within a few seconds.
func TestRevokedKeyLosesSubscriptions(t *testing.T) {
	db := dbtest.New(t, "sqlite")
	s := newLiveServer(t, db, nil, config.Default(), "business")
	key, rec, err := auth.CreateKey(context.Background(), db.DB, s.cfg.KeyPrefix(), auth.KeySpec{Plan: "pro"})
	if err != nil {
		t.Fatal(err)
	}
	w := s.connect(t, key)
	w.subscribe("1", "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := sseEvents(s.sseStream(t, ctx, key, "").Body)
	time.Sleep(200 * time.Millisecond)
	if err := auth.RevokeKey(context.Background(), db.DB, rec.ID); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if code, reason := w.closeStatus(10 * time.Second); code != live.CloseForbidden || !strings.Contains(reason, "revoked") {
		t.Fatalf("close %d %q; want %d saying revoked", code, reason, live.CloseForbidden)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("closed after %v; want within 5 s", d)
	}
	if e := recvEvent(t, events); !strings.Contains(e, "revoked") || !strings.Contains(e, "UNAUTHORIZED") {
		t.Fatalf("SSE: %q; want an error event saying revoked", e)
	}
	if e := recvEvent(t, events); e != "complete " {
		t.Fatalf("SSE: %q; want complete", e)
	}
}

// TestShutdownClosesSubscribers: at shutdown, after the drain delay, WebSockets get 1001 and
// SSE streams an error event then complete.
func TestShutdownClosesSubscribers(t *testing.T) {
	db := dbtest.New(t, "sqlite")
	s := newLiveServer(t, db, nil, config.Default(), "business")
	w := s.connect(t, s.key)
	w.subscribe("1", "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := sseEvents(s.sseStream(t, ctx, s.key, "").Body)
	time.Sleep(200 * time.Millisecond)
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

// TestSlowSubscriber: a burst of pets reaches a subscriber that reads, complete and in order;
// a WebSocket and an SSE stream that stop reading are cut off (their memory bounded), counted
// on /metrics, and no longer counted active. Each is cut by whichever comes first: its buffer
// of events left full (the Hub) or a write to it timing out (the transport); both take 10 s
// from the same moment, so either may win.
func TestSlowSubscriber(t *testing.T) {
	db := dbtest.New(t, "sqlite")
	s := newLiveServer(t, db, nil, config.Default(), "business")
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
	time.Sleep(200 * time.Millisecond)
	if n := activeSubscriptions(t, s.url); n != 3 {
		t.Fatalf("%d subscriptions active; want the reader's and the two stalled", n)
	}
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

// metricsText returns the /metrics page.
func metricsText(t *testing.T, base string) string {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestSuspendedKeyLosesSubscriptions: a key suspended for sending on after being rate limited
// loses its WebSockets with 4403 within a few seconds, with the limiter in process and in
// Redis (where the recheck asks about every key at once), among other keys with subscriptions.
func TestSuspendedKeyLosesSubscriptions(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(map[bool]string{false: "in process", true: "redis"}[shared], func(t *testing.T) {
			db := dbtest.New(t, "sqlite")
			cfg := config.Default()
			var rdb redis.UniversalClient
			if shared {
				var prefix string
				rdb, prefix = dbtest.Redis(t)
				cfg.RateLimit.RedisKeyPrefix = prefix
			}
			s := newLiveServer(t, db, rdb, cfg, "business")
			others := s.connect(t, s.key)
			others.subscribe("1", "")
			key, _, err := auth.CreateKey(context.Background(), db.DB, s.cfg.KeyPrefix(), auth.KeySpec{Plan: "enterprise", PerMinute: 1, PerDay: 1000})
			if err != nil {
				t.Fatal(err)
			}
			w := s.connect(t, key) // the upgrade is charged to the address: the key's one request is the subscription
			w.subscribe("1", "")
			time.Sleep(200 * time.Millisecond)
			for range 25 { // rate limited, then suspended (20 rejections)
				req, _ := http.NewRequest(http.MethodGet, s.url+"/v1/pets", nil)
				req.Header.Set("Authorization", "Bearer "+key)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			start := time.Now()
			if code, reason := w.closeStatus(10 * time.Second); code != live.CloseForbidden || !strings.Contains(reason, "suspended") {
				t.Fatalf("close %d %q; want %d saying suspended", code, reason, live.CloseForbidden)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("closed after %v; want within 5 s (checked every 2 s)", d)
			}
			if m, err := others.readErr(500 * time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("the other key's socket: %+v %v; want it open and quiet", m, err)
			}
		})
	}
}

// TestServerPings: the server pings an idle socket (graphql-transport-ws ping), so that dead
// peers are found.
func TestServerPings(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a ping")
	}
	db := dbtest.New(t, "sqlite")
	s := newLiveServer(t, db, nil, config.Default(), "business")
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
	cfg := config.Default()
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
