package e2e

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gorm.io/gorm"

	"petstore/auth"
	"petstore/config"
	"petstore/internal/testkit/dbtest"
	"petstore/store"
)

// The cost of an idle subscription and the delivery latency (issue 17). Run:
//
//	go test -run '^$' -bench 'IdleSubscriptions|PetAddedLatency' -benchtime 1x .
//
// TestIdleSubscriptionCost is the small variant CI runs.

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

// rawSubscribe opens a graphql-transport-ws WebSocket at addr with key, initialises it and
// starts petAdded, reading nothing afterwards.
func rawSubscribe(addr, key string) (net.Conn, error) {
	c, _, err := rawSubscribeReader(addr, key)
	return c, err
}

// rawSubscribeReader is rawSubscribe, and returns the connection's reader too, which has read
// nothing after the acknowledgement.
func rawSubscribeReader(addr, key string) (net.Conn, *bufio.Reader, error) {
	c, br, err := rawInit(addr, "graphql-transport-ws", "Authorization: Bearer "+key+"\r\n", `{"type":"connection_init"}`)
	if err != nil {
		return nil, nil, err
	}
	writeFrame(c, `{"type":"subscribe","id":"1","payload":`+latencyQuery+`}`)
	return c, br, nil
}

// rawInit opens a WebSocket of protocol at addr with the header lines extra (each ending in
// CRLF), sends init and waits for connection_ack; it answers nothing after that.
func rawInit(addr, protocol, extra, init string) (net.Conn, *bufio.Reader, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(c, "GET /v1/graphql HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"+
		"Sec-WebSocket-Protocol: %s\r\n%s\r\n", addr, protocol, extra)
	br := bufio.NewReaderSize(c, 512)
	status, err := br.ReadString('\n')
	if err != nil || !strings.Contains(status, " 101 ") {
		c.Close()
		return nil, nil, fmt.Errorf("upgrade: %q %v", status, err)
	}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			c.Close()
			return nil, nil, err
		}
		if line == "\r\n" {
			break
		}
	}
	writeFrame(c, init)
	if msg, err := readFrame(br); err != nil || !strings.Contains(msg, "connection_ack") {
		c.Close()
		return nil, nil, fmt.Errorf("init: %q %v", msg, err)
	}
	return c, br, nil
}

// writeFrame writes msg as one masked text frame (a client's), of less than 64 KiB.
func writeFrame(w io.Writer, msg string) {
	b := []byte{0x81}
	if len(msg) < 126 {
		b = append(b, 0x80|byte(len(msg)))
	} else {
		b = append(b, 0x80|126, byte(len(msg)>>8), byte(len(msg)))
	}
	mask := [4]byte{1, 2, 3, 4}
	b = append(b, mask[:]...)
	for i := range len(msg) {
		b = append(b, msg[i]^mask[i%4])
	}
	_, _ = w.Write(b)
}

