package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"petstore/testkit/dbtest"
)

// TestKeylessFloodStaysInMemory: 12,288 WebSocket upgrades without a key from 48 client
// addresses, the instance run as the Deployment runs it (GOMEMLIMIT=200MiB, its sizes from
// memory), holding each socket open without a connection_init. The instance holds at most its
// pending bound of them at once and refuses the rest with 503 and Retry-After; its peak
// resident memory stays under the Deployment's 256 MiB limit, and REST answers every request
// sent meanwhile (latencies logged, before and during the flood). Not parallel: its sockets and
// its timings are its own.
func TestKeylessFloodStaysInMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a service process and opens 12,288 sockets")
	}
	const sockets, addrs, limitMiB = 12288, 48, 256
	cmd, base, key := startServe(t, "PETSTORE_DB="+dbtest.DSN(t, "sqlite"), "GOMEMLIMIT=200MiB", "PETSTORE_LOG_LEVEL=warn",
		"PETSTORE_DEV_KEY_PLAN=business")
	addr := strings.TrimPrefix(base, "http://")
	before := probeREST(t, base, key, 50, nil)

	stop := make(chan struct{})
	during := make(chan []time.Duration)
	go func() { during <- probeREST(t, base, key, 0, stop) }()
	var maxPending atomic.Int64
	go samplePending(t, base, &maxPending, stop)
	res := floodKeyless(addr, sockets, addrs)
	close(stop)
	lat := <-during

	hwm := vmHWM(t, cmd.Process.Pid)
	limit := metricOf(t, base, `petstore_live_connections_limit{kind="pending"}`)
	t.Logf("%d upgrades from %d addresses: %d open at once at most (bound %d), answers %v; peak RSS %d MiB",
		sockets, addrs, maxPending.Load(), limit, res.statuses, hwm>>20)
	t.Logf("REST p50/p99: %v/%v before, %v/%v during (%d requests)", percentile(before, 50), percentile(before, 99),
		percentile(lat, 50), percentile(lat, 99), len(lat))
	if res.badRefusals > 0 {
		t.Errorf("%d refusals without a 503, Retry-After and an unavailable Error body", res.badRefusals)
	}
	if n := res.statuses["101"]; n < limit {
		t.Errorf("%d upgrades accepted; want at least the bound, %d", n, limit)
	}
	if int(maxPending.Load()) > limit {
		t.Errorf("%d sockets pending at once; want at most %d", maxPending.Load(), limit)
	}
	if hwm > limitMiB<<20 {
		t.Errorf("peak resident memory %d MiB; want under the Deployment's %d MiB", hwm>>20, limitMiB)
	}
}

// floodResult is what floodKeyless saw: the answers by status, and the refusals that were not
// a 503 with Retry-After and an unavailable Error body.
type floodResult struct {
	statuses    map[string]int
	badRefusals int
}

// floodKeyless sends n keyless upgrades to addr from addrs loopback addresses (127.0.1.x), 16
// at a time, holding each accepted socket until all are sent.
func floodKeyless(addr string, n, addrs int) floodResult {
	var mu sync.Mutex
	res := floodResult{statuses: map[string]int{}}
	var open []interface{ Close() error }
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				c, _, resp, err := dialUpgrade(addr, fmt.Sprintf("127.0.1.%d", 1+i%addrs))
				mu.Lock()
				switch {
				case err != nil:
					res.statuses["error"]++
				case resp.StatusCode == http.StatusSwitchingProtocols:
					res.statuses["101"]++
					open = append(open, c)
				default:
					c.Close()
					res.statuses[strconv.Itoa(resp.StatusCode)]++
					body, _ := io.ReadAll(resp.Body)
					if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "5" ||
						!strings.Contains(string(body), `"code":"unavailable"`) {
						res.badRefusals++
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, c := range open {
		_ = c.Close()
	}
	return res
}

// probeREST sends GET /v1/pets with key, every 20 ms, n times or until stop is closed, and
// returns the latencies; any answer but 200 fails t.
func probeREST(t *testing.T, base, key string, n int, stop <-chan struct{}) []time.Duration {
	var lat []time.Duration
	for i := 0; n == 0 || i < n; i++ {
		select {
		case <-stop:
			return lat
		case <-time.After(20 * time.Millisecond):
		}
		req, _ := http.NewRequest(http.MethodGet, base+"/v1/pets?limit=10", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("REST: %v", err)
			continue
		}
		resp.Body.Close()
		lat = append(lat, time.Since(start))
		if resp.StatusCode != http.StatusOK {
			t.Errorf("REST: %d; want 200", resp.StatusCode)
		}
	}
	return lat
}

// samplePending keeps in max the most sockets the server at base counted pending, every 50 ms
// until stop is closed.
func samplePending(t *testing.T, base string, max *atomic.Int64, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(50 * time.Millisecond):
		}
		if n := int64(metricOf(t, base, "petstore_live_connections_pending")); n > max.Load() {
			max.Store(n)
		}
	}
}

// metricOf returns the value of the series name (with its labels) on base's /metrics, -1 when
// it has none.
func metricOf(t *testing.T, base, name string) int {
	for line := range strings.Lines(metricsText(t, base)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return int(f)
		}
	}
	return -1
}

// vmHWM returns the peak resident memory of process pid, in bytes.
func vmHWM(t *testing.T, pid int) uint64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/PID/status")
	return 0
}
