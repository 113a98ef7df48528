package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/redis/go-redis/v9"

	"petstore/app"
	"petstore/auth"
	"petstore/config"
	"petstore/internal/testkit/dbtest"
	"petstore/live"
	"petstore/store"
)

// The caps of a key's subscriptions and connections on every instance sharing one Redis
// (live.Leases).

// sharedInstances serves n instances of the service over db, each with a Redis client of its
// own made by openRedis from cfg.RedisURL, and a business key for writing pets.
func sharedInstances(t *testing.T, db *store.DB, cfg config.Config, n int) []*liveServer {
	t.Helper()
	var insts []*liveServer
	for range n {
		rdb, err := app.OpenRedis(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rdb.Close() })
		insts = append(insts, newLiveServer(t, db, rdb, cfg, "business"))
	}
	return insts
}

// capsClient is a graphql-transport-ws client whose messages a goroutine reads, so that waiting
// for none leaves the socket open (coder/websocket closes a socket whose read's context ends).
type capsClient struct {
	*wsClient
	msgs chan wsMsg // closed when the socket is
	err  error      // why the socket closed, once msgs is
}

// connectKey opens a WebSocket with key in the upgrade's Authorization header (so that the
// upgrade is charged to the key, not to the test's address) and initialises it.
func (s *liveServer) connectKey(t *testing.T, key string) *capsClient {
	t.Helper()
	w, err := s.dial(t, http.Header{"Authorization": {"Bearer " + key}})
	if err != nil {
		t.Fatal(err)
	}
	w.send(wsMsg{Type: "connection_init"})
	if m := w.read(); m.Type != "connection_ack" {
		t.Fatalf("after connection_init: got %+v; want connection_ack", m)
	}
	c := &capsClient{wsClient: w, msgs: make(chan wsMsg, 64)}
	go func() {
		defer close(c.msgs)
		for {
			m, err := w.readErr(time.Hour) // answers pings
			if err != nil {
				c.err = err
				return
			}
			c.msgs <- m
		}
	}()
	return c
}

// closeCode returns the close code of the socket, once closed, or -1 while it is open (its
// messages unread are dropped).
func (c *capsClient) closeCode() int {
	for {
		select {
		case _, ok := <-c.msgs:
			if !ok {
				return int(websocket.CloseStatus(c.err))
			}
		default:
			return -1
		}
	}
}

// recv returns the next message within d, or false.
func (c *capsClient) recv(d time.Duration) (wsMsg, bool) {
	select {
	case m, ok := <-c.msgs:
		if !ok {
			c.t.Fatal("the socket closed")
		}
		return m, true
	case <-time.After(d):
		return wsMsg{}, false
	}
}

// next returns the pet of the next event, which must be of operation id.
func (c *capsClient) next(id string) petEvent {
	c.t.Helper()
	m, ok := c.recv(10 * time.Second)
	var p struct {
		Data   struct{ PetAdded petEvent }
		Errors []any
	}
	if !ok || m.Type != "next" || m.ID != id || json.Unmarshal(m.Payload, &p) != nil || len(p.Errors) > 0 {
		c.t.Fatalf("got %v %s %s %s; want an event of %s", ok, m.Type, m.ID, m.Payload, id)
	}
	return p.Data.PetAdded
}

// connectRefused opens a WebSocket with key and returns the close code and reason of its
// connection_init.
func (s *liveServer) connectRefused(t *testing.T, key string) (int, string) {
	t.Helper()
	w, err := s.dial(t, http.Header{"Authorization": {"Bearer " + key}})
	if err != nil {
		t.Fatal(err)
	}
	w.send(wsMsg{Type: "connection_init"})
	code, reason := w.closeStatus(5 * time.Second)
	return int(code), reason
}

// runs subscribes as id on c and checks that the subscription runs: no refusal comes.
func (c *capsClient) runs(id string) {
	c.t.Helper()
	c.subscribe(id, "")
	if m, ok := c.recv(700 * time.Millisecond); ok {
		c.t.Fatalf("subscription %s: got %s %s; want it to run", id, m.Type, m.Payload)
	}
}

// refused subscribes as id on c and checks that it is refused with code (RATE_LIMITED,
// UNAVAILABLE), then completed.
func (c *capsClient) refused(id, code string) {
	c.t.Helper()
	if ok, m := c.try(id, 10*time.Second); ok || !strings.Contains(string(m.Payload), code) {
		c.t.Fatalf("subscription %s: got %s %s %s; want its refusal with %s", id, m.Type, m.ID, m.Payload, code)
	}
}

