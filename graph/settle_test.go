package graph

import (
	"context"
	"testing"
	"time"
)

// TestSettler checks which ids a settler lets a cursor pass: an id is settled once a higher
// or equal one was seen committed at least the delay before; observations close together are
// merged into the later one, which settles their ids no sooner than each would have.
func TestSettler(t *testing.T) {
	const delay = 100 * time.Millisecond
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &settler{delay: delay}
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

// TestSettlerWait checks that wait ends the delay after the read, or with the context.
func TestSettlerWait(t *testing.T) {
	s := &settler{delay: 20 * time.Millisecond}
	start := time.Now()
	if err := s.wait(context.Background(), start); err != nil || time.Since(start) < s.delay {
		t.Errorf("wait: %v after %v; want nil after %v", err, time.Since(start), s.delay)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.wait(ctx, time.Now()); err == nil {
		t.Error("wait with a context done: got nil; want its error")
	}
}
