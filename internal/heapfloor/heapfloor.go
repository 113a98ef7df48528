// Package heapfloor keeps the garbage collector from running more often than a heap of a
// given size would make it, and a large heap from growing by more than a given headroom
// between collections.
//
// Under GOGC the collector lets the heap grow, between collections, in proportion to what the
// last one found live: with a live heap of a few MiB it collects many times a second, and its
// cost per request (marking the same live objects and goroutine stacks every time) grows as
// the live heap shrinks. A floor under the heap goal bounds that cost by what the floor costs
// in memory, without the GOGC that would buy the same for a small heap multiplying a large
// one. Past a large heap the same proportion is memory that no operator budgeted for: a GOGC
// of 200 over 300 MiB of live heap and stacks (10,000 idle subscriptions) lets 600 MiB of
// garbage become resident before the next collection. A headroom over the live heap bounds
// that garbage, at the cost of collecting more often while a large heap takes new
// allocations; the collector never goes below minPercent, so a very large heap still gets a
// tenth of itself. GOMEMLIMIT still caps the goal: the runtime takes the lower of the two.
package heapfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Keep sets GOGC to percent and, after every collection, raises it as far as needed for the
// next heap goal to be at least floor bytes, lowers it as far as needed (but not under
// minPercent) for the goal to be at most headroom bytes above the live heap once that is past
// floor, or sets it back to percent once the live heap is large enough for percent alone and
// small enough for headroom. It returns a function that stops it and sets GOGC back to
// percent.
func Keep(floor, headroom uint64, percent int) (stop func()) {
	k := &keeper{floor: floor, headroom: headroom, percent: percent, samples: []metrics.Sample{
		{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"},
	}}
	k.mu.Lock()
	k.set(percent)
	k.watch()
	k.mu.Unlock()
	return func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		k.stopped = true
		debug.SetGCPercent(percent)
	}
}

// A keeper adjusts GOGC after each collection, on the runtime's cleanup goroutine.
type keeper struct {
	floor    uint64
	headroom uint64
	percent  int

	mu      sync.Mutex
	stopped bool
	current int // the GOGC set last
	samples []metrics.Sample
}

// sentinel is allocated for the next collection to find unreachable. It holds a pointer so
// that it is not one of the tiny objects the allocator packs together (and frees together).
type sentinel struct{ _ *byte }

// watch has adjust run after the next collection, and watch again.
func (k *keeper) watch() {
	runtime.AddCleanup(new(sentinel), func(k *keeper) {
		k.mu.Lock()
		defer k.mu.Unlock()
		if !k.stopped {
			k.adjust()
			k.watch()
		}
	}, k)
}

// adjust sets the GOGC that gives a heap goal of at most the headroom above the live heap
// after the last collection, if that is below percent (and not below minPercent), then the
// GOGC that gives a goal of the floor, if that is above it. The runtime's goal is the larger
// of live + (live + stacks + globals) * GOGC / 100 and a minimum of 4 MiB * GOGC / 100. With a
// live heap small enough, the GOGC the first asks for would take the minimum past the floor;
// then the GOGC whose minimum is the floor is set instead.
func (k *keeper) adjust() {
	metrics.Read(k.samples)
	live := k.samples[0].Value.Uint64()
	base := live + k.samples[1].Value.Uint64() + k.samples[2].Value.Uint64()
	want := k.percent
	if base == 0 {
		k.set(want)
		return
	}
	if capped := k.headroom * 100 / base; capped < uint64(want) {
		want = max(int(capped), minPercent)
	}
	if live < k.floor {
		gogc := min((k.floor-live)*100/base+1, k.floor*100/runtimeHeapMinimum)
		want = max(want, int(gogc))
	}
	k.set(want)
}

// minPercent is the lowest GOGC that the headroom sets: a heap so large that the headroom is
// less than a tenth of it is let grow by a tenth, not collected ever more often.
const minPercent = 10

// runtimeHeapMinimum is the runtime's smallest heap goal at GOGC=100 (defaultHeapMinimum in
// runtime/mgcpacer.go); it scales with GOGC.
const runtimeHeapMinimum = 4 << 20

// set sets GOGC to percent unless it is already.
func (k *keeper) set(percent int) {
	if percent != k.current {
		debug.SetGCPercent(percent)
		k.current = percent
	}
}
