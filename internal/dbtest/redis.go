package dbtest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultRedis is the server tests use when PETSTORE_TEST_REDIS is unset.
const DefaultRedis = "redis://127.0.0.1:6379/0"

// Redis returns a client of the test Redis server (PETSTORE_TEST_REDIS), closed when tb ends,
// and a key prefix of tb's own, so that tests sharing the server never meet. It skips tb, or
// fails it where services are required, when the server is unreachable.
func Redis(tb testing.TB) (*redis.Client, string) {
	tb.Helper()
	url := os.Getenv("PETSTORE_TEST_REDIS")
	if url == "" {
		url = DefaultRedis
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		tb.Fatalf("PETSTORE_TEST_REDIS: %v", err)
	}
	c := redis.NewClient(opts)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		Unreachable(tb, "Redis at "+url, err)
	}
	prefix := "test:" + randomHex(6) + ":"
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