// readFrame reads one unmasked frame (a server's).
func readFrame(r io.Reader) (string, error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return "", err
	}
	n := int(h[1] & 0x7f)
	switch n {
	case 126:
		var e [2]byte
		if _, err := io.ReadFull(r, e[:]); err != nil {
			return "", err
		}
		n = int(binary.BigEndian.Uint16(e[:]))
	case 127:
		return "", fmt.Errorf("frame too long")
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return string(b), err
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
	cfg := config.Default()
	var keys []string
	for range (n + 999) / 1000 { // an enterprise key holds up to 1,000
		k, _, err := auth.CreateKey(context.Background(), db.DB, cfg.KeyPrefix(),
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
	cmd, base := startServe(tb, append(env, "PETSTORE_DB="+dsn, "PETSTORE_LOG_LEVEL=error", costReportEnv+"="+report)...)
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

// activeSubscriptions reads petstore_subscriptions_active from /metrics.
func activeSubscriptions(tb testing.TB, base string) int {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "petstore_subscriptions_active "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return int(f)
		}
	}
	return 0
}

// BenchmarkIdleSubscriptions reports the server's memory and goroutines per idle WebSocket
// subscription (goal: at most 32 KiB of resident memory and 3 goroutines).
func BenchmarkIdleSubscriptions(b *testing.B) { benchmarkIdle(b, "ws", "sub") }

// TestIdleSubscriptionCost is BenchmarkIdleSubscriptions at 200 subscriptions, held to the
// goals with a margin for what a small count measures less precisely.
func TestIdleSubscriptionCost(t *testing.T) { checkIdleCost(t, "ws", "subscription") }

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

// latencyPets is how many pets BenchmarkPetAddedLatency adds per iteration, one every 100 ms:
// 50 pets to 1,000 subscribers are 50,000 arrivals, of which the p99 is the 500th slowest.
const latencyPets = 50

// latencyQuery is the subscription of BenchmarkPetAddedLatency's subscribers.
const latencyQuery = `{"query":"subscription { petAdded { cursor pet { id name } } }"}`

// BenchmarkPetAddedLatency reports the time from a pet's commit (when its INSERT returned) to
// its event at each of 1,000 subscribers, p50 and p99, one pet every 100 ms, over WebSocket
// (graphql-transport-ws) and over Server-Sent Events; and the p99 from just before the REST
// POST (post-p99: the POST, its commit with SQLite's sync to disk, and the delivery). It splits
// the time from the commit in two: to each pet's first subscriber (first-p50, the median over
// the pets: the Hub's wake-up and read), and after it (spread-p99: the sweep over the other
// subscribers, which the delivery's cost sets). It reports too the server process's CPU time,
// allocations and bytes allocated per event delivered, and the subscribers' CPU time
// (client-cpu), which unlike the wall-clock figures do not depend on what else the machine
// runs. The subscribers run in a process of their own (TestLatencyClientsHelper), as clients
// on other machines do, sharing this machine's cores but not the server's scheduler; they are
// lean, honest clients: each reads and parses every message (WebSocket frames; SSE's chunked
// body and event lines), takes the pet's id from it and notes the time of arrival, without
// allocating per event.
func BenchmarkPetAddedLatency(b *testing.B) {
	b.Run("ws", func(b *testing.B) { petAddedLatency(b, "ws") })
	b.Run("sse", func(b *testing.B) { petAddedLatency(b, "sse") })
}

// latencyClientsEnv names, in the helper process, the server, the subscribers and their key.
const latencyClientsEnv = "PETSTORE_TEST_LATENCY_CLIENTS"

// TestLatencyClientsHelper is not a test: in the process BenchmarkPetAddedLatency starts, it
// opens the subscribers (ws or sse), says "ready", and once each has read its events (or
// after a minute) writes one line "ID UNIXNANO" per arrival, then "cpu NANOSECONDS", its own
// CPU time while it read.
func TestLatencyClientsHelper(t *testing.T) {
	spec := os.Getenv(latencyClientsEnv)
	if spec == "" {
		t.Skip("the helper process of BenchmarkPetAddedLatency")
	}
	parts := strings.Split(spec, ",") // addr, transport, subscribers, events each, key
	n, _ := strconv.Atoi(parts[2])
	want, _ := strconv.Atoi(parts[3])
	subscribe := wsSubscribe
	if parts[1] == "sse" {
		subscribe = sseSubscribe
	}
	type arrival struct{ id, at int64 }
	arrivals := make([][]arrival, n) // each subscriber's, in its own slice
	readers := make([]eventReader, n)
	for i := range n {
		c, r, err := subscribe(parts[0], parts[4])
		if err != nil {
			fmt.Println("error:", i, err)
			os.Exit(1)
		}
		defer c.Close()
		readers[i], arrivals[i] = r, make([]arrival, 0, want)
		time.AfterFunc(time.Minute, func() { _ = c.Close() })
	}
	cpu0 := cpuTime()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for len(arrivals[i]) < want {
				id, err := readers[i].next()
				if err != nil {
					return
				}
				arrivals[i] = append(arrivals[i], arrival{id, time.Now().UnixNano()})
			}
		})
	}
	fmt.Println("ready")
	wg.Wait()
	cpu := cpuTime() - cpu0
	w := bufio.NewWriter(os.Stdout)
	for _, as := range arrivals {
		for _, a := range as {
			fmt.Fprintln(w, a.id, a.at)
		}
	}
	fmt.Fprintln(w, "cpu", cpu.Nanoseconds())
	_ = w.Flush()
}

// eventReader returns the id of the pet of each event a subscriber reads.
type eventReader interface {
	next() (int64, error)
}