// try subscribes as id on c and reports whether it runs (no refusal within d); a refusal is
// read to its end and returned.
func (c *capsClient) try(id string, d time.Duration) (bool, wsMsg) {
	c.t.Helper()
	c.subscribe(id, "")
	m, ok := c.recv(d)
	if !ok {
		return true, m
	}
	if (m.Type != "error" && m.Type != "next") || m.ID != id {
		c.t.Fatalf("subscription %s: got %s %s %s; want it to run or its refusal", id, m.Type, m.ID, m.Payload)
	}
	if e, ok := c.recv(5 * time.Second); !ok || e.Type != "complete" || e.ID != id {
		c.t.Fatalf("after the refusal of %s: %+v; want complete", id, e)
	}
	return false, m
}

// sseOpen opens a petAdded stream with key and returns its answer's status, the body of a
// refusal, and the response (its body closed when t ends or cancel is called).
func (s *liveServer) sseOpen(t *testing.T, key string) (int, string, *http.Response, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	resp := s.sseStream(t, ctx, key, "")
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, "", resp, cancel
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp, cancel
}

// sseOverCap checks that a stream of key on s is refused over the cap: 429 rate_limited with
// Retry-After, saying so.
func (s *liveServer) sseOverCap(t *testing.T, key string) {
	t.Helper()
	status, body, resp, _ := s.sseOpen(t, key)
	if status != http.StatusTooManyRequests || !strings.Contains(body, `"code":"rate_limited"`) ||
		!strings.Contains(body, "already holds") || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a stream over the cap: %d %s; want 429 rate_limited about the cap, with Retry-After", status, body)
	}
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

// freedSoon is how soon a slot let go must be free on every instance: at once, as a close
// removes its lease (0-1 ms at rest); the bound allows for a loaded machine and stays well
// short of live.LeaseFor, after which an abandoned lease would free it as well (as it did when
// a shutdown abandoned a removal under way: TestSubscriptionCapsShutdown failed 8 runs in 40).
const freedSoon = 3 * time.Second

