package dbtest

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisCluster is a Redis Cluster of three primaries (no replicas) that a test started on free
// loopback ports with redis-server, each node in a directory of its own, without persistence.
// It is stopped when the test ends. The machine's own Redis is never touched.
type RedisCluster struct {
	Addrs []string // the nodes' addresses, host:port
	nodes []*redisProcess
}

// NewRedisCluster starts a three-node Redis Cluster for tb and waits until it serves every slot.
// It skips tb, or fails it where services are required, when redis-server or redis-cli is not
// installed.
func NewRedisCluster(tb testing.TB) *RedisCluster {
	tb.Helper()
	cli := redisBinaries(tb)
	c := &RedisCluster{}
	for i := range 3 {
		p := startRedisConf(tb, filepath.Join(tb.TempDir(), fmt.Sprint("node", i)), "", true,
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			// A stopped primary is declared failed after a second: the cluster then refuses
			// every key (cluster-require-full-coverage) until it returns.
			"--cluster-node-timeout", "1000")
		c.nodes = append(c.nodes, p)
		c.Addrs = append(c.Addrs, p.addr)
	}
	args := append(append([]string{"--cluster", "create"}, c.Addrs...), "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		tb.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	c.WaitHealthy(tb)
	return c
}

// URL returns the PETSTORE_REDIS_URL of the cluster: its first node, the others as addr=.
func (c *RedisCluster) URL() string {
	return "redis://" + c.Addrs[0] + "?addr=" + strings.Join(c.Addrs[1:], "&addr=")
}

// Client returns a cluster client with short timeouts, closed when tb ends.
func (c *RedisCluster) Client(tb testing.TB) *redis.ClusterClient {
	tb.Helper()
	client := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: c.Addrs, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: 1, DialerRetries: 1,
	})
	tb.Cleanup(func() { _ = client.Close() })
	return client
}

// Stop kills node i (SIGKILL: no goodbye to the others).
func (c *RedisCluster) Stop(tb testing.TB, i int) {
	tb.Helper()
	c.nodes[i].stop()
}

// Restart starts node i again, on its port and with its nodes.conf, and waits until the
// cluster serves every slot again. Its data is gone (no persistence); its slots are its own.
func (c *RedisCluster) Restart(tb testing.TB, i int) {
	tb.Helper()
	c.nodes[i].start(tb)
	c.WaitHealthy(tb)
}

// WaitHealthy waits until every node reports cluster_state:ok and all 16,384 slots served.
func (c *RedisCluster) WaitHealthy(tb testing.TB) {
	tb.Helper()
	for _, addr := range c.Addrs {
		waitFor(tb, "cluster_state:ok at "+addr, func(ctx context.Context, client *redis.Client) bool {
			info, err := client.ClusterInfo(ctx).Result()
			return err == nil && strings.Contains(info, "cluster_state:ok") &&
				strings.Contains(info, "cluster_slots_ok:16384") && strings.Contains(info, "cluster_known_nodes:3")
		}, addr)
	}
}

// StartRedis starts a lone redis-server for tb on a free loopback port, with the extra
// arguments given (such as "--requirepass", "pw"), stopped when tb ends, and returns its
// address. It skips tb, or fails it where services are required, when redis-server is not
// installed.
func StartRedis(tb testing.TB, extra ...string) string {
	tb.Helper()
	return NewRedisServer(tb, extra...).Addr
}

// RedisServer is a lone redis-server that a test started on a free loopback port, without
// persistence, and may stop and start again; it is stopped when the test ends. The machine's
// own Redis is never touched.
type RedisServer struct {
	Addr string // host:port
	p    *redisProcess
}

// NewRedisServer starts a lone redis-server for tb with the extra arguments given, as
// StartRedis does.
func NewRedisServer(tb testing.TB, extra ...string) *RedisServer {
	tb.Helper()
	redisBinaries(tb)
	p := startRedis(tb, tb.TempDir(), extra...)
	return &RedisServer{Addr: p.addr, p: p}
}

// URL returns the PETSTORE_REDIS_URL of the server.
func (s *RedisServer) URL() string { return "redis://" + s.Addr + "/0" }

// Stop kills the server (SIGKILL).
func (s *RedisServer) Stop(tb testing.TB) {
	tb.Helper()
	s.p.stop()
}

// Restart starts the server again on its port, empty (no persistence), and waits until it
// answers.
func (s *RedisServer) Restart(tb testing.TB) {
	tb.Helper()
	s.p.start(tb)
}
