package heapfloor

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

// read returns the runtime's current heap goal and GOGC.
func read() (goal uint64, gogc uint64) {
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// collectUntil collects until ok holds of the goal and GOGC that follow, or a few seconds
// have passed; it returns the last of them.
func collectUntil(ok func(goal, gogc uint64) bool) (goal, gogc uint64) {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // for the cleanup that adjusts GOGC to run
		if goal, gogc = read(); ok(goal, gogc) {
			break
		}
	}
	return goal, gogc
}

var sink [][]byte

// TestFloor: with a small live heap the goal is the floor; with a live heap that GOGC alone
// takes past the floor, GOGC is the one given; stopped, GOGC is that one again.
func TestFloor(t *testing.T) {
	const floor = 48 << 20
	stop := Keep(floor, 1<<40, 100)
	defer stop()

	goal, gogc := collectUntil(func(goal, _ uint64) bool { return goal >= floor })
	if goal < floor || goal > floor+floor/20 {
		t.Errorf("a live heap of a few MiB: heap goal %d MiB (GOGC %d); want the floor, %d MiB", goal>>20, gogc, floor>>20)
	}

	for range 40 { // 40 MiB live, which GOGC 100 alone takes to a goal of some 80 MiB
		sink = append(sink, make([]byte, 1<<20))
	}
	goal, gogc = collectUntil(func(_, gogc uint64) bool { return gogc == 100 })
	if gogc != 100 || goal < 80<<20 {
		t.Errorf("a live heap of 40 MiB: GOGC %d, heap goal %d MiB; want GOGC 100, a goal of 80 MiB or more", gogc, goal>>20)
	}
	sink = nil

	collectUntil(func(goal, _ uint64) bool { return goal < 80<<20 })
	stop()
	if goal, gogc = collectUntil(func(goal, _ uint64) bool { return goal < floor/2 }); gogc != 100 || goal >= floor/2 {
		t.Errorf("stopped: GOGC %d, heap goal %d MiB; want 100 and the few MiB it gives", gogc, goal>>20)
	}
}

// TestHeadroom: with a live heap whose GOGC would let it grow by more than the headroom, the
// goal is the headroom above it; with a small live heap, the floor; stopped, GOGC is the one
// given again.
func TestHeadroom(t *testing.T) {
	const floor, headroom = 8 << 20, 16 << 20
	stop := Keep(floor, headroom, 100)
	defer stop()

	for range 80 { // 80 MiB live, which GOGC 100 alone takes to a goal of some 160 MiB
		sink = append(sink, make([]byte, 1<<20))
	}
	goal, gogc := collectUntil(func(_, gogc uint64) bool { return gogc < 100 })
	if goal < 80<<20 || goal > 80<<20+headroom+headroom/4 {
		t.Errorf("a live heap of 80 MiB: heap goal %d MiB (GOGC %d); want 80 MiB and at most the headroom, %d MiB, more",
			goal>>20, gogc, headroom>>20)
	}
	sink = nil

	goal, gogc = collectUntil(func(goal, _ uint64) bool { return goal < 40<<20 })
	if goal < floor || goal > floor+floor/5 {
		t.Errorf("a live heap of a few MiB: heap goal %d MiB (GOGC %d); want the floor, %d MiB", goal>>20, gogc, floor>>20)
	}
	stop()
	if _, gogc = collectUntil(func(_, gogc uint64) bool { return gogc == 100 }); gogc != 100 {
		t.Errorf("stopped: GOGC %d; want 100", gogc)
	}
}
