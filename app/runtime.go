package app

import (
	"os"
	"strings"
	"syscall"

	"petstore/internal/heapfloor"
)

// defaultGOGC and HeapFloor tune the garbage collector unless GOGC is set. A collection costs
// about the same whatever the heap grew to (it marks the live heap, some 3 MiB loaded, and every
// goroutine's stack), so what it costs a request is set by how far the heap may grow between
// collections: 200% over the live heap, but never under HeapFloor (internal/heapfloor raises
// GOGC after each collection as far as needed).
const defaultGOGC = 200

// HeapFloor is the smallest heap goal unless GOGC is set; see defaultGOGC.
const HeapFloor = 22 << 20

// heapHeadroom is, unless GOGC is set, the most the heap may grow past what the last collection
// found live, once the live heap and stacks pass 16 MiB (some 600 subscriptions). It bounds the
// garbage that becomes resident between collections, which GOGC=200 alone lets grow to twice the
// live heap: up to 600 MiB with 10,000 idle subscriptions, against at most 32 MiB here. The
// price is more collections while the heap is that large; an instance that would rather spend
// memory than CPU sets GOGC.
const heapHeadroom = 32 << 20

// smallStacks is the GODEBUG setting under which goroutines start with the smallest stack (2
// KiB), not the average the runtime has seen: with thousands of idle subscribers parked on deep
// stacks, that average makes every new goroutine start at 4 KiB though most need less.
const smallStacks = "adaptivestackstart=0"

// TuneRuntime sets the process up before the command that args name runs: for serve, it
// restarts the program with smallStacks (startSmall); unless GOGC is set, it keeps the heap goal
// between HeapFloor and heapHeadroom past the live heap.
func TuneRuntime(args []string) {
	if len(args) > 0 && args[0] == "serve" {
		startSmall()
	}
	if os.Getenv("GOGC") == "" {
		heapfloor.Keep(HeapFloor, heapHeadroom, defaultGOGC)
	}
}

// startSmall runs the program again, in this process (exec), with smallStacks added to
// GODEBUG, which the runtime reads only as the process starts; it returns, the program going
// on as it is, when GODEBUG names adaptivestackstart already or the exec fails.
func startSmall() {
	godebug := os.Getenv("GODEBUG")
	if strings.Contains(godebug, "adaptivestackstart=") {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	if godebug != "" {
		godebug += ","
	}
	env := []string{"GODEBUG=" + godebug + smallStacks}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GODEBUG=") {
			env = append(env, kv)
		}
	}
	_ = syscall.Exec(exe, os.Args, env)
}
