package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/app"
	"petstore/auth"
	"petstore/live"
	"petstore/live/conns"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// TestSubscriptionCaps: a free key holds at most 2 subscriptions at once, on WebSocket and
// SSE alike; closing one frees its slot.
func TestSubscriptionCaps(t *testing.T) {
	t.Parallel()
	db := dbtest.New(t, "sqlite")
	s := newLiveServer(t, db, nil, app.DefaultConfig(), "free")
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

// TestSubscriptionCapsAcrossInstances: two instances sharing one Redis (a single server, on
// both stores, and a three-node Redis Cluster, with keys whose sets sit on different nodes)
// count a key's subscriptions and connections together.
func TestSubscriptionCapsAcrossInstances(t *testing.T) {
	t.Parallel()
	t.Run("single", func(t *testing.T) {
		dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
			_, prefix := dbtest.Redis(t) // its keys are deleted at the end
			cfg := app.DefaultConfig()
			cfg.RedisURL = dbtest.RedisURL()
			cfg.RedisKeyPrefix = prefix
			insts := sharedInstances(t, db, cfg, 2)
			capsAcrossTwo(t, insts[0], insts[1], insts[0].newKey(t, "free"))
			concurrentOpens(t, insts, insts[0].newKey(t, "free"))
		})
	})
	t.Run("cluster", func(t *testing.T) {
		c := dbtest.NewRedisCluster(t)
		cfg := app.DefaultConfig()
		cfg.RedisURL = c.URL()
		cfg.RedisKeyPrefix = "test:" + fmt.Sprint(time.Now().UnixNano()) + ":"
		db := dbtest.New(t, "sqlite")
		insts := sharedInstances(t, db, cfg, 2)
		client := c.Client(t)
		nodes := map[string]bool{}
		for range 4 {
			key, rec, err := auth.CreateKey(context.Background(), db.DB, auth.PrefixFor(cfg.Env), auth.KeySpec{Plan: "free"})
			if err != nil {
				t.Fatal(err)
			}
			node, err := client.MasterForKey(context.Background(), fmt.Sprintf("{%slive:k:%d}", cfg.RedisKeyPrefix, rec.ID))
			if err != nil {
				t.Fatal(err)
			}
			nodes[node.Options().Addr] = true
			capsAcrossTwo(t, insts[0], insts[1], key)
		}
		if len(nodes) < 2 {
			t.Fatalf("the keys' sets sat on %d node(s); want several", len(nodes))
		}
		concurrentOpens(t, insts, insts[0].newKey(t, "free"))
	})
}

// capsAcrossTwo runs a free key (2 subscriptions, 2 connections) through instances a and b:
// what one holds counts on the other, and what is closed is free on the other at once.
func capsAcrossTwo(t *testing.T, a, b *liveServer, key string) {
	t.Helper()
	wa := a.connectKey(t, key) // connections: 1
	wa.runs("1")
	wa.runs("2") // subscriptions: 2, both on a
	b.sseOverCap(t, key)
	wb := b.connectKey(t, key) // connections: 2
	wb.refused("3", "RATE_LIMITED")
	if code, reason := b.connectRefused(t, key); code != live.CloseTooMany || !strings.Contains(reason, "connections") {
		t.Fatalf("a third connection on b: close %d %q; want %d", code, reason, live.CloseTooMany)
	}
	if code, _ := a.connectRefused(t, key); code != live.CloseTooMany {
		t.Fatalf("a third connection on a: close %d; want %d", code, live.CloseTooMany)
	}

	wa.send(wsMsg{Type: "complete", ID: "1"}) // frees a subscription on every instance at once
	n := 0
	within(t, freedSoon, "a subscription closed on a is free on b", func() bool {
		n++
		ok, _ := wb.try(fmt.Sprint("4.", n), 300*time.Millisecond)
		return ok
	})
	_ = wa.c.CloseNow() // frees a connection and the subscription 2
	within(t, freedSoon, "a connection closed on a is free on b", func() bool {
		status, _, _, cancel := b.sseOpen(t, key)
		if status != http.StatusOK {
			cancel()
		}
		return status == http.StatusOK
	})
	id := a.createPet(t, a.key, "seen", "")
	if ev := wb.next(fmt.Sprint("4.", n)); ev.Pet.ID != fmt.Sprint(id) {
		t.Fatalf("b's subscription got pet %s; want %d", ev.Pet.ID, id)
	}
}

