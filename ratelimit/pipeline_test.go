package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The pipelining tests hold the replies at a gate (gate_test.go), so that they know which
// calls travel together.

// TestRedisPipelinedTakesAdmitExactlyLimit sends 200 Takes of one subject with a limit of 40
// while every pipeline is in flight: the queued ones leave in batches of at most maxBatch, and
// exactly 40 are admitted.
func TestRedisPipelinedTakesAdmitExactlyLimit(t *testing.T) {
	t.Parallel()
	s, g, sizes := gatedStore(t)
	p := Policy{PerMinute: 40, PerDay: 1000}
	const n = 200
	g.shut()
	results := fillPipelines(t, s, g, KeySubject(1), p)
	for range n - maxPipelines {
		results = append(results, takeAsync(context.Background(), s, KeySubject(1), p))
	}
	eventually(t, "the rest queued", func() bool { return s.queued() == n-maxPipelines })
	g.open()
	got := map[Outcome]int{}
	for _, r := range results {
		res := <-r
		if res.err != nil {
			t.Errorf("Take: %v", res.err)
		}
		got[res.d.Outcome]++
	}
	if got[Allowed] != 40 || got[Limited] != n-40 {
		t.Errorf("outcomes: got %v; want 40 allowed, %d limited", got, n-40)
	}
	if sum, biggest := sizes.stats(); sum != n || biggest != maxBatch {
		t.Errorf("pipelines %v: got %d calls, the biggest %d; want %d calls, the biggest %d",
			sizes.all(), sum, biggest, n, maxBatch)
	}
}

// TestRedisPipelineErrorsStayPerCall puts in one batch a call whose key is not a hash: its
// script fails, and only its caller gets the error.
func TestRedisPipelineErrorsStayPerCall(t *testing.T) {
	t.Parallel()
	s, g, sizes := gatedStore(t)
	ctx := context.Background()
	bad := KeySubject(13)
	if err := s.client.Set(ctx, s.key(bad), "not a hash", time.Minute).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	g.shut()
	filler := fillPipelines(t, s, g, KeySubject(1), keyPolicy)
	results := map[Subject]<-chan takeResult{}
	for id := range int64(10) {
		subj := KeySubject(10 + id)
		results[subj] = takeAsync(ctx, s, subj, keyPolicy)
	}
	eventually(t, "the batch queued", func() bool { return s.queued() == len(results) })
	g.open()
	for subj, r := range results {
		err := (<-r).err
		if subj == bad && (err == nil || !strings.Contains(err.Error(), "WRONGTYPE")) {
			t.Errorf("Take %v: got %v; want a WRONGTYPE error", subj, err)
		}
		if subj != bad && err != nil {
			t.Errorf("Take %v: %v", subj, err)
		}
	}
	for _, r := range filler {
		if err := (<-r).err; err != nil {
			t.Errorf("Take: %v", err)
		}
	}
	if _, biggest := sizes.stats(); biggest != len(results) {
		t.Errorf("pipelines %v: want one of %d calls", sizes.all(), len(results))
	}
}

