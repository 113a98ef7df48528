package conns

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"petstore/testkit/dbtest"
)

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
