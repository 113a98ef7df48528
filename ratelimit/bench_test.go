package ratelimit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/gin-gonic/gin"

	"petstore/auth"
)

// benchPolicy never rejects, so every benchmarked decision takes the admit-and-charge path.
var benchPolicy = Policy{PerMinute: 1 << 40, PerDay: 1 << 40, Suspension: DefaultConfig().suspension()}

// BenchmarkMemoryTake is the in-process decision for 1,024 keys.
func BenchmarkMemoryTake(b *testing.B) {
	s, ctx := NewMemoryStore(nil), context.Background()
	b.ReportAllocs()
	var i int64
	for b.Loop() {
		_, _ = s.Take(ctx, KeySubject(i&1023+1), benchPolicy)
		i++
	}
}

// BenchmarkMemoryTakeAddr is the in-process decision for one client address.
func BenchmarkMemoryTakeAddr(b *testing.B) {
	s, ctx := NewMemoryStore(nil), context.Background()
	subj := AddrSubject(netip.MustParseAddr("2001:db8::1"))
	b.ReportAllocs()
	for b.Loop() {
		_, _ = s.Take(ctx, subj, benchPolicy)
	}
}

// BenchmarkMemoryTakeParallel is the in-process decision from every core, 1,024 keys.
func BenchmarkMemoryTakeParallel(b *testing.B) {
	s, ctx := NewMemoryStore(nil), context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var i int64
		for pb.Next() {
			_, _ = s.Take(ctx, KeySubject(i&1023+1), benchPolicy)
			i++
		}
	})
}

// BenchmarkRedisTake is the Redis decision: one script call, one round trip.
func BenchmarkRedisTake(b *testing.B) {
	s, ctx := NewRedisStore(testRedis(b), testPrefix(b)), context.Background()
	b.ReportAllocs()
	var i int64
	for b.Loop() {
		if _, err := s.Take(ctx, KeySubject(i&1023+1), benchPolicy); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkRedisTakeParallel is the Redis decision from every core.
func BenchmarkRedisTakeParallel(b *testing.B) {
	s, ctx := NewRedisStore(testRedis(b), testPrefix(b)), context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var i int64
		for pb.Next() {
			if _, err := s.Take(ctx, KeySubject(i&1023+1), benchPolicy); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

// BenchmarkMiddleware serves a trivial handler through gin without the limiter and with it on
// each store, headers included.
func BenchmarkMiddleware(b *testing.B) {
	plan := auth.Plan{Name: "bench", PerMinute: 1 << 40, PerDay: 1 << 40}
	p := &auth.Principal{KeyID: 1, Plan: plan}
	stores := map[string]func() Store{
		"memory": func() Store { return NewMemoryStore(nil) },
		"redis":  func() Store { return NewRedisStore(testRedis(b), testPrefix(b)) },
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
