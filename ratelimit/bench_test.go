package ratelimit

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"petstore/auth"
	"petstore/testkit/dbtest"
)

// benchPolicy never rejects, so every benchmarked decision takes the admit-and-charge path.
var benchPolicy = Policy{PerMinute: 1 << 40, PerDay: 1 << 40, Suspension: DefaultConfig().suspension()}

// BenchmarkMemoryTake is the in-process decision for 1,024 keys.
func BenchmarkMemoryTake(b *testing.B) {
	s, ctx := NewMemoryCounters(nil), context.Background()
	b.ReportAllocs()
	var i int64
	for b.Loop() {
		_, _ = s.Take(ctx, KeySubject(i&1023+1), benchPolicy, 1)
		i++
	}
}

// BenchmarkMemoryTakeAddr is the in-process decision for one client address.
func BenchmarkMemoryTakeAddr(b *testing.B) {
	s, ctx := NewMemoryCounters(nil), context.Background()
	subj := AddrSubject(netip.MustParseAddr("2001:db8::1"))
	b.ReportAllocs()
	for b.Loop() {
		_, _ = s.Take(ctx, subj, benchPolicy, 1)
	}
}

// BenchmarkRedisTake is the Redis decision: one script call, one round trip.
func BenchmarkRedisTake(b *testing.B) {
	s, ctx := NewRedisCounters(testRedis(b), testPrefix(b), nil), context.Background()
	b.ReportAllocs()
	var i int64
	for b.Loop() {
		if _, err := s.Take(ctx, KeySubject(i&1023+1), benchPolicy, 1); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkTakeParallel is the decision on each store from 2 and from 64 goroutines at once (the
// service serves 64 connections), either all on one key (one busy API key, as in the service's
// benchmark) or each goroutine on a key of its own (no two concurrent decisions share a
// subject). Besides wall time per decision it reports the CPU time per decision of this process
// (cpu-ns/op) and, for Redis, of redis-server (redis-cpu-ns/op): on a shared machine they are
// steadier than wall time. For Redis it also reports how many Takes a pipeline decided on
// average (calls/pipeline), and a script call (calls/script).
func BenchmarkTakeParallel(b *testing.B) {
	for _, name := range []string{"memory", "redis"} {
		for _, goroutines := range []int{2, 64} {
			for _, keys := range []string{"one-key", "key-each"} {
				b.Run(fmt.Sprintf("%s/%d/%s", name, goroutines, keys), func(b *testing.B) {
					var s Counters = NewMemoryCounters(nil)
					var rdb *redis.Client
					var pipelines, calls, scripts atomic.Int64
					if name == "redis" {
						rdb = testRedis(b)
						rs := NewRedisCounters(rdb, testPrefix(b), nil)
						rs.onPipeline = func(c, s int) { pipelines.Add(1); calls.Add(int64(c)); scripts.Add(int64(s)) }
						defer func() {
							b.ReportMetric(float64(calls.Load())/float64(pipelines.Load()), "calls/pipeline")
							b.ReportMetric(float64(calls.Load())/float64(scripts.Load()), "calls/script")
						}()
						s = rs
					}
					b.SetParallelism(max(1, goroutines/runtime.GOMAXPROCS(0)))
					b.ReportAllocs()
					ctx := context.Background()
					var next atomic.Int64
					defer reportCPU(b, rdb)()
					b.RunParallel(func(pb *testing.PB) {
						subj := KeySubject(1)
						if keys == "key-each" {
							subj = KeySubject(next.Add(1))
						}
						for pb.Next() {
							if _, err := s.Take(ctx, subj, benchPolicy, 1); err != nil {
								b.Error(err)
								return
							}
						}
					})
				})
			}
		}
	}
}

// reportCPU starts measuring the CPU time of this process and, when rdb is not nil, of the
// Redis server; the function it returns reports both per operation.
func reportCPU(b *testing.B, rdb *redis.Client) func() {
	b.Helper()
	self, server := processCPU(b), dbtest.RedisCPU(b, rdb)
	b.ResetTimer()
	return func() {
		b.StopTimer()
		n := float64(b.N)
		b.ReportMetric(float64(processCPU(b)-self)/n, "cpu-ns/op")
		if rdb != nil {
			b.ReportMetric(float64(dbtest.RedisCPU(b, rdb)-server)/n, "redis-cpu-ns/op")
		}
	}
}

// processCPU returns the user and system CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkMiddleware serves a trivial handler through gin without the limiter and with it on
// each store, headers included.
func BenchmarkMiddleware(b *testing.B) {
	plan := auth.Plan{Name: "bench", PerMinute: 1 << 40, PerDay: 1 << 40}
	p := &auth.Principal{KeyID: 1, Plan: plan}
	stores := map[string]func() Counters{
		"memory": func() Counters { return NewMemoryCounters(nil) },
		"redis":  func() Counters { return NewRedisCounters(testRedis(b), testPrefix(b), nil) },
	}
	for _, name := range []string{"off", "memory", "redis"} {
		b.Run(name, func(b *testing.B) {
			handlers := []gin.HandlerFunc{}
			if name != "off" {
				lim, err := New(DefaultConfig(), stores[name]())
				if err != nil {
					b.Fatal(err)
				}
				handlers = append(handlers, lim.Middleware)
			}
			r := gin.New()
			r.GET("/v1/pets", append(handlers, func(c *gin.Context) { c.String(http.StatusOK, "[]") })...)
			req := httptest.NewRequest(http.MethodGet, "/v1/pets", nil)
			req = req.WithContext(auth.NewContext(req.Context(), p))
			b.ReportAllocs()
			for b.Loop() {
				r.ServeHTTP(httptest.NewRecorder(), req)
			}
		})
	}
}
