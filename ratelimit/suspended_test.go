package ratelimit

import (
	"context"
	"sync/atomic"
	"testing"
)

// suspendKeys takes requests of each key of ids until it is suspended: one admitted, then
// cfg.SuspendAfter rejections.
func suspendKeys(t *testing.T, s Counters, cfg Config, ids ...int64) {
	t.Helper()
	p := Policy{PerMinute: 1, PerDay: 100, Suspension: cfg.suspension()}
	for _, id := range ids {
		var d Decision
		for range cfg.SuspendAfter + 1 {
			var err error
			if d, err = s.Take(context.Background(), KeySubject(id), p, 1); err != nil {
				t.Fatal(err)
			}
		}
		if d.Outcome != Suspended {
			t.Fatalf("key %d: %v after %d requests; want suspended", id, d.Outcome, cfg.SuspendAfter+1)
		}
	}
}

// TestSuspendedKeys: Limiter.Suspended names exactly the suspended keys of 2,500, charges
// none of the others, and in Redis asks in pipelines of 1,000 keys: three round trips.
func TestSuspendedKeys(t *testing.T) {
	forEachStore(t, func(t *testing.T, _ *fakeClock, s Counters) {
		var pipelines, calls atomic.Int64
		if rs, ok := s.(*RedisCounters); ok {
			rs.onPipeline = func(c, _ int) { pipelines.Add(1); calls.Add(int64(c)) }
		}
		cfg := DefaultConfig()
		l, err := New(cfg, s)
		if err != nil {
			t.Fatal(err)
		}
		suspendKeys(t, s, cfg, 7, 1500, 2500)
		pipelines.Store(0)
		calls.Store(0)
		ids := make([]int64, 2500)
		for i := range ids {
			ids[i] = int64(i + 1)
		}
		got, err := l.Suspended(context.Background(), ids)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || !got[7] || !got[1500] || !got[2500] {
			t.Fatalf("suspended: %v; want 7, 1500 and 2500", got)
		}
		if _, ok := s.(*RedisCounters); ok && (pipelines.Load() != 3 || calls.Load() != 2500) {
			t.Errorf("%d pipelines of %d checks in all; want 3 of 2500", pipelines.Load(), calls.Load())
		}
		d, err := s.Take(context.Background(), KeySubject(8), Policy{PerMinute: 1, PerDay: 1, Suspension: cfg.suspension()}, 1)
		if err != nil || d.Outcome != Allowed {
			t.Fatalf("key 8 after the check: %v %v; want its one request admitted (the check charged nothing)", d.Outcome, err)
		}
	})
}

// BenchmarkSuspended is the check of 2,000 keys in Redis, as the subscriptions' recheck asks it
// every 2 s: wall time, round trips (pipelines) and CPU time of this process and of
// redis-server per check of all of them.
func BenchmarkSuspended(b *testing.B) {
	rdb := testRedis(b)
	s := NewRedisCounters(rdb, testPrefix(b), nil)
	var pipelines atomic.Int64
	s.onPipeline = func(int, int) { pipelines.Add(1) }
	l, err := New(DefaultConfig(), s)
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]int64, 2000)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	pipelines.Store(0)
	defer reportCPU(b, rdb)()
	for range b.N {
		if _, err := l.Suspended(context.Background(), ids); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(pipelines.Load())/float64(b.N), "round-trips/op")
}
