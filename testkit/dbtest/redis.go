package dbtest

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultRedis is the server tests use when PETSTORE_TEST_REDIS is unset: the local Redis, in
// its database 15, so that database 0, where a developer's own data lives, is never touched.
const DefaultRedis = "redis://127.0.0.1:6379/15"

// RedisURL returns the PETSTORE_REDIS_URL of the test Redis server: PETSTORE_TEST_REDIS, else
// DefaultRedis.
func RedisURL() string {
	if url := os.Getenv("PETSTORE_TEST_REDIS"); url != "" {
		return url
	}
	return DefaultRedis
}

// Redis returns a client of the test Redis server (PETSTORE_TEST_REDIS), closed when tb ends,
// and a key prefix of tb's own (test:, this run's name, and tb's), so that tests sharing the
// server never meet; every key under the prefix is deleted when tb ends. It skips tb, or fails
// it where services are required, when the server is unreachable.
func Redis(tb testing.TB) (*redis.Client, string) {
	tb.Helper()
	url := RedisURL()
	opts, err := redis.ParseURL(url)
	if err != nil {
		tb.Fatalf("PETSTORE_TEST_REDIS: %v", err)
	}
	c := redis.NewClient(opts)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		Unreachable(tb, described("Redis", "PETSTORE_TEST_REDIS", url), err)
	}
	usedRedis.Store(true)
	prefix := "test:" + run + ":" + randomHex(4) + ":"
	tb.Cleanup(func() {
		ctx := context.Background()
		// Keys are hash-tagged, so a prefix may sit behind a "{".
		for _, pattern := range []string{prefix + "*", "{" + prefix + "*"} {
			iter := c.Scan(ctx, 0, pattern, 100).Iterator()
			for iter.Next(ctx) {
				c.Del(ctx, iter.Val())
			}
		}
		_ = c.Close()
	})
	return c, prefix
}

// RedisCPU returns the user and system CPU time the server of rdb has used (INFO cpu), the
// work a benchmark gave it; 0 for a nil rdb.
func RedisCPU(tb testing.TB, rdb *redis.Client) time.Duration {
	tb.Helper()
	if rdb == nil {
		return 0
	}
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		tb.Fatalf("INFO cpu: %v", err)
	}
	var total time.Duration
	for line := range strings.Lines(info) {
		name, value, _ := strings.Cut(strings.TrimSpace(line), ":")
		if name == "used_cpu_user" || name == "used_cpu_sys" {
			sec, err := strconv.ParseFloat(value, 64)
			if err != nil {
				tb.Fatalf("INFO cpu: %s: %v", line, err)
			}
			total += time.Duration(sec * float64(time.Second))
		}
	}
	return total
}
