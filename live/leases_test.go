package live

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"petstore/apierr"
	"petstore/auth"
	"petstore/internal/testkit/dbtest"
)

// TestLeasesFailurePolicy: while the Redis of the caps is down (a server of the test's own,
// stopped), a new connection gets the failure policy of the Registry's own: failing open, the
// instance's caps and no more; failing closed, unavailable. (Through the service the rate
// limiter, on the same Redis, answers such requests first.) What was open stays held, and once
// Redis is back the renewals put every lease held into it.
func TestLeasesFailurePolicy(t *testing.T) {
	for _, failOpen := range []bool{true, false} {
		t.Run(map[bool]string{true: "fail open", false: "fail closed"}[failOpen], func(t *testing.T) {
			r := dbtest.NewRedisServer(t)
			client := redis.NewClient(&redis.Options{Addr: r.Addr, DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
			t.Cleanup(func() { _ = client.Close() })
			leases := NewLeases(client, "t:")
			reg := NewRegistry(NewHub(HubOptions{}), RegistryOptions{Leases: leases, FailOpen: failOpen})
			t.Cleanup(reg.Shutdown)
			p := &auth.Principal{KeyID: 7, Plan: auth.Free}
			ctx := context.Background()
			open := func() error {
				_, err := reg.open(ctx, p, func(int, string) {}, true)
				return err
			}
			if err := open(); err != nil {
				t.Fatal(err)
			}

			r.Stop(t)
			err := open()
			if failOpen {
				if err != nil {
					t.Fatalf("second stream with Redis down: %v; want it held on this instance", err)
				}
				if err := open(); apierr.From(err).Code != apierr.RateLimited {
					t.Fatalf("third stream with Redis down: %v; want rate_limited (this instance's cap)", err)
				}
			} else if apierr.From(err).Code != apierr.Unavailable {
				t.Fatalf("second stream with Redis down: %v; want unavailable", err)
			}

			r.Restart(t)
			want := int64(1)
			if failOpen {
				want = 2
			}
			deadline := time.Now().Add(RenewEvery + 2*time.Second)
			for {
				n, _ := client.ZCard(ctx, leases.set("subs", 7)).Result()
				if n == want {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d subscription leases in the restarted Redis; want the %d held", n, want)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}

// BenchmarkLeasesRenew is one renewal round of an instance holding a subscription and a
// connection of each of 2,000 keys (4,000 sets, in pipelines of 1,000): wall time and
// redis-server's CPU time per round (INFO cpu, every client of the server included).
func BenchmarkLeasesRenew(b *testing.B) {
	client, prefix := dbtest.Redis(b)
	leases := NewLeases(client, prefix)
	ctx := context.Background()
	for id := range int64(2000) {
		sets := []string{leases.set("conns", id), leases.set("subs", id)}
		tokens := leases.tokens(sets)
		if full, err := leases.take(ctx, sets, tokens, 2); err != nil || full >= 0 {
			b.Fatalf("take: %d %v", full, err)
		}
		leases.keep(sets, tokens, 2, func() {})
	}
	cpu0 := dbtest.RedisCPU(b, client)
	b.ResetTimer()
	for range b.N {
		if err := leases.renew(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(dbtest.RedisCPU(b, client)-cpu0)/float64(b.N), "redis-cpu-ns/op")
}

// TestLeasesRenewWithinCap: Redis (a server of the test's own) loses its data while instance A
// holds a key's 2 subscription leases (cap 2), and instance B takes 1 of the slots that look
// free. A's renewal puts back 1 lease, the one that fits under the cap, and cuts off the other
// holder; B's renewal keeps its own. The key holds 2 leases, its cap.
func TestLeasesRenewWithinCap(t *testing.T) {
	r := dbtest.NewRedisServer(t)
	client := redis.NewClient(&redis.Options{Addr: r.Addr})
	t.Cleanup(func() { _ = client.Close() })
	ctx := context.Background()
	a, b := NewLeases(client, "t:"), NewLeases(client, "t:")
	set := a.set("subs", 7)
	cuts := map[*Leases]int{}
	hold := func(l *Leases) {
		t.Helper()
		sets := []string{set}
		tokens := l.tokens(sets)
		if full, err := l.take(ctx, sets, tokens, 2); err != nil || full >= 0 {
			t.Fatalf("take: %d %v", full, err)
		}
		l.keep(sets, tokens, 2, func() { cuts[l]++ })
	}
	hold(a)
	hold(a)
	if err := client.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	hold(b)
	for _, l := range []*Leases{a, b} {
		if err := l.renew(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := client.ZCard(ctx, set).Result(); err != nil || n != 2 || cuts[a] != 1 || cuts[b] != 0 || len(a.held[set]) != 1 {
		t.Fatalf("%d leases (%v), %d of A's holders cut off and %d of B's, A holding %d; want 2, 1 and 0, A holding 1",
			n, err, cuts[a], cuts[b], len(a.held[set]))
	}
}
