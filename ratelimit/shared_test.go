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

// TestStoresAgree replays one random sequence of requests (Takes of 1 to 3 units and, one in
// four, Checks), subjects and clock jumps (across minutes, days, rejections and suspensions)
// against both stores and compares every decision.
func TestStoresAgree(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	mem := NewMemoryCounters(clock.Now)
	red := NewRedisCounters(testRedis(t), testPrefix(t), nil)
	red.clock = clock.Now
	subjects := []Subject{KeySubject(1), KeySubject(2), AddrSubject(netip.MustParseAddr("2001:db8::1"))}
	p := Policy{PerMinute: 4, PerDay: 9, Suspension: Suspension{
		After: 3, Window: 30 * time.Second, Base: 2 * time.Minute, Max: 5 * time.Minute, Memory: 10 * time.Minute,
	}}
	rng := rand.New(rand.NewPCG(1, 2))
	costs := rand.New(rand.NewPCG(7, 8)) // apart from rng, which draws the sequence
	ctx := context.Background()
	seen := map[Outcome]int{}
	for i := range 600 {
		clock.Advance(randomStep(rng))
		s, n := subjects[rng.IntN(len(subjects))], int64(1+costs.IntN(3))
		memDecide, redDecide := mem.Take, red.Take
		if rng.IntN(4) == 0 {
			memDecide, redDecide = checkOnly(mem.Check), checkOnly(red.Check)
		}
		want, _ := memDecide(ctx, s, p, n)
		got, err := redDecide(ctx, s, p, n)
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

// checkOnly returns check as a Take, the cost left out: a Check asks for one unit.
func checkOnly(check func(context.Context, Subject, Policy) (Decision, error)) func(context.Context, Subject, Policy, int64) (Decision, error) {
	return func(ctx context.Context, s Subject, p Policy, _ int64) (Decision, error) { return check(ctx, s, p) }
}

// TestScriptBatchesAgree replays a random sequence of batches (1 to 8 requests of one subject at
// one clock reading, Takes of 1 to 3 units each or, one batch in four, Checks, across minutes,
// days, rejections and suspensions) through take.lua with its count and cost, and compares
// every decision, and the state left after every batch, with a MemoryCounters taking (or
// checking) the same requests one by one.
func TestScriptBatchesAgree(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	mem := NewMemoryCounters(clock.Now)
	red := NewRedisCounters(testRedis(t), testPrefix(t), nil)
	subjects := []Subject{KeySubject(1), KeySubject(2), AddrSubject(netip.MustParseAddr("2001:db8::1"))}
	p := Policy{PerMinute: 4, PerDay: 9, Suspension: Suspension{
		After: 3, Window: 30 * time.Second, Base: 2 * time.Minute, Max: 5 * time.Minute,
		Memory: 20 * time.Hour, // long enough to set the hashes' expiry, and to reach the top level
	}}
	r := rulesOf(p, 1)
	rng := rand.New(rand.NewPCG(3, 4))
	checks := rand.New(rand.NewPCG(5, 6)) // apart from rng, which draws the sequence
	ctx := context.Background()
	seen := map[Outcome]int{}
	for i := range 300 {
		clock.Advance(randomStep(rng))
		s, n, cost := subjects[rng.IntN(len(subjects))], 1+rng.IntN(8), int64(1+checks.IntN(3))
		argv := []any{r.perMinute, r.perDay, r.after, r.window, r.base, r.ceiling, r.memory, clock.Now().UnixMilli()}
		expireBy(t, red, mem, s, clock.Now())
		memDecide := mem.Take
		switch {
		case checks.IntN(4) == 0:
			argv, memDecide = append(argv, n, 1), checkOnly(mem.Check)
		case cost > 1:
			argv = append(argv, n, 0, cost)
		case n > 1:
			argv = append(argv, n) // a single decision, a Take of one unit, is the default
		}
		reply, err := red.script.Run(ctx, red.client, []string{red.key(s)}, argv...).Int64Slice()
		if err != nil || len(reply) != 5*n {
			t.Fatalf("step %d: script: got %v, %v; want %d integers", i, reply, err, 5*n)
		}
		for k := range n {
			res, err := parseReply(reply[5*k : 5*k+5])
			if err != nil {
				t.Fatalf("step %d, decision %d: %v", i, k, err)
			}
			want, _ := memDecide(ctx, s, p, cost)
			if got := decision(p, res); got != want {
				t.Fatalf("step %d, decision %d of %d (%v at %v):\nredis  %+v\nmemory %+v", i, k, n, s, clock.Now(), got, want)
			}
			seen[res.outcome]++
		}
		sameState(t, red, mem, s)
	}
	for _, o := range []Outcome{Allowed, Limited, Suspended} {
		if seen[o] < 50 {
			t.Errorf("outcome %v: got %d decisions; want at least 50 for the comparison to mean much", o, seen[o])
		}
	}
	t.Logf("outcomes: %v, final clock %v", seen, clock.Now())
}

// expireBy drops the state of subj from both stores when it has expired by now: Redis, whose
// expiry the fake clock does not drive, would have deleted the hash at that time, and
// MemoryCounters's sweep drops it lazily. Expired state decides nothing, but its fields would
// differ between the stores once one of them has dropped it.
func expireBy(t *testing.T, s *RedisCounters, mem *MemoryCounters, subj Subject, now time.Time) {
	t.Helper()
	ctx, key := context.Background(), s.key(subj)
	exp, err := s.client.PExpireTime(ctx, key).Result()
	if err != nil {
		t.Fatalf("PEXPIRETIME %s: %v", key, err)
	}
	if exp > 0 && exp <= time.Duration(now.UnixMilli())*time.Millisecond {
		if err := s.client.Del(ctx, key).Err(); err != nil {
			t.Fatalf("DEL %s: %v", key, err)
		}
	}
	sh := &mem.shards[subj.hash()&(shardCount-1)]
	sh.mu.Lock()
	if e := sh.subjects[subj]; e != nil && e.expires <= now.UnixMilli() {
		delete(sh.subjects, subj)
	}
	sh.mu.Unlock()
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
		routers = append(routers, newRouter(t, newLimiter(t, testConfig(), NewRedisCounters(c, prefix, nil)), plans))
	}
	awayFromEdge(t, time.Minute, 3*time.Second)
	codes := hammer(120, func(i int) (http.Handler, req) { return routers[i%2], req{key: 7} })
	if codes[http.StatusOK] != 40 || codes[http.StatusTooManyRequests] != 80 {
		t.Errorf("statuses: got %v; want 40×200 and 80×429", codes)
	}
}