// TestRedisTakeCanceled cancels a Take in flight and one in the queue: both return at once,
// though no reply can arrive, and the others get their decisions when the gate opens. The
// queued call whose Take has ended is not sent, so it charges nothing.
func TestRedisTakeCanceled(t *testing.T) {
	t.Parallel()
	s, g, sizes := gatedStore(t)
	subj := KeySubject(1)
	g.shut()
	sent, cancelSent := context.WithCancel(context.Background())
	defer cancelSent()
	canceled := []<-chan takeResult{inFlight(t, sent, s, g, subj, keyPolicy)}
	var others []<-chan takeResult
	for range maxPipelines - 1 {
		others = append(others, inFlight(t, context.Background(), s, g, subj, keyPolicy))
	}
	queued, cancelQueued := context.WithCancel(context.Background())
	defer cancelQueued()
	canceled = append(canceled, takeAsync(queued, s, subj, keyPolicy))
	eventually(t, "one call queued", func() bool { return s.queued() == 1 })
	others = append(others, takeAsync(context.Background(), s, subj, keyPolicy))
	eventually(t, "two calls queued", func() bool { return s.queued() == 2 })

	cancelSent()
	cancelQueued()
	for i, r := range canceled {
		select {
		case res := <-r:
			if !errors.Is(res.err, context.Canceled) || !strings.HasPrefix(res.err.Error(), "ratelimit: redis decision for {") {
				t.Errorf("canceled Take %d: got %v; want a wrapped context.Canceled", i, res.err)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("canceled Take %d: still waiting for its reply", i)
		}
	}
	g.open()
	for i, r := range others {
		if err := (<-r).err; err != nil {
			t.Errorf("Take %d: %v", i, err)
		}
	}
	// The canceled Take in flight returned at once; its pipeline may still be on its way.
	eventually(t, "every call sent", func() bool { sum, _ := sizes.stats(); return sum == maxPipelines+1 })
	d, err := s.Take(context.Background(), subj, keyPolicy)
	if want := int64(maxPipelines + 2); err != nil || d.Minute.Used != want {
		t.Errorf("last Take: got Used %d, %v; want %d (every call sent, but the canceled queued one)",
			d.Minute.Used, err, want)
	}
}

// TestRedisScriptReloadedInBatch sends a batch of EVALSHA calls of a script Redis has never
// seen, which is what a SCRIPT FLUSH between two pipelines makes of the next one (the shared
// test server is never flushed): every call is answered NOSCRIPT, run again with EVAL, and
// decided exactly once.
func TestRedisScriptReloadedInBatch(t *testing.T) {
	t.Parallel()
	s, g, sizes := gatedStore(t)
	p := Policy{PerMinute: 15, PerDay: 1000}
	const n = 30
	g.shut()
	results := fillPipelines(t, s, g, KeySubject(1), p)
	for range n - maxPipelines {
		results = append(results, takeAsync(context.Background(), s, KeySubject(1), p))
	}
	eventually(t, "the rest queued", func() bool { return s.queued() == n-maxPipelines })
	// Every sender waits at the gate, past its reading of s.script; the next reading comes
	// after g.open.
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce)
	s.script = redis.NewScript(takeSource + "\n-- " + hex.EncodeToString(nonce))
	sizes.reset()
	g.open()
	got := map[Outcome]int{}
	for _, r := range results {
		res := <-r
		if res.err != nil {
			t.Errorf("Take: %v", res.err)
		}
		got[res.d.Outcome]++
	}
	if got[Allowed] != 15 || got[Limited] != n-15 {
		t.Errorf("outcomes: got %v; want 15 allowed, %d limited", got, n-15)
	}
	// The pipelines in flight, of one call each, end; the queued batch is sent twice: as
	// EVALSHA, answered NOSCRIPT, then as EVAL.
	want := []int{n - maxPipelines, n - maxPipelines}
	for range maxPipelines {
		want = append(want, 1)
	}
	if got := slices.Sorted(slices.Values(sizes.all())); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("pipelines: got sizes %v; want %v", got, want)
	}
	ok, err := s.client.ScriptExists(context.Background(), s.script.Hash()).Result()
	if err != nil || !ok[0] {
		t.Errorf("SCRIPT EXISTS after: got %v, %v; want true", ok, err)
	}
}

// TestRedisUnreachable sends concurrent Takes to a closed client and to an address where
// nothing listens: every one gets an error, none hangs, and no goroutine stays behind once the
// client is closed.
func TestRedisUnreachable(t *testing.T) {
	refused := func(t *testing.T) *redis.Client {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		_ = ln.Close()
		return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1, DialTimeout: time.Second})
	}
	closed := func(t *testing.T) *redis.Client {
		c := redis.NewClient(testRedisOptions(t))
		_ = c.Close()
		return c
	}
	tests := []struct {
		name   string
		client func(t *testing.T) *redis.Client
	}{
		{"connection refused", refused},
		{"closed client", closed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			c := tt.client(t)
			s := NewRedisStore(c, "test:unreachable:")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			for i := range 100 {
				wg.Go(func() {
					_, err := s.Take(ctx, KeySubject(int64(i%7+1)), keyPolicy)
					if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "ratelimit: redis decision for {") {
						t.Errorf("Take: got %v; want the client's error, wrapped", err)
					}
				})
			}
			wg.Wait()
			eventually(t, "every sender gone", func() bool {
				s.mu.Lock()
				defer s.mu.Unlock()
				return s.running == 0 && len(s.queue) == 0
			})
			_ = c.Close()
			eventually(t, "as many goroutines as before", func() bool { return runtime.NumGoroutine() <= before })
		})
	}
}
