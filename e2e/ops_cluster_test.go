//go:build cluster

package e2e

import (
	"fmt"
	"os/exec"
	"testing"
	"time"

	"petstore/testkit/dbtest"
)

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
	env := clusterEnv(dsn)
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
