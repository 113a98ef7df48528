package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"petstore/app"
	"petstore/auth"
	"petstore/testkit/dbtest"
)

// TestRedisClusterService runs two instances of the service, each with its own client made by
// openRedis from PETSTORE_REDIS_URL naming a real three-node cluster: a query persisted through
// one is known to the other, and six keys, spread over the cluster's slots, each get exactly
// their budget across both.
func TestRedisClusterService(t *testing.T) {
	t.Parallel()
	c := dbtest.NewRedisCluster(t)
	cfg := app.DefaultConfig()
	cfg.RedisURL = c.URL()
	db := dbtest.New(t, "sqlite")
	var apis []*testAPI
	for range 2 {
		rdb, err := app.OpenRedis(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rdb.Close() })
		if _, ok := rdb.(*redis.ClusterClient); !ok {
			t.Fatalf("app.OpenRedis(%s): got a %T; want a *redis.ClusterClient", cfg.RedisURL, rdb)
		}
		h, err := newHandler(cfg, db, rdb)
		if err != nil {
			t.Fatal(err)
		}
		apis = append(apis, &testAPI{h: h, db: db, cfg: cfg, v: validator(t, h)})
	}
	apis[0].key = apis[0].createKey(t, auth.KeySpec{Plan: "business"})
	apis[1].key = apis[0].key

	t.Run("persisted queries are shared", func(t *testing.T) {
		for i := range 6 { // six hashes: their keys sit on several nodes
			query := fmt.Sprintf("query Q%d { pets(limit: %d) { id } }", i, i+1)
			sum := sha256.Sum256([]byte(query))
			hash := hex.EncodeToString(sum[:])
			if got := apqCall(t, apis[1], "", hash); !strings.Contains(got, "PERSISTED_QUERY_NOT_FOUND") {
				t.Fatalf("hash %d before it was sent: got %s; want PERSISTED_QUERY_NOT_FOUND", i, got)
			}
			if got := apqCall(t, apis[0], query, hash); got != `{"data":{"pets":[]},"extensions":{"cost":1}}` {
				t.Fatalf("query %d with its hash: got %s", i, got)
			}
			if got := apqCall(t, apis[1], "", hash); got != `{"data":{"pets":[]},"extensions":{"cost":1}}` {
				t.Errorf("hash %d on the other instance: got %s; want the query's answer", i, got)
			}
		}
	})

	t.Run("limits are exact", func(t *testing.T) {
		awayFromMinuteEdge(t)
		for k := range 6 {
			apis[0].key = apis[0].createKey(t, auth.KeySpec{Plan: "enterprise", PerMinute: 10, PerDay: 100})
			if ok := admitted(t, apis, apis[0].key, 25); ok != 10 {
				t.Errorf("key %d: admitted %d of 25; want 10", k, ok)
			}
		}
	})
}

// apqCall sends an automatic persisted query (query may be empty) and returns the body.
func apqCall(t *testing.T, api *testAPI, query, hash string) string {
	t.Helper()
	body := map[string]any{"extensions": map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hash}}}
	if query != "" {
		body["query"] = query
	}
	b, _ := json.Marshal(body)
	return strings.TrimSpace(api.do(t, post("/v1/graphql", string(b))).body)
}

// admitted sends n concurrent requests with key, alternately to each instance, and returns
// how many were admitted; any answer but 200 or 429 fails t.
func admitted(t *testing.T, apis []*testAPI, key string, n int) int {
	t.Helper()
	var mu sync.Mutex
	ok := 0
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := get("/v1/pets?limit=1")
			r.header = http.Header{"Authorization": {"Bearer " + key}}
			resp := apis[i%len(apis)].do(t, r)
			mu.Lock()
			defer mu.Unlock()
			switch resp.status {
			case http.StatusOK:
				ok++
			case http.StatusTooManyRequests:
			default:
				t.Errorf("got %d %s", resp.status, resp.body)
			}
		})
	}
	wg.Wait()
	return ok
}

