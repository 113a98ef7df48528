package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/redis/go-redis/v9"

	"petstore/app"
	"petstore/auth"
	"petstore/config"
	"petstore/live"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// forEachLiveStore runs fn on each store, with the limiter and the caps in process and in
// Redis.
func forEachLiveStore(t *testing.T, fn func(t *testing.T, db *store.DB, rdb redis.UniversalClient, cfg config.Config)) {
	t.Helper()
	dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
		for _, where := range []string{"memory", "redis"} {
			t.Run(where, func(t *testing.T) {
				cfg := app.DefaultConfig()
				var rdb redis.UniversalClient
				if where == "redis" {
					rdb, cfg.RedisKeyPrefix = dbtest.Redis(t)
				}
				fn(t, db, rdb, cfg)
			})
		}
	})
}

// keyless sends GET /v1/pets without a key and returns the status and the error code.
func (s *liveServer) keyless(t testing.TB) (int, string) {
	t.Helper()
	resp, err := http.Get(s.url + "/v1/pets")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Code string }
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body.Code
}

// suspendAddress sends requests without a key from the test's address until it is suspended.
func (s *liveServer) suspendAddress(t testing.TB) {
	t.Helper()
	rl := s.cfg.RateLimit
	awayFromMinuteEdge(t)
	for range rl.AnonymousPerMinute + rl.SuspendAfter - 1 {
		s.keyless(t)
	}
	if status, code := s.keyless(t); status != http.StatusTooManyRequests || code != "key_suspended" {
		t.Fatalf("the address after %d requests without a key: got %d %s; want 429 key_suspended",
			rl.AnonymousPerMinute+rl.SuspendAfter, status, code)
	}
}

// open dials /v1/graphql and sends connection_init, the key in the upgrade's header when
// inHeader, else in the payload, and returns the socket once acknowledged, or why not (the
// upgrade's status, or the close code and reason). Safe on any goroutine.
func (s *liveServer) open(key string, inHeader bool) (*websocket.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	opts := &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}}
	payload := fmt.Sprintf(`{"Authorization":"Bearer %s"}`, key)
	if inHeader {
		opts.HTTPHeader = http.Header{"Authorization": {"Bearer " + key}}
		payload = `{}`
	}
	c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.url, "http")+"/v1/graphql", opts)
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("upgrade: %d", resp.StatusCode)
		}
		return nil, err
	}
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"connection_init","payload":`+payload+`}`)); err != nil {
		_ = c.CloseNow()
		return nil, err
	}
	_, b, err := c.Read(ctx)
	if err != nil {
		_ = c.CloseNow()
		return nil, fmt.Errorf("close %d: %w", websocket.CloseStatus(err), err)
	}
	if !strings.Contains(string(b), `"connection_ack"`) {
		_ = c.CloseNow()
		return nil, fmt.Errorf("got %s; want connection_ack", b)
	}
	return c, nil
}

// TestReconnectStormBehindOneAddress is a rolling restart seen from a busy office: 200 browser
// tabs behind one address reconnect at once to an instance that has cached no key, half with
// the key in the upgrade's Authorization header, half in connection_init, after somebody at
// that address got it suspended with requests without a key. Every socket opens: a socket is
// charged to its key, never to the address, and the address's suspension refuses no valid key.
func TestReconnectStormBehindOneAddress(t *testing.T) {
	t.Parallel()
	forEachLiveStore(t, func(t *testing.T, db *store.DB, rdb redis.UniversalClient, cfg config.Config) {
		s := newLiveServer(t, db, rdb, cfg, "business")
		keys := []string{s.key, s.newKey(t, "business"), s.newKey(t, "business"), s.newKey(t, "business")}
		s.suspendAddress(t)
		const tabs = 200
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			failed []string
		)
		start := time.Now()
		for i := range tabs {
			wg.Go(func() {
				c, err := s.open(keys[i%len(keys)], i%2 == 0)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed = append(failed, err.Error())
					return
				}
				t.Cleanup(func() { _ = c.CloseNow() })
			})
		}
		wg.Wait()
		t.Logf("%d sockets opened in %v", tabs-len(failed), time.Since(start))
		if len(failed) > 0 {
			t.Fatalf("%d of %d sockets refused, the first: %s", len(failed), tabs, failed[0])
		}
		if status, code := s.keyless(t); status != http.StatusTooManyRequests || code != "key_suspended" {
			t.Errorf("the address after the storm: got %d %s; want still suspended, its budget untouched by the sockets", status, code)
		}
	})
}

// TestWebSocketChargedToItsKey: a socket whose key comes in connection_init costs its key one
// request and its address nothing; one whose connection_init names no valid key costs the
// address one request, as a request without a key does, and is closed with 4403.
func TestWebSocketChargedToItsKey(t *testing.T) {
	t.Parallel()
	forEachLiveStore(t, func(t *testing.T, db *store.DB, rdb redis.UniversalClient, cfg config.Config) {
		s := newLiveServer(t, db, rdb, cfg, "free")
		awayFromMinuteEdge(t)
		for range 3 {
			c, err := s.open(s.key, false)
			if err != nil {
				t.Fatal(err)
			}
			_ = c.CloseNow()
		}
		if _, got, _ := s.remaining(t, s.key); got != 56 { // 60 - 3 sockets - this request
			t.Errorf("the key after 3 sockets: X-RateLimit-Remaining %d; want 56", got)
		}
		_, err := s.open(auth.NewKey(auth.PrefixFor(s.cfg.Env)), false)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("close %d", live.CloseForbidden)) {
			t.Fatalf("connection_init with an unknown key: %v; want close %d", err, live.CloseForbidden)
		}
		resp, err := http.Get(s.url + "/v1/pets")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		anon := s.cfg.RateLimit.AnonymousPerMinute
		if got, want := resp.Header.Get("X-RateLimit-Remaining"), fmt.Sprint(anon-2); got != want {
			t.Errorf("the address after 3 keyless sockets and a bad connection_init: X-RateLimit-Remaining %s; want %s", got, want)
		}
	})
}

// TestPendingSocketsPerAddress: PETSTORE_WS_PENDING_PER_ADDR bounds the sockets an address
// holds before connection_init names their key (429 past it), and not the sockets whose
// upgrade carries a valid key.
func TestPendingSocketsPerAddress(t *testing.T) {
	t.Parallel()
	db := dbtest.New(t, "sqlite")
	cfg := app.DefaultConfig()
	cfg.WSPendingPerAddr = 8
	s := newLiveServer(t, db, nil, cfg, "business")
	for range cfg.WSPendingPerAddr {
		if _, err := s.dial(t, nil); err != nil {
			t.Fatal(err)
		}
	}
	w, err := s.dial(t, nil)
	if err == nil || w.resp == nil || w.resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("one more without a key: %v %v; want 429", err, w.resp)
	}
	for i := range 20 {
		c, err := s.open(s.key, true)
		if err != nil {
			t.Fatalf("socket %d with the key in its upgrade: %v; want it open", i+1, err)
		}
		t.Cleanup(func() { _ = c.CloseNow() })
	}
}
