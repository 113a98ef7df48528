//go:build cluster

package e2e

import (
	"context"
	"encoding/csv"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// checkMetricsHidden checks that the balancer at base answers /metrics with 404, though the
// instances behind it serve it on their API port, and forwards the rest.
func checkMetricsHidden(t *testing.T, base string) {
	t.Helper()
	for path, want := range map[string]int{"/metrics": http.StatusNotFound, "/metrics/": http.StatusNotFound, "/v1/openapi.json": http.StatusOK} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s through HAProxy: got %d; want %d", path, resp.StatusCode, want)
		}
	}
}

// loadBalancer is the HAProxy process.
type loadBalancer struct{ socket string }

// startHAProxy runs HAProxy with deploy/haproxy.cfg, the instances at ports[:3] and clients at
// ports[3], and returns once its admin socket answers.
func startHAProxy(t *testing.T, haproxy string, ports []int) *loadBalancer {
	t.Helper()
	dir := t.TempDir()
	lb := &loadBalancer{socket: filepath.Join(dir, "admin.sock")}
	cmd := exec.Command(haproxy, "-db", "-f", "../deploy/haproxy.cfg")
	cmd.Env = append(os.Environ(), "HAPROXY_SOCKET="+lb.socket, fmt.Sprintf("HAPROXY_BIND=127.0.0.1:%d", ports[3]))
	for i, port := range ports[:3] {
		cmd.Env = append(cmd.Env, fmt.Sprintf("PETSTORE_%d=127.0.0.1:%d", i+1, port))
	}
	out, err := os.Create(filepath.Join(dir, "haproxy.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		out.Close()
		if t.Failed() {
			b, _ := os.ReadFile(out.Name())
			t.Logf("haproxy's log:\n%s", b)
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := lb.states(); err == nil {
			return lb
		} else if time.Now().After(deadline) {
			t.Fatalf("haproxy's admin socket: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// states returns the state of each server of the petstore backend ("UP", "DOWN", "DOWN 1/2"...)
// from HAProxy's "show stat".
func (lb *loadBalancer) states() (map[string]string, error) {
	conn, err := net.DialTimeout("unix", lb.socket, time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("show stat\n")); err != nil {
		return nil, err
	}
	rows, err := csv.NewReader(conn).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("show stat: no header")
	}
	header := map[string]int{}
	for i, name := range rows[0] {
		header[strings.TrimPrefix(name, "# ")] = i
	}
	states := map[string]string{}
	for _, row := range rows[1:] {
		if row[header["pxname"]] == "petstore" {
			states[row[header["svname"]]] = row[header["status"]]
		}
	}
	return states, nil
}

// waitState waits until HAProxy reports instance n (0-based) in state.
func (lb *loadBalancer) waitState(t *testing.T, n int, state string) {
	t.Helper()
	name := fmt.Sprintf("petstore%d", n+1)
	deadline := time.Now().Add(20 * time.Second)
	for {
		states, err := lb.states()
		if err == nil && states[name] == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy: %s is %q (%v); want %s", name, states[name], err, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// clusterLoad is POSTs sent by concurrent workers, through the balancer or to one instance.
type clusterLoad struct {
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	requests atomic.Int64
	mu       sync.Mutex
	acked    []int64
	failures int
	errors   []error // the first few
}

// loadResult is what a clusterLoad saw.
type loadResult struct {
	requests int64
	acked    []int64
	failures int
	errors   []error
}

// startClusterLoad starts workers that POST pets to base over keep-alive connections until
// stop is called, each pausing up to pause between requests. The pauses leave connections idle
// in HAProxy's pool, as real traffic does: an instance that closes them at once on SIGTERM
// races with HAProxy sending on them, and loses requests.
func startClusterLoad(base, key string, workers int, pause time.Duration) *clusterLoad {
	ctx, cancel := context.WithCancel(context.Background())
	l := &clusterLoad{cancel: cancel}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}, Timeout: 30 * time.Second}
	for w := range workers {
		l.wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				id, _, err := createPet(client, base, key, fmt.Sprintf("w%d-%d", w, i))
				l.requests.Add(1)
				l.record(id, err)
				time.Sleep(rand.N(pause))
			}
		})
	}
	return l
}

// record notes the outcome of one request.
func (l *clusterLoad) record(id int64, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil {
		l.acked = append(l.acked, id)
		return
	}
	l.failures++
	if len(l.errors) < 10 {
		l.errors = append(l.errors, err)
	}
}

// stop stops the workers and returns what they saw.
func (l *clusterLoad) stop() loadResult {
	l.cancel()
	l.wg.Wait()
	return loadResult{requests: l.requests.Load(), acked: l.acked, failures: l.failures, errors: l.errors}
}
