package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"petstore/app"
	"petstore/auth"
	"petstore/store"
	"petstore/testkit/dbtest"
)

// The cost of an idle subscription (a WebSocket, or an SSE stream) to the server's process. Run:
//
//	go test -run '^$' -bench 'IdleSubscriptions|IdleStreams' -benchtime 1x ./e2e/
//
// TestIdleSubscriptionCost and TestIdleStreamCost are the small variants CI runs.

// BenchmarkIdleSubscriptions reports the server's memory and goroutines per idle WebSocket
// subscription (goal: at most 28 KiB of resident memory and 3 goroutines, as for
// BenchmarkIdleSubscriptionsNode, the operator's measure).
func BenchmarkIdleSubscriptions(b *testing.B) { benchmarkIdle(b, "ws", "sub") }

// TestIdleSubscriptionCost is BenchmarkIdleSubscriptions at 200 subscriptions, held to the
// goals with a margin for what a small count measures less precisely.
func TestIdleSubscriptionCost(t *testing.T) { checkIdleCost(t, "ws", "subscription") }

// BenchmarkIdleStreams reports the server's memory and goroutines per idle SSE stream (goal:
// at most 32 KiB and 3, as for a WebSocket subscription).
func BenchmarkIdleStreams(b *testing.B) { benchmarkIdle(b, "sse", "stream") }

// TestIdleStreamCost is BenchmarkIdleStreams at 200 streams, held to the same goals with the
// margin TestIdleSubscriptionCost allows.
func TestIdleStreamCost(t *testing.T) { checkIdleCost(t, "sse", "stream") }

// benchmarkIdle reports idleCost over transport at 1,000 and 10,000, per unit: rss-B (the
// goal's measure), live-B and goroutines.
func benchmarkIdle(b *testing.B, transport, unit string) {
	for _, n := range []int{1000, 10000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for range b.N {
				c := idleCost(b, n, transport)
				b.ReportMetric(c.rss, "rss-B/"+unit)
				b.ReportMetric(c.live, "live-B/"+unit)
				b.ReportMetric(c.goroutines, "goroutines/"+unit)
			}
		})
	}
}

// checkIdleCost holds idleCost over transport at 200 to at most 32 KiB of live heap and stacks
// and 3 goroutines each (3.05: the margin of a small count); what names one in the messages.
// The resident memory is logged, not held: 200 subscriptions grow it by less than the heap
// floor the collector keeps (app.HeapFloor), so it says little; BenchmarkIdleSubscriptions and
// BenchmarkIdleStreams measure it at 10,000.
func checkIdleCost(t *testing.T, transport, what string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a helper process")
	}
	c := idleCost(t, 200, transport)
	t.Logf("%.0f B live and %.2f goroutines per idle %s (resident memory %+.0f B)", c.live, c.goroutines, what, c.rss)
	if c.live > 32<<10 || c.goroutines > 3.05 {
		t.Fatalf("%.0f B and %.2f goroutines per idle %s; want at most 32 KiB and 3", c.live, c.goroutines, what)
	}
}

// idleCosts are what an idle subscription costs the server's process: rss, the growth of its
// resident memory (VmRSS) a few seconds after the subscriptions opened, no collection forced,
// as an operator's dashboard and a container's memory limit count it; live, the growth of its
// heap in use and goroutine stacks after forced collections (what the subscriptions hold, not
// the collector's headroom nor memory not yet given back); and goroutines.
type idleCosts struct{ rss, live, goroutines float64 }

// idleSettle is how long after the last subscription opened idleCost reads VmRSS.
const idleSettle = 3 * time.Second

// idleCost runs the service as a process of its own with the garbage collector tuned as
// shipped (GOGC and GOMEMLIMIT unset), opens n idle subscriptions over transport (ws or sse)
// from a helper process, and returns their costs per subscription.
func idleCost(tb testing.TB, n int, transport string) idleCosts {
	tb.Helper()
	dsn := dbtest.DSN(tb, "sqlite")
	db, err := store.Open(context.Background(), dsn, store.DefaultPool)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Migrate(context.Background()); err != nil { // here: the server's first collection finds none of it
		tb.Fatal(err)
	}
	cfg := app.DefaultConfig()
	var keys []string
	for range (n + 999) / 1000 { // an enterprise key holds up to 1,000
		k, _, err := auth.CreateKey(context.Background(), db.DB, auth.PrefixFor(cfg.Env),
			auth.KeySpec{Plan: "enterprise", PerMinute: 1 << 30, PerDay: 1 << 30})
		if err != nil {
			tb.Fatal(err)
		}
		keys = append(keys, k)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, "GOMEMLIMIT=") {
			env = append(env, kv)
		}
	}
	report := filepath.Join(tb.TempDir(), "cost")
	cmd, base, _ := startServe(tb, append(env, "PETSTORE_DB="+dsn, "PETSTORE_LOG_LEVEL=error", costReportEnv+"="+report)...)
	addr := strings.TrimPrefix(base, "http://")
	s := &liveServer{url: base, cfg: cfg}
	s.createPet(tb, keys[0], "warm", "") // the Hub, the pools and the caches exist before
	warm, err := idleOpeners[transport](addr, keys[0])
	if err != nil {
		tb.Fatal(err)
	}
	_ = warm.Close() // the first one's one-time costs (the GraphQL document cached) are not counted
	waitActive(tb, base, 0)
	rss0 := vmRSS(tb, cmd.Process.Pid)
	live0, g0 := processCost(tb, cmd, report)

	helper := exec.Command(os.Args[0], "-test.run=^TestIdleClientsHelper$")
	helper.Env = append(os.Environ(), idleClientsEnv+"="+transport+","+addr+","+strconv.Itoa(n)+","+strings.Join(keys, ","))
	stdin, _ := helper.StdinPipe()
	out, _ := helper.StdoutPipe()
	helper.Stderr = os.Stderr
	if err := helper.Start(); err != nil {
		tb.Fatal(err)
	}
	defer func() { stdin.Close(); _ = helper.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		tb.Fatalf("helper: %q %v", line, err)
	}
	waitActive(tb, base, n)
	time.Sleep(idleSettle)
	rss := vmRSS(tb, cmd.Process.Pid)
	live, g := processCost(tb, cmd, report)
	per := func(after, before float64) float64 { return (after - before) / float64(n) }
	return idleCosts{rss: per(float64(rss), float64(rss0)), live: per(float64(live), float64(live0)),
		goroutines: per(float64(g), float64(g0))}
}

