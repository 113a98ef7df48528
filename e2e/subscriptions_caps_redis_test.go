package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"petstore/app"
	"petstore/live"
	"petstore/live/conns"
	"petstore/testkit/dbtest"
)

// TestSubscriptionCapsRedisDown: with the Redis of two instances stopped, the subscriptions
// open stay open and get their pets; new ones get the rate limiter's failure policy: failing
// open, the caps of each instance (never more); failing closed, 503 unavailable with
// Retry-After (SSE) and the protocol's error (WebSocket). When Redis returns, empty, the
// renewals put the leases back while the key is under its cap, and cut off (1013) the
// connections whose leases would take it past: the caps hold across both instances again.
func TestSubscriptionCapsRedisDown(t *testing.T) {
	t.Parallel()
	for _, failOpen := range []bool{true, false} {
		t.Run(map[bool]string{true: "fail open", false: "fail closed"}[failOpen], func(t *testing.T) {
			r := dbtest.NewRedisServer(t)
			db := dbtest.New(t, "sqlite")
			cfg := app.DefaultConfig()
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
				within(t, 2*conns.RenewEvery+2*time.Second, "a connection over the cap cut off", func() bool {
					switch code := wa.closeCode(); {
					case code == live.CloseRetry:
						kept, keptSubs = wb, []string{"1", "2"}
					case code != -1:
						t.Fatalf("a's WebSocket closed with %d; want %d", code, live.CloseRetry)
					}
					switch code := wb.closeCode(); {
					case code == live.CloseRetry && kept != nil:
						t.Fatal("both WebSockets cut off; want the one over the cap")
					case code == live.CloseRetry:
						kept, keptSubs = wa, []string{"1"}
					case code != -1:
						t.Fatalf("b's WebSocket closed with %d; want %d", code, live.CloseRetry)
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
			// A renewal that met Redis still starting failed: the next one, a period later, puts
			// the leases back.
			within(t, 2*conns.RenewEvery+2*time.Second, "a's leases renewed into the restarted Redis", func() bool {
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
// does not put a's leases back: a closes its WebSocket with 1013 and ends its stream with a
// comment saying why and no complete (both for the client to retry), b's streams go on, and the
// key holds 2 subscriptions, no more.
func TestSubscriptionCapsRedisLosesData(t *testing.T) {
	t.Parallel()
	r := dbtest.NewRedisServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	cfg := app.DefaultConfig()
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
			time.Sleep(conns.RenewEvery)
		}
	}

	renewed := time.Now()
	if code, reason := wa.closeStatus(conns.RenewEvery + 2*time.Second); code != live.CloseRetry || reason != conns.ReasonOverCap {
		t.Fatalf("a's WebSocket: close %d %q; want %d %q once a renews", code, reason, live.CloseRetry, conns.ReasonOverCap)
	}
	var tail []string
	for e := range aEvents {
		tail = append(tail, e)
	}
	t.Logf("a cut off %v after b's streams: %q", time.Since(renewed).Round(time.Millisecond), tail)
	if len(tail) != 1 || tail[0] != ": "+conns.ReasonOverCap {
		t.Fatalf("a's stream ended with %q; want only a comment saying why (no complete: the client retries)", tail)
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
