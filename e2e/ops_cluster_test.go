//go:build cluster

package e2e

import (
	"bufio"
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
	"syscall"
	"testing"
	"time"

	"petstore/internal/testkit/dbtest"
	"petstore/store"
)

// clusterDrainDelay is the instances' PETSTORE_DRAIN_DELAY: above the time deploy/haproxy.cfg
// takes to mark an instance down (inter 500ms x fall 2).
const clusterDrainDelay = 2 * time.Second

// TestRollingRestart runs three instances of the service on one MariaDB database and the shared
// Redis behind a real HAProxy configured by deploy/haproxy.cfg, drives plain POSTs (no
// Idempotency-Key) through it, and restarts each instance in turn with SIGTERM, as a rolling
// deployment does. No request may fail, every 201 must be stored, and nothing else.
func TestRollingRestart(t *testing.T) {
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		dbtest.Unreachable(t, "haproxy (Debian package haproxy)", err)
	}
	dsn := dbtest.DSN(t, "mysql")
	key := clusterKey(t, dsn)
	ports := freePorts(t, 4)
	env := []string{"PETSTORE_DB=" + dsn, "PETSTORE_REDIS_URL=" + testRedisURL(), "PETSTORE_ENV=staging",
		"PETSTORE_DRAIN_DELAY=" + clusterDrainDelay.String(), "PETSTORE_LOG_LEVEL=warn", "PETSTORE_TRUSTED_PROXIES=127.0.0.1"}
	instances := make([]*instance, 3)
	for i := range instances {
		instances[i] = startInstance(t, i, ports[i], env)
	}
	lb := startHAProxy(t, haproxy, ports)
	for i := range instances {
		lb.waitState(t, i, "UP")
	}
	checkMetricsHidden(t, fmt.Sprintf("http://127.0.0.1:%d", ports[3]))

	load := startClusterLoad(fmt.Sprintf("http://127.0.0.1:%d", ports[3]), key, 32, 20*time.Millisecond)
	time.Sleep(time.Second)
	for i, in := range instances {
		signalled := time.Now()
		in.signal(t)
		lb.waitState(t, i, "DOWN")
		down := time.Since(signalled)
		in.wait(t)
		exited := time.Since(signalled)
		instances[i] = startInstance(t, i, ports[i], env)
		lb.waitState(t, i, "UP")
		t.Logf("petstore%d: out of rotation after %v, exited after %v, back in rotation after %v",
			i+1, down.Round(time.Millisecond), exited.Round(time.Millisecond), time.Since(signalled).Round(time.Millisecond))
		time.Sleep(500 * time.Millisecond) // the whole cluster serves before the next restart
	}
	res := load.stop()

	t.Logf("%d POSTs through HAProxy during three rolling restarts: %d answered 201, %d failed", res.requests, len(res.acked), res.failures)
	for _, err := range res.errors {
		t.Errorf("failed request: %v", err)
	}
	if res.failures > 0 {
		t.Errorf("%d requests failed; want none", res.failures)
	}
	checkAcked(t, res.acked, storedPets(t, dsn))
}

// testRedisURL returns the Redis server of the tests.
func testRedisURL() string {
	if url := os.Getenv("PETSTORE_TEST_REDIS"); url != "" {
		return url
	}
	return dbtest.DefaultRedis
}

// clusterKey creates an enterprise key with limits the load never reaches in the database dsn
// and returns it. Its id is random, so that the instances' rate-limit state in the shared Redis
// (under the default prefix, "{rl:k:ID}") meets no one else's; it is deleted at the end.
func clusterKey(t *testing.T, dsn string) string {
	t.Helper()
	rdb, _ := dbtest.Redis(t) // skips or fails when Redis is unreachable
	if _, err := runCmd(t, dsn, "migrate"); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(context.Background(), dsn, store.DefaultPool)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	id := 1_000_000_000 + rand.Int64N(1_000_000_000_000)
	if err := db.Exec(fmt.Sprintf("ALTER TABLE api_keys AUTO_INCREMENT = %d", id)).Error; err != nil {
		t.Fatal(err)
	}
	out, err := runCmd(t, dsn, "keys", "create", "--plan", "enterprise", "--per-minute", "100000000", "--per-day", "1000000000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Del(context.Background(), fmt.Sprintf("{rl:k:%d}", id)) })
	return lastLine(out)
}

// freePorts returns n loopback ports that were free a moment ago.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	ports := make([]int, n)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = ln.Addr().(*net.TCPAddr).Port
		defer ln.Close()
	}
	return ports
}

// instance is one `petstore serve` process.
type instance struct {
	cmd    *exec.Cmd
	exited chan error
}

// startInstance runs `petstore serve` (the test binary acting as it) on port with env, its log
// in the test's directory, and returns once it listens.
func startInstance(t *testing.T, n, port int, env []string) *instance {
	t.Helper()
	logs, err := os.OpenFile(filepath.Join(t.TempDir(), "petstore.log"), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	cmd := exec.Command(os.Args[0], "serve")
	cmd.Env = append(os.Environ(), append(env, "PETSTORE_TEST_AS_BINARY=1", fmt.Sprintf("PETSTORE_ADDR=127.0.0.1:%d", port))...)
	cmd.Stderr = logs
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	in := &instance{cmd: cmd, exited: make(chan error, 1)}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	readStartup(t, bufio.NewScanner(stdout))
	go func() { in.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(logs.Name())
			t.Logf("petstore%d's log:\n%s", n+1, b)
		}
	})
	return in
}

// signal sends SIGTERM to the instance.
func (in *instance) signal(t *testing.T) {
	t.Helper()
	if err := in.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}

// wait waits for the instance to exit after SIGTERM, cleanly and within its drain delay and
// shutdown timeout.
func (in *instance) wait(t *testing.T) {
	t.Helper()
	select {
	case err := <-in.exited:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v", err)
		}
	case <-time.After(clusterDrainDelay + 20*time.Second):
		t.Fatal("the instance did not exit after SIGTERM")
	}
}

// loadBalancer is the HAProxy process.
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

// clusterLoad is POSTs sent by concurrent workers through the balancer.
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
