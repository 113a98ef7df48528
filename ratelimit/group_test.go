package ratelimit

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strconv"
	"testing"
	"time"
)

// The grouping tests queue Takes while the gate (gate_test.go) holds the pipelines in flight, so
// that the queued ones leave together, in one pipeline, in a known order. A MemoryCounters taking
// the same requests one by one, in queue order, at the same clock readings, says what each one
// must be told and what state must be left.

// TestRedisBatchIsSequential sends a batch of Takes of one subject and one policy: one script
// call decides them all, as sequential calls would, whatever the batch straddles.
func TestRedisBatchIsSequential(t *testing.T) {
	susp := Suspension{After: 5, Window: 30 * time.Second, Base: 2 * time.Minute, Max: 5 * time.Minute, Memory: 10 * time.Minute}
	tests := []struct {
		name   string
		p      Policy
		before int           // Takes sent one by one first,
		wait   time.Duration // then the clock advances by wait,
		want   []Outcome     // and the batch gets these outcomes
	}{
		{"within the limit", Policy{PerMinute: 60, PerDay: 1000, Suspension: susp}, 0, 0,
			outcomes(20, Allowed)},
		{"straddles the limit and suspends", Policy{PerMinute: 10, PerDay: 1000, Suspension: susp}, 0, 0,
			outcomes(10, Allowed, 4, Limited, 11, Suspended)},
		{"limited, short of a suspension", Policy{PerMinute: 10, PerDay: 1000, Suspension: susp}, 0, 0,
			outcomes(10, Allowed, 3, Limited)},
		{"suspends again, twice as long", Policy{PerMinute: 10, PerDay: 1000, Suspension: susp}, 15, susp.Base,
			outcomes(10, Allowed, 4, Limited, 11, Suspended)},
		{"the day window binds", Policy{PerMinute: 10, PerDay: 14, Suspension: susp}, 10, time.Minute,
			outcomes(4, Allowed, 4, Limited, 2, Suspended)},
		{"without suspensions", Policy{PerMinute: 10, PerDay: 1000}, 0, 0,
			outcomes(10, Allowed, 15, Limited)},
		{"while suspended", Policy{PerMinute: 10, PerDay: 1000, Suspension: susp}, 15, time.Minute,
			outcomes(10, Suspended)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, g, sizes := gatedStore(t)
			clock := newFakeClock()
			s.clock = clock.Now
			mem := NewMemoryCounters(clock.Now)
			subj, ctx := KeySubject(1), context.Background()
			for i := range tt.before {
				got, err := s.Take(ctx, subj, tt.p, 1)
				if want, _ := mem.Take(ctx, subj, tt.p, 1); err != nil || got != want {
					t.Fatalf("Take %d before: got %+v, %v; want %+v", i, got, err, want)
				}
			}
			clock.Advance(tt.wait)
			sizes.reset()
			g.shut()
			filler := fillPipelines(t, s, g, KeySubject(2), tt.p)
			results := queueTakes(t, ctx, s, subj, tt.p, len(tt.want))
			g.open()
			for i, r := range results {
				got := <-r
				want, _ := mem.Take(ctx, subj, tt.p, 1)
				if got.err != nil || got.d != want || got.d.Outcome != tt.want[i] {
					t.Errorf("Take %d of the batch (want %v):\ngot  %+v, %v\nwant %+v", i, tt.want[i], got.d, got.err, want)
				}
			}
			sameState(t, s, mem, subj)
			for _, r := range filler {
				if err := (<-r).err; err != nil {
					t.Errorf("Take: %v", err)
				}
			}
			// The fillers' pipelines, of one call each, and the batch's: one script call each.
			wantCalls, wantScripts := []int{}, []int{}
			for range maxPipelines {
				wantCalls, wantScripts = append(wantCalls, 1), append(wantScripts, 1)
			}
			wantCalls, wantScripts = append(wantCalls, len(tt.want)), append(wantScripts, 1)
			if got := slices.Sorted(slices.Values(sizes.all())); !slices.Equal(got, wantCalls) {
				t.Errorf("pipelines: got %v calls; want %v", got, wantCalls)
			}
			if got := sizes.allScripts(); !slices.Equal(got, wantScripts) {
				t.Errorf("pipelines: got %v script calls; want one each", got)
			}
		})
	}
}

