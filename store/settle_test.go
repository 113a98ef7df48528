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
	if got := s.markAt(t0.Add(delay - 1)).Settled; got != 0 {
		t.Errorf("just before the delay: settled %d; want 0", got)
	}
	if got := s.markAt(t0.Add(delay)).Settled; got != 50 {
		t.Errorf("after the delay: settled %d; want 50", got)
	}
	s.observe(t0.Add(delay), 40) // lower than settled: changes nothing
	s.observe(t0.Add(2*delay), 80)
	s.observe(t0.Add(2*delay+delay/16), 90) // merged: 80 now settles with 90
	s.observe(t0.Add(3*delay), 70)          // lower than one seen earlier: changes nothing
	if got := s.markAt(t0.Add(3*delay + delay/32)).Settled; got != 50 {
		t.Errorf("80 merged into 90 seen later: settled %d; want 50", got)
	}
	if got := s.markAt(t0.Add(3*delay + delay/16)).Settled; got != 90 {
		t.Errorf("after 90's delay: settled %d; want 90", got)
	}
	if len(s.seen) != 0 {
		t.Errorf("observations kept after they settled: %v", s.seen)
	}
	for i := range 1000 { // a page a millisecond, as list does it: only a handful kept
		at := t0.Add(4*delay + time.Duration(i)*time.Millisecond)
		s.observe(at, int64(100+i))
		s.markAt(at)
	}
	if len(s.seen) > 10 {
		t.Errorf("%d observations kept for one delay; want about 9", len(s.seen))
	}
	// A steady stream of observations settles ids, at most delay+delay/8 after they were seen.
	if got, want := s.markAt(t0.Add(4*delay+time.Second)).Settled, int64(100+1000-delay/time.Millisecond-delay/8/time.Millisecond); got < want {
		t.Errorf("a steady stream: settled %d; want at least %d", got, want)
	}
}

// TestSettlerGaplessRule checks the gapless rule: ids found without a hole after the settled
// one are settled at once; a hole stops them until a read that began a delay after a higher id
// was seen still misses it, which makes it dead; a read that starts above the settled id
// settles nothing by itself; and nothing is settled by time alone.
func TestSettlerGaplessRule(t *testing.T) {
	const delay = 100 * time.Millisecond
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &Settler{delay: delay, gapless: true}
	found := func(at time.Time, from int64, ids ...int64) int64 { // found, its holes checked absent
		s.observe(at, ids[len(ids)-1])
		s.advance(s.markAt(at), from, ids)
		return s.markAt(at).Settled
	}
	if got := found(t0, 0, 1, 2, 3); got != 3 {
		t.Errorf("1 2 3 from 0: settled %d; want 3", got)
	}
	if got := found(t0, 2, 3, 4, 6, 7); got != 4 {
		t.Errorf("3 4 6 7 from 2 (a hole at 5): settled %d; want 4", got)
	}
	if got := found(t0, 10, 11, 12); got != 4 {
		t.Errorf("11 12 from 10, above the settled 4: settled %d; want 4", got)
	}
	if got := s.markAt(t0.Add(10 * delay)).Settled; got != 4 {
		t.Errorf("time alone: settled %d; want 4 (a hole is passed only by a read)", got)
	}
	if got := found(t0.Add(10*delay), 4, 6, 7, 11, 12); got != 12 {
		t.Errorf("a read a delay after 12 was seen, still missing 5 and 8 to 10: settled %d; want 12", got)
	}
	early := &Settler{delay: delay, gapless: true}
	early.observe(t0, 3)
	early.advance(early.markAt(t0), 0, []int64{1, 3})
	m := early.markAt(t0.Add(delay / 2)) // a read that began before the delay passed
	early.advance(m, 0, []int64{1, 3})
	if got := early.markAt(t0.Add(2 * delay)).Settled; got != 1 {
		t.Errorf("a read begun before the hole at 2 was dead: settled %d; want 1", got)
	}
	for _, tt := range []struct {
		base, dead, want int64
		ids              []int64
	}{
		{0, 0, 3, []int64{1, 2, 3}},
		{1, 0, 3, []int64{1, 2, 3}},
		{0, 0, 1, []int64{1, 3}},
		{0, 2, 3, []int64{1, 3}},
		{1, 0, 4, []int64{2, 3, 4}},
		{2, 0, 4, []int64{3, 4}},
		{2, 9, 7, []int64{5, 7}},
		{5, 0, 5, nil},
		{4, 6, 6, []int64{5, 9, 10}},
		{4, 8, 10, []int64{5, 9, 10}},
		{4, 2, 5, []int64{5, 9, 10}},
		{4, 6, 6, []int64{9}},
	} {
		if got := gaplessTo(tt.base, tt.dead, tt.ids); got != tt.want {
			t.Errorf("gaplessTo(%d, %d, %v) = %d; want %d", tt.base, tt.dead, tt.ids, got, tt.want)
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