// within tries ok every 100 ms for up to d, failing t when it never holds: what says what
// was awaited.
func within(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	start := time.Now()
	for !ok() {
		if time.Since(start) > d {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%s after %v", what, time.Since(start).Round(time.Millisecond))
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

// TestSubscriptionCapsAcrossInstances: two instances sharing one Redis (a single server, on
// both stores, and a three-node Redis Cluster, with keys whose sets sit on different nodes)
// count a key's subscriptions and connections together.
func TestSubscriptionCapsAcrossInstances(t *testing.T) {
	t.Run("single", func(t *testing.T) {
		dbtest.ForEach(t, func(t *testing.T, db *store.DB) {
			_, prefix := dbtest.Redis(t) // its keys are deleted at the end
			cfg := config.Default()
			cfg.RedisURL = os.Getenv("PETSTORE_TEST_REDIS")
			if cfg.RedisURL == "" {
				cfg.RedisURL = dbtest.DefaultRedis
			}
			cfg.RateLimit.RedisKeyPrefix = prefix
			insts := sharedInstances(t, db, cfg, 2)
			capsAcrossTwo(t, insts[0], insts[1], insts[0].newKey(t, "free"))
			concurrentOpens(t, insts, insts[0].newKey(t, "free"))
		})
	})
	t.Run("cluster", func(t *testing.T) {
		c := dbtest.NewRedisCluster(t)
		cfg := config.Default()
		cfg.RedisURL = c.URL()
		cfg.RateLimit.RedisKeyPrefix = "test:" + fmt.Sprint(time.Now().UnixNano()) + ":"
		db := dbtest.New(t, "sqlite")
		insts := sharedInstances(t, db, cfg, 2)
		client := c.Client(t)
		nodes := map[string]bool{}
		for range 4 {
			key, rec, err := auth.CreateKey(context.Background(), db.DB, cfg.KeyPrefix(), auth.KeySpec{Plan: "free"})
			if err != nil {
				t.Fatal(err)
			}
			node, err := client.MasterForKey(context.Background(), fmt.Sprintf("{%slive:k:%d}", cfg.RateLimit.RedisKeyPrefix, rec.ID))
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

// TestSubscriptionCapsShutdown: an instance that shuts down lets its leases go with its
// subscribers, who may subscribe on another instance at once.
func TestSubscriptionCapsShutdown(t *testing.T) {
	_, prefix := dbtest.Redis(t)
	cfg := config.Default()
	cfg.RedisURL = os.Getenv("PETSTORE_TEST_REDIS")
	if cfg.RedisURL == "" {
		cfg.RedisURL = dbtest.DefaultRedis
	}
	cfg.RateLimit.RedisKeyPrefix = prefix
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
// subscriptions is killed; its leases, renewed no more, end within live.LeaseFor, and the key
// may subscribe on the other instance again, not before.
func TestSubscriptionCapsInstanceDies(t *testing.T) {
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
	cfg := config.Default()
	cfg.RedisURL = r.URL()
	b := sharedInstances(t, db, cfg, 1)[0]
	key := b.newKey(t, "free")

	cmd, url := startServe(t, append(os.Environ(), "PETSTORE_DB="+dsn, "PETSTORE_REDIS_URL="+r.URL(),
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
			if waited < live.LeaseFor-live.RenewEvery-time.Second {
				t.Fatalf("free %v after the kill; want the leases kept until at least %v", waited, live.LeaseFor-live.RenewEvery)
			}
			return
		}
		if status != http.StatusTooManyRequests || !strings.Contains(body, "already holds") {
			t.Fatalf("after the kill: %d %s; want 429 over the cap until the leases end", status, body)
		}
		if waited > live.LeaseFor+2*time.Second {
			t.Fatalf("still over the cap %v after the kill; want free within %v", waited, live.LeaseFor)
		}
	}
}

// TestSubscriptionCapsRedisDown: with the Redis of two instances stopped, the subscriptions
// open stay open and get their pets; new ones get the rate limiter's failure policy: failing
// open, the caps of each instance (never more); failing closed, 503 unavailable with
// Retry-After (SSE) and the protocol's error (WebSocket). When Redis returns, empty, the
// renewals put the leases back while the key is under its cap, and cut off (4429) the
// connections whose leases would take it past: the caps hold across both instances again.
func TestSubscriptionCapsRedisDown(t *testing.T) {
	for _, failOpen := range []bool{true, false} {
		t.Run(map[bool]string{true: "fail open", false: "fail closed"}[failOpen], func(t *testing.T) {
			r := dbtest.NewRedisServer(t)
			db := dbtest.New(t, "sqlite")
			cfg := config.Default()
			cfg.RedisURL = r.URL()
			cfg.RateLimit.FailOpen = failOpen
			insts := sharedInstances(t, db, cfg, 2)
			a, b := insts[0], insts[1]
			key := a.newKey(t, "free")
			wa := a.connectKey(t, key)
			wa.runs("1")

			r.Stop(t)
			// Written straight to the database (failing closed, the API answers 503 now): the
			// Hub's poll brings it.
			if err := db.DB.Exec("INSERT INTO pets (name, category_id, status) VALUES ('during', 1, 'available')").Error; err != nil {
				t.Fatal(err)
			}
			if ev := wa.next("1"); ev.Pet.Name != "during" {
				t.Fatalf("the open subscription got pet %+v; want the one added during the outage", ev.Pet)
			}
			var wb *capsClient // failing open, b's connection
			if failOpen {
				wb = b.connectKey(t, key)
				wb.runs("1")
				wb.runs("2")
				wb.refused("3", "RATE_LIMITED") // b's own cap
				if !strings.Contains(metricsText(t, b.url), "petstore_subscription_cap_errors_total ") ||
					strings.Contains(metricsText(t, b.url), "petstore_subscription_cap_errors_total 0") {
					t.Errorf("petstore_subscription_cap_errors_total did not count the failures")
				}
			} else {
				status, body, resp, _ := b.sseOpen(t, key)
				if status != http.StatusServiceUnavailable || !strings.Contains(body, `"code":"unavailable"`) || resp.Header.Get("Retry-After") == "" {
					t.Fatalf("a stream while Redis is down: %d %s; want 503 unavailable with Retry-After", status, body)
				}
				wa.refused("2", "UNAVAILABLE")
			}

			r.Restart(t)
			if failOpen {
				// a holds 1 subscription and b 2, over the cap: the instance that renews second
				// cannot put back every lease, and cuts off the connection holding them.
				var kept *capsClient
				var keptSubs []string
				within(t, 2*live.RenewEvery+2*time.Second, "a connection over the cap cut off", func() bool {
					switch code := wa.closeCode(); {
					case code == live.CloseTooMany:
						kept, keptSubs = wb, []string{"1", "2"}
					case code != -1:
						t.Fatalf("a's WebSocket closed with %d; want %d", code, live.CloseTooMany)
					}
					switch code := wb.closeCode(); {
					case code == live.CloseTooMany && kept != nil:
						t.Fatal("both WebSockets cut off; want the one over the cap")
					case code == live.CloseTooMany:
						kept, keptSubs = wa, []string{"1"}
					case code != -1:
						t.Fatalf("b's WebSocket closed with %d; want %d", code, live.CloseTooMany)
					}
					return kept != nil
				})
				for range 2 - len(keptSubs) { // the slots left are free, and no more
					within(t, freedSoon, "a slot under the cap admitted", func() bool {
						status, _, _, cancel := a.sseOpen(t, key)
						if status != http.StatusOK {
							cancel()
						}
						return status == http.StatusOK
					})
				}
				a.sseOverCap(t, key)
				b.sseOverCap(t, key)
				id := a.createPet(t, a.key, "after", "")
				var got []string // the subscriptions kept get it, in any order
				for range keptSubs {
					m, ok := kept.recv(10 * time.Second)
					if !ok || m.Type != "next" || !strings.Contains(string(m.Payload), fmt.Sprintf(`"id":"%d"`, id)) {
						t.Fatalf("a subscription kept got %v %s %s %s; want pet %d", ok, m.Type, m.ID, m.Payload, id)
					}
					got = append(got, m.ID)
				}
				if slices.Sort(got); !slices.Equal(got, keptSubs) {
					t.Fatalf("pet %d reached the subscriptions %v; want %v", id, got, keptSubs)
				}
				return
			}
			// Failing closed, a holds 1 subscription and 1 connection: b may have 1 more of each.
			within(t, 5*time.Second, "the API answers again", func() bool {
				status, _, _, cancel := b.sseOpen(t, key)
				cancel()
				return status == http.StatusOK
			})
			wb = b.connectKey(t, key)
			wb.runs("1")
			within(t, live.RenewEvery+2*time.Second, "a's leases renewed into the restarted Redis", func() bool {
				status, body, _, cancel := b.sseOpen(t, key)
				cancel()
				return status == http.StatusTooManyRequests && strings.Contains(body, "already holds")
			})
			id := a.createPet(t, a.key, "after", "")
			if ev := wa.next("1"); ev.Pet.ID != fmt.Sprint(id) {
				t.Fatalf("the subscription open throughout got pet %s; want %d", ev.Pet.ID, id)
			}
		})
	}
}

// TestSubscriptionCapsRedisLosesData: the Redis of the caps (a server of the test's own) loses
// its data while a free key holds its 2 subscriptions and 2 connections on instance a (a
// WebSocket with one subscription, and an SSE stream); another instance, b, admits 2 streams
// of the key at once, as Redis holds none. The next renewal of a finds the key at its cap and
// does not put a's leases back: a closes its WebSocket with 4429 and ends its stream with a
// RATE_LIMITED error event, b's streams go on, and the key holds 2 subscriptions, no more.
func TestSubscriptionCapsRedisLosesData(t *testing.T) {
	r := dbtest.NewRedisServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	cfg := config.Default()
	cfg.RedisURL = r.URL()
	insts := sharedInstances(t, dbtest.New(t, "sqlite"), cfg, 2)
	a, b := insts[0], insts[1]
	key := a.newKey(t, "free")

	wa, err := a.dial(t, http.Header{"Authorization": {"Bearer " + key}})
	if err != nil {
		t.Fatal(err)
	}
	wa.send(wsMsg{Type: "connection_init"})
	if m := wa.read(); m.Type != "connection_ack" {
		t.Fatalf("after connection_init: %+v", m)
	}
	wa.subscribe("1", "")
	status, body, resp, _ := a.sseOpen(t, key)
	if status != http.StatusOK {
		t.Fatalf("a's stream: %d %s", status, body)
	}
	aEvents := sseEvents(resp.Body)
	b.sseOverCap(t, key)

	// Flushed, Redis holds none of a's leases until a renews them: b admits 2 streams. Should
	// a's renewal come first, b is refused; its streams close and the flush is tried again.
	var bEvents []<-chan string
	for attempt := 0; len(bEvents) < 2; attempt++ {
		if attempt == 5 {
			t.Fatal("b never admitted 2 streams between a flush and a's renewal")
		}
		if err := rdb.FlushAll(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		var cancels []context.CancelFunc
		bEvents = nil
		for range 2 {
			status, _, resp, cancel := b.sseOpen(t, key)
			cancels = append(cancels, cancel)
			if status == http.StatusOK {
				bEvents = append(bEvents, sseEvents(resp.Body))
			}
		}
		if len(bEvents) < 2 {
			for _, cancel := range cancels {
				cancel()
			}
			time.Sleep(live.RenewEvery)
		}
	}

	renewed := time.Now()
	if code, reason := wa.closeStatus(live.RenewEvery + 2*time.Second); code != live.CloseTooMany {
		t.Fatalf("a's WebSocket: close %d %q; want %d once a renews", code, reason, live.CloseTooMany)
	}
	var tail []string
	for e := range aEvents {
		tail = append(tail, e)
	}
	t.Logf("a cut off %v after b's streams: %q", time.Since(renewed).Round(time.Millisecond), tail)
	if len(tail) != 2 || !strings.Contains(tail[0], "RATE_LIMITED") || tail[1] != "complete " {
		t.Fatalf("a's stream ended with %q; want a RATE_LIMITED error event, then complete", tail)
	}
	a.sseOverCap(t, key)
	b.sseOverCap(t, key)
	id := a.createPet(t, a.key, "after", "")
	for i, events := range bEvents {
		if e := recvEvent(t, events); !strings.Contains(e, fmt.Sprintf(`"id":"%d"`, id)) {
			t.Fatalf("b's stream %d got %q; want pet %d", i, e, id)
		}
	}
}
