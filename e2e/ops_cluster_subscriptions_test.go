//go:build cluster

package e2e

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"petstore/testkit/dbtest"
)

// TestRollingRestartKeepsSubscriptions: a rolling deploy does not end live updates. Two
// instances run on one MariaDB database and the shared Redis behind HAProxy (deploy/haproxy.cfg
// as shipped; its third server is a port nothing listens on). The README's graphql-ws client and
// the graphql-sse client of docs/subscriptions.md, as written but for their address (HAProxy's),
// subscribe through HAProxy while only the first instance is in rotation; then pets are created
// at about 20 a second directly on the second instance, and the first is restarted with SIGTERM
// and its drain delay, as a deployment does. Both clients must reconnect through HAProxy and
// resume with the after of the last pet they printed: each prints every pet answered 201 once,
// in id order, and is still running at the end.
func TestRollingRestartKeepsSubscriptions(t *testing.T) {
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		dbtest.Unreachable(t, "haproxy (Debian package haproxy)", err)
	}
	node, modules := nodePackages(t, dbtest.Required(), "make cluster-test")
	snippets := []struct{ name, doc string }{{"graphql-ws", "../README.md"}, {"graphql-sse", "../docs/subscriptions.md"}}
	dsn := dbtest.DSN(t, "mysql")
	key := clusterKey(t, dsn)
	env := clusterEnv(dsn)
	ports := freePorts(t, 4) // the restarted instance, the loaded one, one never started, HAProxy
	bases := []string{fmt.Sprintf("http://127.0.0.1:%d", ports[0]), fmt.Sprintf("http://127.0.0.1:%d", ports[1])}

	first := startInstance(t, 0, ports[0], env)
	lb := startHAProxy(t, haproxy, ports)
	lb.waitState(t, 0, "UP")
	lb.waitState(t, 1, "DOWN") // not started yet: the clients can only land on the first
	lb.waitState(t, 2, "DOWN")
	clients := make([]*petClient, len(snippets))
	for i, s := range snippets {
		code := strings.ReplaceAll(jsSnippet(t, s.doc, s.name), "localhost:8080", fmt.Sprintf("127.0.0.1:%d", ports[3]))
		clients[i] = startPetClient(t, s.name, node, modules, code, key)
		clients[i].p.waitSubscribed(t, bases[0], i+1, s.name+" (through HAProxy)")
	}
	startInstance(t, 1, ports[1], env)
	lb.waitState(t, 1, "UP")
	checkLanded(t, bases, []int{len(clients), 0})

	load := startClusterLoad(bases[1], key, 1, 70*time.Millisecond) // about 20 POSTs a second
	started := time.Now()
	for _, c := range clients {
		c.waitPrinted(t, 1) // live updates flow, from the second instance through Redis
	}
	signalled := time.Now()
	first.signal(t)
	lb.waitState(t, 0, "DOWN")
	first.wait(t)
	exited := time.Since(signalled)
	startInstance(t, 0, ports[0], env)
	lb.waitState(t, 0, "UP")
	t.Logf("petstore1: SIGTERM, its connections closed after the drain delay (%v), exited after %v, back in rotation after %v",
		clusterDrainDelay, exited.Round(time.Millisecond), time.Since(signalled).Round(time.Millisecond))
	waitResubscribed(t, bases, clients, signalled)
	time.Sleep(3 * time.Second)
	res := load.stop()
	elapsed := time.Since(started)

	t.Logf("%d pets answered 201 on petstore2 in %v (%.1f a second), %d POSTs failed",
		len(res.acked), elapsed.Round(time.Millisecond), float64(len(res.acked))/elapsed.Seconds(), res.failures)
	for _, err := range res.errors {
		t.Errorf("failed request (the comparison below needs every POST answered): %v", err)
	}
	acked := slices.Sorted(slices.Values(res.acked))
	for _, c := range clients {
		c.waitCaughtUp(acked[len(acked)-1], 30*time.Second)
	}
	for _, c := range clients {
		c.check(t, acked)
	}
}

// jsSnippet returns the one js block of the Markdown document at path that imports pkg.
func jsSnippet(t *testing.T, path, pkg string) string {
	t.Helper()
	var found []string
	for _, f := range readFences(t, path) {
		if f.lang == "js" && strings.Contains(f.body, "from '"+pkg+"'") {
			found = append(found, f.body)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s: %d js blocks import %s; want 1", path, len(found), pkg)
	}
	return found[0]
}

// checkLanded checks that the instances at bases count the subscriptions want.
func checkLanded(t *testing.T, bases []string, want []int) {
	t.Helper()
	for i, base := range bases {
		if n := activeSubscriptions(t, base); n != want[i] {
			t.Fatalf("petstore%d counts %d subscriptions; want %d", i+1, n, want[i])
		}
	}
}

// waitResubscribed waits, at most 30 s, until the instances at bases count together a
// subscription for each client, and logs when, since signalled, and where. A client that exited
// will not come back: that fails t, as does the wait running out.
func waitResubscribed(t *testing.T, bases []string, clients []*petClient, signalled time.Time) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var counts []int
		for _, base := range bases {
			counts = append(counts, activeSubscriptions(t, base))
		}
		total := 0
		for _, n := range counts {
			total += n
		}
		if total == len(clients) {
			t.Logf("every client subscribed again %v after SIGTERM: petstore1 counts %d, petstore2 %d",
				time.Since(signalled).Round(time.Millisecond), counts[0], counts[1])
			return
		}
		for _, c := range clients {
			if !c.running() {
				t.Errorf("%s exited after the restart, having printed %d pets", c.name, c.printed())
				return
			}
		}
		if time.Now().After(deadline) {
			t.Errorf("30 s after the restart, the instances count %v subscriptions; want %d in all", counts, len(clients))
			return
		}
	}
}