// TestRedisBatchStraddlesLimit spells out the decisions of 25 Takes in one script call with a
// limit of 10 and suspensions after 5 rejections: the first 10 are admitted in queue order, the
// next 4 are told to wait for the minute's end, and the 15th starts the suspension.
func TestRedisBatchStraddlesLimit(t *testing.T) {
	t.Parallel()
	s, g, _ := gatedStore(t)
	p := Policy{PerMinute: 10, PerDay: 1000, Suspension: Suspension{
		After: 5, Window: 30 * time.Second, Base: 2 * time.Minute, Max: 5 * time.Minute, Memory: 10 * time.Minute,
	}}
	ctx := context.Background()
	g.shut()
	filler := fillPipelines(t, s, g, KeySubject(2), p)
	results := queueTakes(t, ctx, s, KeySubject(1), p, 25)
	g.open()
	for i, r := range results {
		res := <-r
		d := res.d
		switch {
		case res.err != nil:
			t.Errorf("Take %d: %v", i, res.err)
		case i < 10 && (d.Outcome != Allowed || d.Minute.Used != int64(i+1) || !d.RetryAt.IsZero()):
			t.Errorf("Take %d: got %v, Used %d, RetryAt %v; want allowed, Used %d", i, d.Outcome, d.Minute.Used, d.RetryAt, i+1)
		case i >= 10 && i < 14 && (d.Outcome != Limited || d.Minute.Remaining() != 0 || !d.RetryAt.Equal(minuteEnd)):
			t.Errorf("Take %d: got %v, Remaining %d, RetryAt %v; want limited, 0, %v", i, d.Outcome, d.Minute.Remaining(), d.RetryAt, minuteEnd)
		case i >= 14 && (d.Outcome != Suspended || !d.RetryAt.Equal(start.Add(2*time.Minute))):
			t.Errorf("Take %d: got %v, RetryAt %v; want suspended until %v", i, d.Outcome, d.RetryAt, start.Add(2*time.Minute))
		}
	}
	for _, r := range filler {
		<-r
	}
}

// TestRedisBatchMixesSubjects sends one pipeline of interleaved Takes of two keys and an address,
// at two clock readings a minute apart, one of them canceled while queued: one script call per
// subject and reading, every Take decided in queue order, and the canceled one left out.
func TestRedisBatchMixesSubjects(t *testing.T) {
	t.Parallel()
	s, g, sizes := gatedStore(t)
	clock := newFakeClock()
	s.clock = clock.Now
	memClock := newFakeClock()
	mem := NewMemoryCounters(memClock.Now)
	keyP := Policy{PerMinute: 3, PerDay: 1000, Suspension: Suspension{After: 2, Window: time.Minute, Base: time.Minute, Max: time.Hour, Memory: time.Hour}}
	addrP := Policy{PerMinute: 2, PerDay: 10}
	a, b, c := KeySubject(1), KeySubject(2), AddrSubject(netip.MustParseAddr("203.0.113.9"))
	type step struct {
		subj     Subject
		p        Policy
		canceled bool
		advance  time.Duration // before the step
	}
	steps := []step{
		{subj: a, p: keyP}, {subj: b, p: keyP}, {subj: c, p: addrP}, {subj: a, p: keyP},
		{subj: a, p: keyP, canceled: true}, {subj: c, p: addrP}, {subj: a, p: keyP}, {subj: c, p: addrP},
		{subj: a, p: keyP}, {subj: b, p: keyP}, {subj: a, p: keyP}, {subj: a, p: keyP},
		{subj: a, p: keyP, advance: time.Minute}, {subj: b, p: keyP}, {subj: a, p: keyP}, {subj: c, p: addrP},
	}
	const wantScripts = 6 // a, b and c at each reading
	ctx := context.Background()
	g.shut()
	filler := fillPipelines(t, s, g, KeySubject(3), keyP)
	sizes.reset() // the fillers' pipelines end after the gate opens: they are recorded
	var results []<-chan takeResult
	for i, st := range steps {
		clock.Advance(st.advance)
		callCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		results = append(results, queueTakes(t, callCtx, s, st.subj, st.p, 1)...)
		if st.canceled {
			cancel()
			if res := <-results[i]; !errors.Is(res.err, context.Canceled) {
				t.Errorf("canceled Take %d: got %v; want context.Canceled", i, res.err)
			}
		}
	}
	g.open()
	for i, st := range steps {
		memClock.Advance(st.advance)
		if st.canceled {
			continue
		}
		got := <-results[i]
		if want, _ := mem.Take(ctx, st.subj, st.p, 1); got.err != nil || got.d != want {
			t.Errorf("Take %d (%v):\ngot  %+v, %v\nwant %+v", i, st.subj, got.d, got.err, want)
		}
	}
	for _, subj := range []Subject{a, b, c} {
		sameState(t, s, mem, subj)
	}
	for _, r := range filler {
		<-r
	}
	calls, scripts := sizes.all(), sizes.allScripts()
	if i := slices.Index(calls, len(steps)-1); i < 0 || scripts[i] != wantScripts || len(calls) != maxPipelines+1 {
		t.Errorf("pipelines: got %v calls, %v script calls; want one of %d calls in %d script calls, and %d of one",
			calls, scripts, len(steps)-1, wantScripts, maxPipelines)
	}
}

