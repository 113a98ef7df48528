package store

import (
	"context"
	"testing"
	"time"
)

// TestSettlerTimeRule checks which ids the time rule lets a cursor pass: an id is settled once
// a higher or equal one was seen committed at least the delay before; observations close
// together are merged into the later one, which settles their ids no sooner than each would
// have.
func TestSettlerTimeRule(t *testing.T) {
	const delay = 100 * time.Millisecond
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &Settler{delay: delay}
	s.observe(t0, 50)
	if got := s.settledAt(t0.Add(delay - 1)); got != 0 {
		t.Errorf("just before the delay: settled %d; want 0", got)
	}
	if got := s.settledAt(t0.Add(delay)); got != 50 {
		t.Errorf("after the delay: settled %d; want 50", got)
	}
	s.observe(t0.Add(delay), 40) // lower than settled: changes nothing
	s.observe(t0.Add(2*delay), 80)
	s.observe(t0.Add(2*delay+delay/16), 90) // merged: 80 now settles with 90
	s.observe(t0.Add(3*delay), 70)          // lower than one seen earlier: changes nothing
	if got := s.settledAt(t0.Add(3*delay + delay/32)); got != 50 {
		t.Errorf("80 merged into 90 seen later: settled %d; want 50", got)
	}
	if got := s.settledAt(t0.Add(3*delay + delay/16)); got != 90 {
		t.Errorf("after 90's delay: settled %d; want 90", got)
	}
	if len(s.seen) != 0 {
		t.Errorf("observations kept after they settled: %v", s.seen)
	}
	for i := range 1000 { // a page a millisecond, as list does it: only a handful kept
		at := t0.Add(4*delay + time.Duration(i)*time.Millisecond)
		s.observe(at, int64(100+i))
		s.settledAt(at)
	}
	if len(s.seen) > 10 {
		t.Errorf("%d observations kept for one delay; want about 9", len(s.seen))
	}
	// A steady stream of observations settles ids, at most delay+delay/8 after they were seen.
	if got, want := s.settledAt(t0.Add(4*delay+time.Second)), int64(100+1000-delay/time.Millisecond-delay/8/time.Millisecond); got < want {
		t.Errorf("a steady stream: settled %d; want at least %d", got, want)
	}
}

// TestSettlerGaplessRule checks the gapless rule: ids found without a hole after the settled
// one are settled at once, the ids past a hole only by the time rule, and reads that start
// above the settled id settle nothing by themselves.
func TestSettlerGaplessRule(t *testing.T) {
	const delay = 100 * time.Millisecond
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &Settler{delay: delay, gapless: true}
	if got := s.found(t0, 0, []int64{1, 2, 3}); got != 3 {
		t.Errorf("1 2 3 from 0: settled %d; want 3", got)
	}
	if got := s.found(t0, 2, []int64{3, 4, 6, 7}); got != 4 {
		t.Errorf("3 4 6 7 from 2 (a hole at 5): settled %d; want 4", got)
	}
	if got := s.found(t0, 10, []int64{11, 12}); got != 4 {
		t.Errorf("11 12 from 10, above the settled 4: settled %d; want 4", got)
	}
	if got := s.settledAt(t0.Add(delay)); got != 12 {
		t.Errorf("a delay after 12 was seen: settled %d; want 12 (the hole at 5 and 8 to 10 by time)", got)
	}
	if got := (&Settler{delay: delay}).found(t0, 0, []int64{1, 2}); got != 0 {
		t.Errorf("not gapless (Galera): 1 2 from 0 settled %d at once; want 0", got)
	}
	for _, tt := range []struct {
		base, upTo int64
		ids        []int64
		want       bool
	}{
		{0, 3, []int64{1, 2, 3}, true},
		{1, 3, []int64{1, 2, 3}, true},
		{0, 3, []int64{1, 3}, false},
		{1, 3, []int64{2, 3, 4}, true},
		{2, 5, []int64{3, 4}, false},
		{5, 5, nil, true},
	} {
		if got := gapless(tt.base, tt.upTo, tt.ids); got != tt.want {
			t.Errorf("gapless(%d, %d, %v) = %v; want %v", tt.base, tt.upTo, tt.ids, got, tt.want)
		}
	}
}

// TestSettlerPause checks that Pause waits the delay under the time rule, briefly under the
// gapless rule, and ends with the context.
func TestSettlerPause(t *testing.T) {
	s := &Settler{delay: 200 * time.Millisecond}
	start := time.Now()
	if err := s.Pause(context.Background(), 0); err != nil || time.Since(start) < s.delay {
		t.Errorf("Pause (time rule): %v after %v; want nil after %v", err, time.Since(start), s.delay)
	}
	s.gapless = true
	start = time.Now()
	if err := s.Pause(context.Background(), 0); err != nil || time.Since(start) >= s.delay/2 {
		t.Errorf("Pause (gapless, first attempt): %v after %v; want nil well within %v", err, time.Since(start), s.delay)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Pause(ctx, 10); err == nil {
		t.Error("Pause with a context done: got nil; want its error")
	}
}
