package ratelimit

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"petstore/testkit/dbtest"
)

// The Redis tests use the real server at PETSTORE_TEST_REDIS (default redis://127.0.0.1:6379/15)
// through dbtest.Redis: each under its own key prefix, whose keys are deleted afterwards; they
// never flush. An unreachable server skips them, or fails them where services are required.

// testRedis returns a client of the test server, closed when tb ends.
func testRedis(tb testing.TB) *redis.Client {
	tb.Helper()
	c, _ := dbtest.Redis(tb)
	return c
}

// testRedisOptions returns the options of the test server, for tests that make clients of
// their own.
func testRedisOptions(tb testing.TB) *redis.Options {
	tb.Helper()
	return testRedis(tb).Options()
}

// testPrefix returns a fresh key prefix whose keys are deleted when the test ends.
func testPrefix(tb testing.TB) string {
	tb.Helper()
	_, prefix := dbtest.Redis(tb)
	return prefix
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