// outcomes returns runs of outcomes: outcomes(2, Allowed, 1, Limited) is allowed, allowed, limited.
func outcomes(runs ...any) []Outcome {
	var out []Outcome
	for i := 0; i < len(runs); i += 2 {
		for range runs[i].(int) {
			out = append(out, runs[i+1].(Outcome))
		}
	}
	return out
}

// queueTakes starts n Takes of subj, each once the one before is queued, so that they queue in
// that order, and returns their results in that order. Pipelines must be in flight at a shut
// gate.
func queueTakes(t *testing.T, ctx context.Context, s *RedisCounters, subj Subject, p Policy, n int) []<-chan takeResult {
	t.Helper()
	var results []<-chan takeResult
	for range n {
		want := s.queued() + 1
		results = append(results, takeAsync(ctx, s, subj, p))
		eventually(t, "one more call queued", func() bool { return s.queued() == want })
	}
	return results
}

// sameState compares the hash of subj in s, and its expiry, with the state mem keeps of subj.
func sameState(t *testing.T, s *RedisCounters, mem *MemoryCounters, subj Subject) {
	t.Helper()
	sh := &mem.shards[subj.hash()&(shardCount-1)]
	sh.mu.Lock()
	var want entry
	if e := sh.subjects[subj]; e != nil {
		want = *e
	}
	sh.mu.Unlock()
	ctx, key := context.Background(), s.key(subj)
	h, err := s.client.HGetAll(ctx, key).Result()
	if err != nil {
		t.Fatalf("HGETALL %s: %v", key, err)
	}
	field := func(name string) int64 {
		v, ok := h[name]
		if !ok {
			return 0
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Errorf("HGETALL %s: field %s: %v", key, name, err)
		}
		return n
	}
	got := state{field("mw"), field("mc"), field("dw"), field("dc"), field("rs"), field("rc"), field("su"), field("sl")}
	if got != want.state {
		t.Errorf("state of %v: got %+v; want %+v", subj, got, want.state)
	}
	exp, err := s.client.PExpireTime(ctx, key).Result()
	wantExp := time.Duration(want.expires) * time.Millisecond
	if want.expires == 0 {
		wantExp = -2 // nothing ever changed: no hash
	}
	if err != nil || exp != wantExp {
		t.Errorf("PEXPIRETIME %s: got %v, %v; want %v", key, exp, err, wantExp)
	}
}
