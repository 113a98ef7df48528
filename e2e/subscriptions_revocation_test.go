package e2e

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"petstore/app"
	"petstore/auth"
	"petstore/live"
	"petstore/testkit/dbtest"
)

// TestRevokedKeyLosesSubscriptions: revoking a key closes its WebSockets with 4403 and ends
// its SSE streams with an error event, within a few seconds.
func TestRevokedKeyLosesSubscriptions(t *testing.T) {
	t.Parallel()
	db := dbtest.New(t, "sqlite")
	s := newLiveServer(t, db, nil, app.DefaultConfig(), "business")
	key, rec, err := auth.CreateKey(context.Background(), db.DB, auth.PrefixFor(s.cfg.Env), auth.KeySpec{Plan: "pro"})
	if err != nil {
		t.Fatal(err)
	}
	w := s.connect(t, key)
	w.subscribe("1", "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := sseEvents(s.sseStream(t, ctx, key, "").Body)
	s.waitActive(t, 2)
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

// TestSuspendedKeyLosesSubscriptions: a key suspended for sending on after being rate limited
// loses its WebSockets with 4403 within a few seconds, with the limiter in process and in
// Redis (where the recheck asks about every key at once), among other keys with subscriptions.
func TestSuspendedKeyLosesSubscriptions(t *testing.T) {
	t.Parallel()
	for _, shared := range []bool{false, true} {
		t.Run(map[bool]string{false: "in process", true: "redis"}[shared], func(t *testing.T) {
			db := dbtest.New(t, "sqlite")
			cfg := app.DefaultConfig()
			var rdb redis.UniversalClient
			if shared {
				var prefix string
				rdb, prefix = dbtest.Redis(t)
				cfg.RedisKeyPrefix = prefix
			}
			s := newLiveServer(t, db, rdb, cfg, "business")
			others := s.connect(t, s.key)
			others.subscribe("1", "")
			key, _, err := auth.CreateKey(context.Background(), db.DB, auth.PrefixFor(s.cfg.Env), auth.KeySpec{Plan: "enterprise", PerMinute: 1, PerDay: 1000})
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

// TestRevokedKeyWithStalledSockets: a key holds 19 stalled graphql-transport-ws subscribers
// (filled by a burst of events) and one that reads, and another key one stalled legacy socket
// that answers no ping; pings run every 2 s, overlapping the stalled writes. Revoked, the
// key's reading socket is closed with 4403 within 5 s, the active gauge drops to the other
// key's one subscription within 5 s, and every stalled socket of the key ends.
func TestRevokedKeyWithStalledSockets(t *testing.T) {
	t.Parallel()
	db := dbtest.New(t, "sqlite")
	cfg := app.DefaultConfig()
	cfg.WSPingInterval = 2 * time.Second // dead after 6 s: the stalled sockets answer no ping
	s := newLiveServer(t, db, nil, cfg, "business")
	addr := strings.TrimPrefix(s.url, "http://")
	key, rec, err := auth.CreateKey(context.Background(), db.DB, auth.PrefixFor(s.cfg.Env), auth.KeySpec{Plan: "pro"})
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
	s.waitActive(t, 21)
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
