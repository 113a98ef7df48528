package dbtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// SentinelMaster is the name under which NewRedisSentinel's Sentinel knows its primary.
const SentinelMaster = "petstore"

// RedisSentinel is a primary, its replica and one Sentinel watching them (quorum 1), started by
// a test on free loopback ports without persistence and stopped when it ends.
type RedisSentinel struct {
	Sentinel string // the Sentinel's address
	nodes    []*redisProcess
}

// NewRedisSentinel starts a primary, a replica in sync with it and a Sentinel that knows both
// and declares the primary down after a second without answer. It skips tb, or fails it where
// services are required, when redis-server is not installed.
func NewRedisSentinel(tb testing.TB) *RedisSentinel {
	tb.Helper()
	redisBinaries(tb)
	primary := startRedis(tb, filepath.Join(tb.TempDir(), "primary"))
	replica := startRedis(tb, filepath.Join(tb.TempDir(), "replica"), "--replicaof", "127.0.0.1", port(primary.addr))
	waitFor(tb, "the replica in sync", func(ctx context.Context, c *redis.Client) bool {
		info, err := c.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "master_link_status:up")
	}, replica.addr)
	dir := filepath.Join(tb.TempDir(), "sentinel")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	conf := filepath.Join(dir, "sentinel.conf")
	body := fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]s 1\nsentinel down-after-milliseconds %[1]s 1000\n"+
		"sentinel failover-timeout %[1]s 5000\n", SentinelMaster, port(primary.addr))
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		tb.Fatal(err)
	}
	sentinel := startRedisConf(tb, dir, conf, false, "--sentinel")
	waitFor(tb, "the Sentinel to know the replica", func(ctx context.Context, c *redis.Client) bool {
		replicas, err := c.Do(ctx, "SENTINEL", "REPLICAS", SentinelMaster).Slice()
		return err == nil && len(replicas) == 1
	}, sentinel.addr)
	return &RedisSentinel{Sentinel: sentinel.addr, nodes: []*redisProcess{primary, replica, sentinel}}
}

// URL returns the PETSTORE_REDIS_URL of the Sentinel's primary.
func (s *RedisSentinel) URL() string {
	return "redis://" + s.Sentinel + "?master_name=" + SentinelMaster
}

// StopPrimary kills the first primary: the Sentinel promotes the replica about a second later.
func (s *RedisSentinel) StopPrimary(tb testing.TB) {
	tb.Helper()
	s.nodes[0].stop()
}

// port returns the port of a host:port address.
func port(addr string) string { return addr[strings.LastIndexByte(addr, ':')+1:] }
