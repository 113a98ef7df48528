//go:build cluster

package e2e

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"
)

// printedPet matches a pet as the Node snippets print it (console.log of { id, name }).
var printedPet = regexp.MustCompile(`^\{ id: '(\d+)', name: '[^']*' \}$`)

// petClient is a Node snippet that prints each pet it gets, its output read as it comes.
type petClient struct {
	name string
	p    *lineProcess

	mu    sync.Mutex
	ids   []int64     // the pets printed, in order
	at    []time.Time // when each was read
	other []string    // lines that are no pet
}

// startPetClient runs snippet, the client name, with node and the packages at modules and KEY
// set to key, and reads what it prints until it ends.
func startPetClient(t *testing.T, name, node, modules, snippet, key string) *petClient {
	t.Helper()
	c := &petClient{name: name, p: startNodeSnippet(t, node, modules, snippet, append(os.Environ(), "KEY="+key))}
	go func() {
		for line := range c.p.lines {
			c.mu.Lock()
			if m := printedPet.FindStringSubmatch(line); m != nil {
				id, _ := strconv.ParseInt(m[1], 10, 64)
				c.ids = append(c.ids, id)
				c.at = append(c.at, time.Now())
			} else {
				c.other = append(c.other, line)
			}
			c.mu.Unlock()
		}
	}()
	return c
}

// running reports whether the client's process has not exited.
func (c *petClient) running() bool {
	select {
	case <-c.p.ended:
		return false
	default:
		return true
	}
}

// printed returns how many pets the client has printed.
func (c *petClient) printed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ids)
}

// last returns the last pet the client printed, 0 before the first.
func (c *petClient) last() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.ids) == 0 {
		return 0
	}
	return c.ids[len(c.ids)-1]
}

// waitPrinted waits, at most 15 s, until the client has printed n pets; it fails t when the
// client exits or the wait runs out.
func (c *petClient) waitPrinted(t *testing.T, n int) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); c.printed() < n; time.Sleep(20 * time.Millisecond) {
		if !c.running() || time.Now().After(deadline) {
			t.Fatalf("%s printed %d pets (running: %v); want %d\nits stderr:\n%s", c.name, c.printed(), c.running(), n, c.stderr())
		}
	}
}

// waitCaughtUp waits, at most d, until the client has printed pet id or a later one, or exited.
func (c *petClient) waitCaughtUp(id int64, d time.Duration) {
	for deadline := time.Now().Add(d); c.last() < id && c.running() && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
}

// stderr returns what the client wrote to stderr, once it has exited.
func (c *petClient) stderr() string {
	if c.running() {
		return "(still running)"
	}
	return c.p.stderr.String()
}

// check checks that the client printed each pet of acked (the ids answered 201, in increasing
// order) once, nothing else, in increasing id order, and is still running; it logs the counts
// and the longest time between two pets printed (the restart's gap, for this client).
func (c *petClient) check(t *testing.T, acked []int64) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	want := map[int64]bool{}
	for _, id := range acked {
		want[id] = true
	}
	times := map[int64]int{}
	var unexpected, disorder []int64
	var gap time.Duration
	for i, id := range c.ids {
		times[id]++
		if !want[id] {
			unexpected = append(unexpected, id)
		}
		if i > 0 && id <= c.ids[i-1] {
			disorder = append(disorder, id)
		}
		if i > 0 {
			gap = max(gap, c.at[i].Sub(c.at[i-1]))
		}
	}
	var missed []int64
	for _, id := range acked {
		if times[id] == 0 {
			missed = append(missed, id)
		}
	}
	twice := len(c.ids) - len(times)
	t.Logf("%s: %d pets printed of %d answered 201: %d missed, %d twice, %d unexpected; longest time between two pets %v",
		c.name, len(c.ids), len(acked), len(missed), twice, len(unexpected), gap.Round(time.Millisecond))
	if len(missed) > 0 || twice > 0 || len(unexpected) > 0 || len(disorder) > 0 {
		t.Errorf("%s: missed %s, printed twice %d, not answered 201 %s, out of order %s; want each pet answered 201 once, in id order",
			c.name, firstIDs(missed), twice, firstIDs(unexpected), firstIDs(disorder))
	}
	if len(c.other) > 0 {
		t.Errorf("%s printed lines that are no pet: %q", c.name, c.other)
	}
	if !c.running() {
		t.Errorf("%s exited; want it running still\nits stderr:\n%s", c.name, c.p.stderr.String())
	}
}

// firstIDs formats the first ten of ids, and how many there are.
func firstIDs(ids []int64) string {
	return fmt.Sprintf("%d %v", len(ids), ids[:min(len(ids), 10)])
}
