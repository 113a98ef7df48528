package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The Redis tests use the real server at PETSTORE_TEST_REDIS (default redis://127.0.0.1:6379/0),
// each under its own key prefix, and delete their own keys afterwards; they never flush.

const defaultTestRedis = "redis://127.0.0.1:6379/0"

var sharedRedis struct {
	once   sync.Once
	client *redis.Client
	err    error
}

// testRedisOptions returns the options of the test server. When the server is unreachable the
// test is skipped, or fails when PETSTORE_TEST_REQUIRE_SERVICES=1 or CI=true.
func testRedisOptions(tb testing.TB) *redis.Options {
	tb.Helper()
	testRedis(tb) // skips or fails when unreachable
	return mustParseRedisURL(tb)
}

// testRedis returns a client of the test server shared by the package's tests, after the same
// reachability check as testRedisOptions.
func testRedis(tb testing.TB) *redis.Client {
	tb.Helper()
	opts := mustParseRedisURL(tb)
	sharedRedis.once.Do(func() {
		c := redis.NewClient(opts)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := c.Ping(ctx).Err(); err != nil {
			_ = c.Close()
			sharedRedis.err = err
			return
		}
		sharedRedis.client = c
	})
	if sharedRedis.err != nil {
		unreachable(tb, sharedRedis.err)
	}
	return sharedRedis.client
}

func mustParseRedisURL(tb testing.TB) *redis.Options {
	tb.Helper()
	url := os.Getenv("PETSTORE_TEST_REDIS")
	if url == "" {
		url = defaultTestRedis
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		tb.Fatalf("PETSTORE_TEST_REDIS=%q: %v", url, err)
	}
	return opts
}

func unreachable(tb testing.TB, err error) {
	tb.Helper()
	if os.Getenv("PETSTORE_TEST_REQUIRE_SERVICES") == "1" || os.Getenv("CI") == "true" {
		tb.Fatalf("test Redis unreachable (required): %v", err)
	}
	tb.Skipf("test Redis unreachable (set PETSTORE_TEST_REDIS): %v", err)
}

// testPrefix returns a fresh key prefix and deletes the keys under it when the test ends.
func testPrefix(tb testing.TB) string {
	tb.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	prefix := "rltest:" + hex.EncodeToString(b) + ":"
	c := testRedis(tb)
	tb.Cleanup(func() { deleteKeys(tb, c, "{"+prefix+"*") })
	return prefix
}

func deleteKeys(tb testing.TB, c *redis.Client, pattern string) {
	ctx := context.Background()
	iter := c.Scan(ctx, 0, pattern, 100).Iterator()
	for iter.Next(ctx) {
		c.Del(ctx, iter.Val())
	}
	if err := iter.Err(); err != nil {
		tb.Logf("deleting %s: %v", pattern, err)
	}
}

// awayFromEdge waits, when the real clock is within margin of the end of a window of length w,
// until that window has ended, so that a test using Redis TIME stays inside one window.
func awayFromEdge(tb testing.TB, w, margin time.Duration) {
	tb.Helper()
	now := time.Now()
	if left := now.Truncate(w).Add(w).Sub(now); left < margin {
		time.Sleep(left + 50*time.Millisecond)
	}
}