// waitActive waits, at most 30 s, until the server at base counts n subscriptions.
func waitActive(tb testing.TB, base string, n int) {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for activeSubscriptions(tb, base) != n {
		if time.Now().After(deadline) {
			tb.Fatalf("%d subscriptions active; want %d", activeSubscriptions(tb, base), n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// vmRSS returns the resident memory of process pid, in bytes.
func vmRSS(tb testing.TB, pid int) uint64 {
	tb.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return kb << 10
		}
	}
	tb.Fatal("no VmRSS in /proc/PID/status")
	return 0
}

// idleClientsEnv names, in the helper process, the transport, the server and the keys its
// clients use.
const idleClientsEnv = "PETSTORE_TEST_IDLE_CLIENTS"

// idleOpeners open one idle subscription by transport: a raw WebSocket (rawSubscribe) or a raw
// SSE stream (rawStream), neither with a goroutine of its own.
var idleOpeners = map[string]func(addr, key string) (net.Conn, error){"ws": rawSubscribe, "sse": rawStream}

// TestIdleClientsHelper is not a test: in the process idleCost starts, it opens the
// subscriptions or streams, says "ready" and holds them until its stdin closes, so that the
// server's process counts no client memory.
func TestIdleClientsHelper(t *testing.T) {
	spec := os.Getenv(idleClientsEnv)
	if spec == "" {
		t.Skip("the helper process of BenchmarkIdleSubscriptions and BenchmarkIdleStreams")
	}
	parts := strings.Split(spec, ",") // transport, addr, n, keys...
	open := idleOpeners[parts[0]]
	n, _ := strconv.Atoi(parts[2])
	keys := parts[3:]
	conns := make([]net.Conn, 0, n)
	for i := range n {
		c, err := open(parts[1], keys[i%len(keys)])
		if err != nil {
			fmt.Println("error:", i, err)
			os.Exit(1)
		}
		conns = append(conns, c)
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, c := range conns {
		_ = c.Close()
	}
}

// costReportEnv names, in a service process idleCost starts, the file in which it writes
// serverCost (bytes and goroutines) each time it gets SIGUSR1.
const costReportEnv = "PETSTORE_TEST_COST_REPORT"

// init has the service process that idleCost starts answer its SIGUSR1 with serverCost, once
// its goroutines have stopped coming and going (settledCost).
func init() {
	path := os.Getenv(costReportEnv)
	if path == "" || os.Getenv("PETSTORE_TEST_AS_BINARY") != "1" {
		return
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGUSR1)
	go func() {
		for range signals {
			b, g := settledCost()
			_ = os.WriteFile(path+".tmp", fmt.Appendf(nil, "%d %d", b, g), 0o600)
			_ = os.Rename(path+".tmp", path) // whole, for processCost
		}
	}()
}

// processCost returns serverCost of the service process cmd, which idleCost started.
func processCost(tb testing.TB, cmd *exec.Cmd, report string) (bytes uint64, goroutines int) {
	tb.Helper()
	_ = os.Remove(report)
	if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		tb.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if b, err := os.ReadFile(report); err == nil {
			if _, err := fmt.Sscan(string(b), &bytes, &goroutines); err != nil {
				tb.Fatalf("cost report %q: %v", b, err)
			}
			return bytes, goroutines
		}
	}
	tb.Fatal("the service process wrote no cost report within a minute")
	return 0, 0
}

// settledCost returns serverCost once the process's goroutines have stopped coming and going
// for half a second (the warm-up connection's winding down), at most 10 s.
func settledCost() (uint64, int) {
	deadline := time.Now().Add(10 * time.Second)
	bytes, g := serverCost()
	for time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		b2, g2 := serverCost()
		if g2 == g {
			return b2, g2
		}
		bytes, g = b2, g2
	}
	return bytes, g
}

// serverCost returns the heap in use plus the goroutine stacks, after collecting garbage, and
// the goroutines.
func serverCost() (uint64, int) {
	var m runtime.MemStats
	for range 8 {
		runtime.GC()
	}
	runtime.ReadMemStats(&m)
	return m.HeapAlloc + m.StackInuse, runtime.NumGoroutine()
}
