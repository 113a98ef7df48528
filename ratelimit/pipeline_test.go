package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"maps"
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
// while every pipeline is in flight: the queued ones leave in batches of at most maxBatch, each
// decided by one script call, and exactly 40 are admitted.
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
	for i, scripts := range sizes.allScripts() {
		if scripts != 1 {
			t.Errorf("pipeline %d: got %d script calls; want 1", i, scripts)
		}
	}
}

// TestRedisPipelineErrorsStayPerCall puts in one batch three calls of a subject whose key is not
// a hash, among calls of other subjects: its script call fails, and only its three callers get
// the error.
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
	type result struct {
		subj Subject
		r    <-chan takeResult
	}
	var results []result
	for _, id := range []int64{10, 13, 11, 12, 13, 14, 15, 16, 17, 13, 18, 19} {
		subj := KeySubject(id)
		results = append(results, result{subj, takeAsync(ctx, s, subj, keyPolicy)})
	}
	eventually(t, "the batch queued", func() bool { return s.queued() == len(results) })
	g.open()
	for _, r := range results {
		err := (<-r.r).err
		if r.subj == bad && (err == nil || !strings.Contains(err.Error(), "WRONGTYPE")) {
			t.Errorf("Take %v: got %v; want a WRONGTYPE error", r.subj, err)
		}
		if r.subj != bad && err != nil {
			t.Errorf("Take %v: %v", r.subj, err)
		}
	}
	for _, r := range filler {
		if err := (<-r).err; err != nil {
			t.Errorf("Take: %v", err)
		}
	}
	calls, scripts := sizes.all(), sizes.allScripts()
	if i := slices.Index(calls, len(results)); i < 0 || scripts[i] != 10 {
		t.Errorf("pipelines %v of %v script calls: want one of %d calls in 10 script calls", calls, scripts, len(results))
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
	d, err := s.Take(context.Background(), subj, keyPolicy, 1)
	if want := int64(maxPipelines + 2); err != nil || d.Minute.Used != want {
		t.Errorf("last Take: got Used %d, %v; want %d (every call sent, but the canceled queued one)",
			d.Minute.Used, err, want)
	}
}

// TestRedisScriptReloadedInBatch sends a batch of EVALSHA calls of a script Redis has never
// seen, which is what a SCRIPT FLUSH between two pipelines makes of the next one (the shared
// test server is never flushed): the script call of each of its two subjects is answered
// NOSCRIPT, run again with EVAL, and decides its Takes exactly once.
func TestRedisScriptReloadedInBatch(t *testing.T) {
	t.Parallel()
	s, g, sizes := gatedStore(t)
	p := Policy{PerMinute: 10, PerDay: 1000}
	const n = 28 // queued, 14 per subject
	g.shut()
	filler := fillPipelines(t, s, g, KeySubject(3), p)
	var results []<-chan takeResult
	for i := range n {
		results = append(results, takeAsync(context.Background(), s, KeySubject(int64(1+i%2)), p))
	}
	eventually(t, "the rest queued", func() bool { return s.queued() == n })
	// Every sender waits at the gate, past its reading of s.script; the next reading comes
	// after g.open.
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce)
	s.script = redis.NewScript(takeSource + "\n-- " + hex.EncodeToString(nonce))
	sizes.reset()
	g.open()
	got := map[Outcome]int{}
	for _, r := range append(results, filler...) {
		res := <-r
		if res.err != nil {
			t.Errorf("Take: %v", res.err)
		}
		got[res.d.Outcome]++
	}
	if want := map[Outcome]int{Allowed: 2*10 + maxPipelines, Limited: 2 * 4}; !maps.Equal(got, want) {
		t.Errorf("outcomes: got %v; want %v", got, want)
	}
	// The pipelines in flight, of one call each, end; the queued batch, two script calls, is
	// sent twice: as EVALSHA, answered NOSCRIPT, then as EVAL.
	wantCalls, wantScripts := []int{n, n}, []int{2, 2}
	for range maxPipelines {
		wantCalls, wantScripts = append(wantCalls, 1), append(wantScripts, 1)
	}
	if got := slices.Sorted(slices.Values(sizes.all())); !slices.Equal(got, slices.Sorted(slices.Values(wantCalls))) {
		t.Errorf("pipelines: got sizes %v; want %v", got, wantCalls)
	}
	if got := slices.Sorted(slices.Values(sizes.allScripts())); !slices.Equal(got, slices.Sorted(slices.Values(wantScripts))) {
		t.Errorf("pipelines: got %v script calls; want %v", got, wantScripts)
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
			s := NewRedisCounters(c, "test:unreachable:", nil)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			for i := range 100 {
				wg.Go(func() {
					_, err := s.Take(ctx, KeySubject(int64(i%7+1)), keyPolicy, 1)
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