// petAddedLatency is BenchmarkPetAddedLatency over transport, ws or sse.
func petAddedLatency(b *testing.B, transport string) {
	const subscribers = 1000
	db := dbtest.New(b, "sqlite")
	commits := clockCommits(db.DB)
	s := newLiveServer(b, db, nil, config.Default(), "business")
	key, _, err := auth.CreateKey(context.Background(), db.DB, s.cfg.KeyPrefix(),
		auth.KeySpec{Plan: "enterprise", PerMinute: 1 << 30, PerDay: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	want := latencyPets * b.N
	cmd := exec.Command(os.Args[0], "-test.run=^TestLatencyClientsHelper$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%s,%d,%d,%s", latencyClientsEnv,
		strings.TrimPrefix(s.url, "http://"), transport, subscribers, want, key))
	cmd.Stderr = os.Stderr
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "ready" {
		b.Fatalf("helper: %q", lines.Text())
	}
	for activeSubscriptions(b, s.url) < subscribers {
		time.Sleep(50 * time.Millisecond)
	}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	cpu0 := cpuTime()
	sent := map[int64]time.Time{}
	b.ResetTimer()
	for range b.N {
		for j := range latencyPets {
			t0 := time.Now()
			sent[s.createPet(b, s.key, fmt.Sprint("lat", j), "")] = t0
			time.Sleep(100 * time.Millisecond)
		}
	}
	var (
		lat      = make([]time.Duration, 0, subscribers*want) // from the commit
		fromPOST = make([]time.Duration, 0, subscribers*want) // from just before the POST
		first    = map[int64]time.Time{}                      // each pet's earliest arrival
		arrived  []struct {
			id int64
			at time.Time
		}
		clientCPU time.Duration
	)
	for lines.Scan() { // once every subscriber has read its events
		var id, ns int64
		if v, ok := strings.CutPrefix(lines.Text(), "cpu "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			clientCPU = time.Duration(n)
			continue
		}
		if lines.Text() == "PASS" { // the test binary's last word
			continue
		}
		if _, err := fmt.Sscan(lines.Text(), &id, &ns); err != nil {
			b.Fatalf("helper: %q", lines.Text())
		}
		at := time.Unix(0, ns)
		arrived = append(arrived, struct {
			id int64
			at time.Time
		}{id, at})
		lat = append(lat, at.Sub(commits.at(id)))
		fromPOST = append(fromPOST, at.Sub(sent[id]))
		if f, ok := first[id]; !ok || at.Before(f) {
			first[id] = at
		}
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&m1)
	if len(lat) == 0 {
		b.Fatal("no event delivered")
	}
	// The latency splits in two: to the first subscriber (the Hub's wake-up and read after
	// the commit), then the sweep over the others (the spread after the first).
	var firsts, spread []time.Duration
	for id, f := range first {
		firsts = append(firsts, f.Sub(commits.at(id)))
	}
	for _, a := range arrived {
		spread = append(spread, a.at.Sub(first[a.id]))
	}
	n := float64(len(lat))
	b.ReportMetric(ms(percentile(lat, 50)), "p50-ms")
	b.ReportMetric(ms(percentile(lat, 99)), "p99-ms")
	b.ReportMetric(ms(percentile(fromPOST, 99)), "post-p99-ms")
	b.ReportMetric(ms(percentile(firsts, 50)), "first-p50-ms")
	b.ReportMetric(ms(percentile(spread, 99)), "spread-p99-ms")
	b.ReportMetric(n/float64(subscribers*want), "delivered")
	b.ReportMetric(float64(cpu.Microseconds())/n, "cpu-µs/delivery")
	b.ReportMetric(float64(clientCPU.Microseconds())/n, "client-cpu-µs/delivery")
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/n, "allocs/delivery")
	b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/n, "B/delivery")
}

// commitClock is a GORM connection pool that notes when each pet's INSERT returned: outside a
// transaction, the moment it committed.
type commitClock struct {
	gorm.ConnPool
	mu sync.Mutex
	by map[int64]time.Time
}

// clockCommits makes db note the commit time of each pet it inserts outside a transaction
// (the REST POSTs without Idempotency-Key of BenchmarkPetAddedLatency).
func clockCommits(db *gorm.DB) *commitClock {
	c := &commitClock{ConnPool: db.Statement.ConnPool, by: map[int64]time.Time{}}
	db.ConnPool, db.Statement.ConnPool = c, c
	return c
}