// TestOpenRedisChecks checks the start-up check of PETSTORE_REDIS_URL against real servers: a
// Redis that answers but cannot work as named stops the start with an error saying what is
// wrong; one that does not answer stops it only under PETSTORE_RATELIMIT_FAIL_OPEN=false. No
// error shows the password.
func TestOpenRedisChecks(t *testing.T) {
	t.Parallel()
	c := dbtest.NewRedisCluster(t)
	plain, _ := dbtest.Redis(t)
	lone := plain.Options().Addr
	locked := dbtest.StartRedis(t, "--requirepass", "Right1pw")
	nobody := freeAddr(t)
	tests := []struct {
		name     string
		url      string
		failOpen bool
		want     string // in the error; empty: a client and no error
	}{
		{"cluster", c.URL(), true, ""},
		{"cluster behind one address", "redis://" + c.Addrs[1] + "?cluster=true", true, ""},
		{"one node of a cluster named as a server", "redis://" + c.Addrs[0] + "/0", true, "is a node of a Redis Cluster"},
		{"a lone server named as a cluster", "redis://" + lone + "?cluster=true", true, "cluster support disabled"},
		{"wrong password", "redis://:Sekr3tPw@" + locked + "/0", true, "WRONGPASS"},
		{"no password", "redis://" + locked + "/0", true, "NOAUTH"},
		{"right password", "redis://:Right1pw@" + locked + "/0", true, ""},
		{"nobody there, fail open", "redis://" + nobody + "/0", true, ""},
		{"nobody there, fail closed", "redis://:Sekr3tPw@" + nobody + "/0", false, "PETSTORE_RATELIMIT_FAIL_OPEN=false"},
		{"cluster with nobody there, fail closed", "redis://" + nobody + "?addr=" + freeAddr(t), false, "does not answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := app.DefaultConfig()
			cfg.RedisURL, cfg.RateLimit.FailOpen = tt.url, tt.failOpen
			rdb, err := app.OpenRedis(context.Background(), cfg)
			if rdb != nil {
				defer rdb.Close()
			}
			switch {
			case tt.want == "" && (err != nil || rdb == nil):
				t.Fatalf("got %v, %v; want a client", rdb, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got error %v; want one containing %q", err, tt.want)
			case err != nil && strings.Contains(err.Error(), "Sekr3t"):
				t.Errorf("error %q shows the password", err)
			}
			if err == nil {
				if o, ok := rdb.(*redis.Client); ok && o.Options().DialerRetries != 1 {
					t.Errorf("DialerRetries: got %d; want 1 (a stopped Redis must fail fast)", o.Options().DialerRetries)
				}
			}
		})
	}
}

// freeAddr returns a loopback address where nothing listens.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestRedisSentinelService runs the service on PETSTORE_REDIS_URL naming a Sentinel-watched
// primary: a key's budget is counted there; with the primary killed, requests are admitted
// uncounted (fail open) until the Sentinel has promoted the replica, which goes on counting
// where the primary stopped.
func TestRedisSentinelService(t *testing.T) {
	t.Parallel()
	s := dbtest.NewRedisSentinel(t)
	cfg := app.DefaultConfig()
	cfg.RedisURL = s.URL()
	rdb, err := app.OpenRedis(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	db := dbtest.New(t, "sqlite")
	h, err := newHandler(cfg, db, rdb)
	if err != nil {
		t.Fatal(err)
	}
	api := &testAPI{h: h, db: db, cfg: cfg, v: validator(t, h)}
	api.key = api.createKey(t, auth.KeySpec{Plan: "enterprise", PerMinute: 10, PerDay: 100})
	awayFromMinuteEdge(t)
	remaining := func() string { return api.do(t, get("/v1/pets")).header.Get("X-RateLimit-Remaining") }
	for _, want := range []string{"9", "8", "7"} {
		if got := remaining(); got != want {
			t.Fatalf("Remaining: got %q; want %q", got, want)
		}
	}
	s.StopPrimary(t)
	stopped := time.Now()
	if got := remaining(); got != "10" {
		t.Errorf("primary down: Remaining %q; want 10 (admitted uncounted)", got)
	}
	deadline := time.Now().Add(20 * time.Second)
	got := remaining()
	for ; got == "10" && time.Now().Before(deadline); got = remaining() {
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("counted again %v after the primary stopped", time.Since(stopped).Round(time.Millisecond))
	if got != "6" {
		t.Errorf("after the failover: Remaining %q; want 6 (the replica's copy of the count)", got)
	}
}