// concurrentOpens opens 12 streams of a free key at once, alternately on each instance:
// exactly 2 run.
func concurrentOpens(t *testing.T, insts []*liveServer, key string) {
	t.Helper()
	var (
		mu     sync.Mutex
		counts = map[int]int{}
		wg     sync.WaitGroup
	)
	for i := range 12 {
		wg.Go(func() {
			status, _, _, _ := insts[i%len(insts)].sseOpen(t, key)
			mu.Lock()
			counts[status]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if counts[http.StatusOK] != 2 || counts[http.StatusTooManyRequests] != 10 {
		t.Fatalf("12 streams of a free key at once on two instances: %v; want 2 200 and 10 429", counts)
	}
}

// TestSubscriptionCapsShutdown: an instance that shuts down lets its leases go with its
// subscribers, who may subscribe on another instance at once.
func TestSubscriptionCapsShutdown(t *testing.T) {
	t.Parallel()
	_, prefix := dbtest.Redis(t)
	cfg := app.DefaultConfig()
	cfg.RedisURL = dbtest.RedisURL()
	cfg.RedisKeyPrefix = prefix
	insts := sharedInstances(t, dbtest.New(t, "sqlite"), cfg, 2)
	a, b := insts[0], insts[1]
	key := a.newKey(t, "free")
	for range 2 {
		if status, body, _, _ := a.sseOpen(t, key); status != http.StatusOK {
			t.Fatalf("a stream on a: %d %s", status, body)
		}
	}
	b.sseOverCap(t, key)
	a.svc.CloseStreams()
	within(t, freedSoon, "the streams of an instance shut down are free on another", func() bool {
		status, _, _, _ := b.sseOpen(t, key)
		return status == http.StatusOK
	})
}

// TestSubscriptionCapsInstanceDies: an instance (a process of its own) holding a key's
// subscriptions is killed; its leases, renewed no more, end within conns.LeaseFor, and the key
// may subscribe on the other instance again, not before.
func TestSubscriptionCapsInstanceDies(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits for a lease to end")
	}
	r := dbtest.NewRedisServer(t)
	dsn := dbtest.DSN(t, "mysql")
	db, err := store.Open(context.Background(), dsn, store.DefaultPool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	cfg := app.DefaultConfig()
	cfg.RedisURL = r.URL()
	b := sharedInstances(t, db, cfg, 1)[0]
	key := b.newKey(t, "free")

	cmd, url, _ := startServe(t, append(os.Environ(), "PETSTORE_DB="+dsn, "PETSTORE_REDIS_URL="+r.URL(),
		"PETSTORE_ENV=staging", "PETSTORE_LOG_LEVEL=error")...)
	a := &liveServer{url: url}
	for range 2 {
		if status, body, _, _ := a.sseOpen(t, key); status != http.StatusOK {
			t.Fatalf("a stream on the instance that dies: %d %s", status, body)
		}
	}
	b.sseOverCap(t, key)

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	b.sseOverCap(t, key) // nobody let the leases go
	for {
		time.Sleep(500 * time.Millisecond)
		status, body, _, _ := b.sseOpen(t, key)
		waited := time.Since(killed)
		if status == http.StatusOK {
			t.Logf("free %v after the kill", waited.Round(10*time.Millisecond))
			if waited < conns.LeaseFor-conns.RenewEvery-time.Second {
				t.Fatalf("free %v after the kill; want the leases kept until at least %v", waited, conns.LeaseFor-conns.RenewEvery)
			}
			return
		}
		if status != http.StatusTooManyRequests || !strings.Contains(body, "already holds") {
			t.Fatalf("after the kill: %d %s; want 429 over the cap until the leases end", status, body)
		}
		if waited > conns.LeaseFor+2*time.Second {
			t.Fatalf("still over the cap %v after the kill; want free within %v", waited, conns.LeaseFor)
		}
	}
}