func (c *commitClock) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	res, err := c.ConnPool.ExecContext(ctx, query, args...)
	if err == nil && strings.HasPrefix(query, "INSERT INTO pets ") {
		at := time.Now()
		if id, err := res.LastInsertId(); err == nil {
			c.mu.Lock()
			c.by[id] = at
			c.mu.Unlock()
		}
	}
	return res, err
}

// GetDBConn gives GORM the pool's *sql.DB, as the wrapped pool does.
func (c *commitClock) GetDBConn() (*sql.DB, error) {
	if p, ok := c.ConnPool.(interface{ GetDBConn() (*sql.DB, error) }); ok {
		return p.GetDBConn()
	}
	return c.ConnPool.(*sql.DB), nil
}

// at returns when the pet with id committed.
func (c *commitClock) at(id int64) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.by[id]
}

// percentile returns the p-th percentile of d, which it sorts.
func percentile(d []time.Duration, p int) time.Duration {
	slices.Sort(d)
	return d[len(d)*p/100]
}

// ms returns d in milliseconds.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// wsSubscribe opens a subscriber of BenchmarkPetAddedLatency over WebSocket.
func wsSubscribe(addr, key string) (net.Conn, eventReader, error) {
	c, br, err := rawSubscribeReader(addr, key)
	if err != nil {
		return nil, nil, err
	}
	return c, &wsReader{br: br}, nil
}

// wsReader reads a server's WebSocket frames into one buffer.
type wsReader struct {
	br  *bufio.Reader
	buf []byte
}

func (r *wsReader) next() (int64, error) {
	for {
		h0, err := r.br.ReadByte()
		if err != nil {
			return 0, err
		}
		h1, err := r.br.ReadByte()
		if err != nil {
			return 0, err
		}
		n := int(h1 & 0x7f)
		switch n {
		case 126:
			var e [2]byte
			if _, err := io.ReadFull(r.br, e[:]); err != nil {
				return 0, err
			}
			n = int(binary.BigEndian.Uint16(e[:]))
		case 127:
			return 0, fmt.Errorf("frame too long")
		}
		if cap(r.buf) < n {
			r.buf = make([]byte, n)
		}
		r.buf = r.buf[:n]
		if _, err := io.ReadFull(r.br, r.buf); err != nil {
			return 0, err
		}
		if h0 != 0x81 { // a text message in one frame
			continue
		}
		if id, ok := petIDOf(r.buf); ok {
			return id, nil
		}
	}
}

// sseSubscribe opens a subscriber of BenchmarkPetAddedLatency over SSE.
func sseSubscribe(addr, key string) (net.Conn, eventReader, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(c, "POST /v1/graphql HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
		"Accept: text/event-stream\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		addr, key, len(latencyQuery), latencyQuery)
	resp, err := http.ReadResponse(bufio.NewReaderSize(c, 512), nil)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		c.Close()
		return nil, nil, fmt.Errorf("SSE answer: %d %v", resp.StatusCode, resp.Header)
	}
	return c, &sseReader{lines: bufio.NewReaderSize(resp.Body, 512)}, nil
}

// sseReader reads the events of an SSE body (net/http's reader of its chunks) line by line.
type sseReader struct {
	lines *bufio.Reader
}

var dataField = []byte("data: ")

func (r *sseReader) next() (int64, error) {
	var (
		id int64
		ok bool
	)
	for {
		line, err := r.lines.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		if data, found := bytes.CutPrefix(line, dataField); found {
			id, ok = petIDOf(data)
		} else if len(line) == 1 && ok { // the blank line that ends an event
			return id, nil
		}
	}
}

// petIDOf returns the pet id of a petAdded event's JSON, whatever wraps it.
func petIDOf(msg []byte) (int64, bool) {
	const pet, id = `"pet":{`, `"id":"`
	i := bytes.Index(msg, []byte(pet))
	if i < 0 {
		return 0, false
	}
	msg = msg[i+len(pet):]
	if i = bytes.Index(msg, []byte(id)); i < 0 {
		return 0, false
	}
	var n int64
	for _, c := range msg[i+len(id):] {
		if c == '"' {
			return n, true
		}
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return 0, false
}

// cpuTime returns the CPU time the process used so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
