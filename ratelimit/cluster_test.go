package ratelimit

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"petstore/apierr"
	"petstore/auth"
	"petstore/testkit/dbtest"
)

// clusterKeys is how many keys the cluster tests use: enough for every primary to hold several.
const clusterKeys = 24

// clusterInstance is one instance of the service's limiter against the cluster: its own client,
// store and router.
type clusterInstance struct {
	store *RedisCounters
	lim   *Limiter
	h     http.Handler
}

// newClusterInstances returns n limiter instances on the cluster, each with its own cluster
// client, sharing prefix and one fake clock (so that a minute boundary of the real clock cannot
// reset the counts in the middle of a test).
func newClusterInstances(t *testing.T, c *dbtest.RedisCluster, cfgs ...Config) []clusterInstance {
	t.Helper()
	clock := newFakeClock()
	prefix := "test:" + strconv.FormatInt(clock.Now().UnixNano(), 36) + ":"
	plans := map[int64]auth.Plan{}
	for id := int64(1); id <= clusterKeys; id++ {
		plans[id] = auth.Free
	}
	var out []clusterInstance
	for _, cfg := range cfgs {
		s := NewRedisCounters(c.Client(t), prefix, nil)
		s.clock = clock.Now
		lim := newLimiter(t, cfg, s)
		out = append(out, clusterInstance{store: s, lim: lim, h: newRouter(t, lim, plans)})
	}
	return out
}

// keysByNode returns the test keys by the address of the primary that serves their slot, and
// fails the test unless every primary serves some.
func keysByNode(t *testing.T, c *dbtest.RedisCluster, s *RedisCounters) map[string][]int64 {
	t.Helper()
	client := c.Client(t)
	out := map[string][]int64{}
	for id := int64(1); id <= clusterKeys; id++ {
		node, err := client.MasterForKey(context.Background(), s.key(KeySubject(id)))
		if err != nil {
			t.Fatal(err)
		}
		out[node.Options().Addr] = append(out[node.Options().Addr], id)
	}
	for _, addr := range c.Addrs {
		if len(out[addr]) < 3 {
			t.Fatalf("primary %s serves %d of the %d keys; want at least 3: %v", addr, len(out[addr]), clusterKeys, out)
		}
	}
	return out
}

// TestRedisClusterLimitsExact sends 100 concurrent requests for each of 24 free-plan keys (60 a
// minute), spread over the slots of all three primaries, through two limiter instances with a
// cluster client each: every key gets exactly 60.
func TestRedisClusterLimitsExact(t *testing.T) {
	c := dbtest.NewRedisCluster(t)
	inst := newClusterInstances(t, c, testConfig(), testConfig())
	keysByNode(t, c, inst[0].store)

	const perKey = 100
	var mu sync.Mutex
	admitted := map[int64]int{}
	var wg sync.WaitGroup
	for id := int64(1); id <= clusterKeys; id++ {
		for i := range perKey {
			wg.Go(func() {
				w := serve(inst[i%2].h, req{key: id})
				mu.Lock()
				defer mu.Unlock()
				switch w.Code {
				case http.StatusOK:
					admitted[id]++
				case http.StatusTooManyRequests:
				default:
					t.Errorf("key %d: got %d %s", id, w.Code, w.Body)
				}
			})
		}
	}
	wg.Wait()
	for id := int64(1); id <= clusterKeys; id++ {
		if admitted[id] != int(auth.Free.PerMinute) {
			t.Errorf("key %d: admitted %d of %d; want %d", id, admitted[id], perKey, auth.Free.PerMinute)
		}
	}
	for i, in := range inst {
		if n := in.lim.StoreErrors(); n != 0 {
			t.Errorf("instance %d: %d store errors; want 0", i, n)
		}
	}
}

// TestRedisClusterNodeDown stops a primary: the keys of its slots get the configured failure
// policy at once (fail open: admitted uncounted; fail closed: 503), then, once the cluster has
// declared it failed, every key does (the cluster refuses all slots without full coverage).
// The primary restarts on its port with its nodes.conf: every key is decided by Redis again,
// the others' counts intact, its own keys' counts lost with its memory.
func TestRedisClusterNodeDown(t *testing.T) {
	c := dbtest.NewRedisCluster(t)
	open, closed := testConfig(), testConfig()
	open.FailOpen, closed.FailOpen = true, false
	inst := newClusterInstances(t, c, open, closed)
	byNode := keysByNode(t, c, inst[0].store)
	down, up := byNode[c.Addrs[0]][0], byNode[c.Addrs[1]][0]
	for _, id := range []int64{down, up} { // one request each, counted
		for _, in := range inst {
			check(t, serve(in.h, req{key: id}), http.StatusOK, "", nil)
		}
	}

	c.Stop(t, 0)
	stopped := time.Now()
	failurePolicy(t, inst, down)
	// The cluster declares the primary failed and refuses every slot: another key of up's node
	// shows when (each request before that is counted), then up gets the policy too.
	waitForPolicy(t, inst, byNode[c.Addrs[1]][1])
	t.Logf("every key refused %v after the primary stopped", time.Since(stopped).Round(time.Millisecond))
	failurePolicy(t, inst, up)

	c.Restart(t, 0)
	waitForStore(t, inst[0].h, down, "59") // forgotten: a fresh budget
	check(t, serve(inst[1].h, req{key: down}), http.StatusOK, "", map[string]string{"X-RateLimit-Remaining": "58"})
	waitForStore(t, inst[0].h, up, "57") // two before the stop, counted still
	if inst[0].lim.StoreErrors() == 0 || inst[1].lim.StoreErrors() == 0 {
		t.Errorf("store errors: got %d and %d; want some on each instance", inst[0].lim.StoreErrors(), inst[1].lim.StoreErrors())
	}
}

// failurePolicy checks that key id gets each instance's failure policy: admitted with the full
// quota in the headers (nothing counted), or 503 unavailable.
func failurePolicy(t *testing.T, inst []clusterInstance, id int64) {
	t.Helper()
	check(t, serve(inst[0].h, req{key: id}), http.StatusOK, "", map[string]string{"X-RateLimit-Remaining": "60"})
	check(t, serve(inst[1].h, req{key: id}), http.StatusServiceUnavailable, apierr.Unavailable, map[string]string{"Retry-After": "1"})
}

// waitForPolicy waits until key id gets each instance's failure policy.
func waitForPolicy(t *testing.T, inst []clusterInstance, id int64) {
	t.Helper()
	waitUntil(t, "the failure policy for key "+strconv.FormatInt(id, 10), func() bool {
		return serve(inst[1].h, req{key: id}).Code == http.StatusServiceUnavailable
	})
	failurePolicy(t, inst, id)
}

// waitForStore waits until a request of key id is decided by Redis with the wanted Remaining.
func waitForStore(t *testing.T, h http.Handler, id int64, remaining string) {
	t.Helper()
	var last string
	waitUntil(t, "key "+strconv.FormatInt(id, 10)+" decided by Redis", func() bool {
		w := serve(h, req{key: id})
		last = w.Header().Get("X-RateLimit-Remaining")
		return w.Code == http.StatusOK && last != "60"
	})
	if last != remaining {
		t.Errorf("key %d after recovery: Remaining %q; want %q", id, last, remaining)
	}
}

// waitUntil polls ok every 20 ms for at most 10 seconds.
func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
