package ratelimit

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"petstore/auth"
)

// TestStoresAgree replays one random sequence of requests, subjects and clock jumps (across
// minutes, days, rejections and suspensions) against both stores and compares every decision.
func TestStoresAgree(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	mem := NewMemoryStore(clock.Now)
	red := NewRedisStore(testRedis(t), testPrefix(t))
	red.clock = clock.Now
	subjects := []Subject{KeySubject(1), KeySubject(2), AddrSubject(netip.MustParseAddr("2001:db8::1"))}
	p := Policy{PerMinute: 4, PerDay: 9, Suspension: Suspension{
		After: 3, Window: 30 * time.Second, Base: 2 * time.Minute, Max: 5 * time.Minute, Memory: 10 * time.Minute,
	}}
	rng := rand.New(rand.NewPCG(1, 2))
	ctx := context.Background()
	seen := map[Outcome]int{}
	for i := range 600 {
		clock.Advance(randomStep(rng))
		s := subjects[rng.IntN(len(subjects))]
		want, _ := mem.Take(ctx, s, p)
		got, err := red.Take(ctx, s, p)
		if err != nil {
			t.Fatalf("step %d: redis: %v", i, err)
		}
		if got != want {
			t.Fatalf("step %d (%v at %v):\nredis  %+v\nmemory %+v", i, s, clock.Now(), got, want)
		}
		seen[got.Outcome]++
	}
	for _, o := range []Outcome{Allowed, Limited, Suspended} {
		if seen[o] < 20 {
			t.Errorf("outcome %v: got %d decisions; want at least 20 for the comparison to mean much", o, seen[o])
		}
	}
	t.Logf("outcomes: %v, final clock %v", seen, clock.Now())
}

// randomStep returns mostly short clock steps, sometimes minutes, rarely hours.
func randomStep(rng *rand.Rand) time.Duration {
	switch n := rng.IntN(100); {
	case n < 80:
		return time.Duration(rng.IntN(3000)) * time.Millisecond
	case n < 97:
		return time.Duration(rng.IntN(200)) * time.Second
	default:
		return time.Duration(rng.IntN(30)) * time.Hour
	}
}

// TestRedisTwoInstances runs two limiters, each with its own client, as two instances of the
// service would, on Redis TIME: a limit of 40 admits exactly 40 across both.
func TestRedisTwoInstances(t *testing.T) {
	t.Parallel()
	prefix := testPrefix(t)
	plans := map[int64]auth.Plan{7: {Name: "enterprise", PerMinute: 40, PerDay: 1000}}
	var routers []http.Handler
	for range 2 {
		c := redis.NewClient(testRedisOptions(t))
		t.Cleanup(func() { _ = c.Close() })
		routers = append(routers, newRouter(t, newLimiter(t, testConfig(), NewRedisStore(c, prefix)), plans))
	}
	awayFromEdge(t, time.Minute, 3*time.Second)
	codes := hammer(120, func(i int) (http.Handler, req) { return routers[i%2], req{key: 7} })
	if codes[http.StatusOK] != 40 || codes[http.StatusTooManyRequests] != 80 {
		t.Errorf("statuses: got %v; want 40×200 and 80×429", codes)
	}
}
