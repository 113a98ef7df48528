package live

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// TestRenderShared: concurrent subscribers asking one event for several keys each get the
// rendering of their own key; the first MaxRenderings keys are kept and not rendered again,
// the others are rendered at each call and not kept.
func TestRenderShared(t *testing.T) {
	ev := &Event{}
	keys := make([][]byte, MaxRenderings+4)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "shape %d", i)
	}
	var renders atomic.Int64
	render := func(key []byte) func() []byte {
		return func() []byte { renders.Add(1); return append([]byte("json of "), key...) }
	}
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i, k := range keys {
				if r := ev.Render(k, render(k)); string(r.JSON) != "json of "+string(keys[i]) {
					t.Errorf("key %q: got %q", k, r.JSON)
				}
			}
		})
	}
	wg.Wait()
	kept := 0
	for r := ev.renderings.Load(); r != nil; r = r.next {
		kept++
	}
	if kept != MaxRenderings {
		t.Errorf("%d renderings kept; want %d", kept, MaxRenderings)
	}
	before := renders.Load()
	for i, k := range keys {
		ev.Render(k, render(k))
		want := int64(0)
		if i >= MaxRenderings {
			want = 1
		}
		if got := renders.Load() - before; got != want {
			t.Errorf("key %d: rendered %d times; want %d", i, got, want)
		}
		before = renders.Load()
	}
}
