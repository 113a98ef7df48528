package e2e

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"petstore/store"
	"petstore/testkit/dbtest"
)

// clusterDrainDelay is the instances' PETSTORE_DRAIN_DELAY: above the time deploy/haproxy.cfg
// takes to mark an instance down (inter 500ms x fall 2).
const clusterDrainDelay = 2 * time.Second

// clusterEnv returns the settings of an instance on the database dsn and the shared Redis, with
// the drain delay a deployment behind HAProxy needs.
func clusterEnv(dsn string) []string {
	return []string{"PETSTORE_DB=" + dsn, "PETSTORE_REDIS_URL=" + dbtest.RedisURL(), "PETSTORE_ENV=staging",
		"PETSTORE_DRAIN_DELAY=" + clusterDrainDelay.String(), "PETSTORE_LOG_LEVEL=warn", "PETSTORE_TRUSTED_PROXIES=127.0.0.1"}
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
