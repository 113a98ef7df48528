package ratelimit

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"petstore/apierr"
	"petstore/auth"
	"petstore/testkit/faultproxy"
)

// TestRedisFailure cuts the connection to Redis (through a loopback proxy; the server itself
// keeps running) and checks the failure policy, the counter, the log lines and the recovery.
func TestRedisFailure(t *testing.T) {
	tests := []struct {
		name       string
		failOpen   bool
		wantStatus int
		wantCode   apierr.Code
		wantRetry  string
	}{
		{"fail open", true, http.StatusOK, "", ""},
		{"fail closed", false, http.StatusServiceUnavailable, apierr.Unavailable, "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			proxy, s := proxiedStore(t)
			var logs lockedBuffer
			cfg := testConfig()
			cfg.FailOpen, cfg.Logger = tt.failOpen, slog.New(slog.NewTextHandler(&logs, nil))
			lim := newLimiter(t, cfg, s)
			h := newRouter(t, lim, map[int64]auth.Plan{1: auth.Free})

			check(t, serve(h, req{key: 1}), http.StatusOK, "", map[string]string{"X-RateLimit-Remaining": "59"})
			proxy.Cut()
			for range 3 { // the headers describe the full quota: nothing is counted
				check(t, serve(h, req{key: 1}), tt.wantStatus, tt.wantCode, map[string]string{
					"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "60", "Retry-After": tt.wantRetry,
				})
			}
			if got := lim.StoreErrors(); got != 3 {
				t.Errorf("StoreErrors: got %d; want 3", got)
			}
			proxy.Restore()
			waitForRemaining(t, h, "58") // the same budget as before the cut
			if got := strings.Count(logs.String(), "rate-limit store failed"); got != 1 {
				t.Errorf("failure log lines: got %d; want 1 (throttled)\n%s", got, logs.String())
			}
			if !strings.Contains(logs.String(), "rate-limit store answers again") {
				t.Errorf("logs: got %q; want a recovery line", logs.String())
			}
		})
	}
}

// waitForRemaining sends requests until one is decided by the store with the wanted Remaining.
func waitForRemaining(t *testing.T, h http.Handler, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		w := serve(h, req{key: 1})
		if w.Code == http.StatusOK && w.Header().Get("X-RateLimit-Remaining") == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no recovery within 5s: last status %d, Remaining %q; want 200, %q",
				w.Code, w.Header().Get("X-RateLimit-Remaining"), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// proxiedStore returns a RedisCounters on a fake clock whose client goes through a fault proxy, with
// short timeouts and no retries, as a production client of the limiter should be configured.
func proxiedStore(t *testing.T) (*faultproxy.Proxy, *RedisCounters) {
	t.Helper()
	opts := testRedisOptions(t)
	proxy := faultproxy.Start(t, opts.Addr)
	opts.Addr = proxy.Addr()
	opts.MaxRetries, opts.DialerRetries = -1, 1
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = time.Second, time.Second, time.Second
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	s := NewRedisCounters(c, testPrefix(t), nil)
	s.clock = newFakeClock().Now
	return proxy, s
}

// lockedBuffer is a bytes.Buffer safe for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
