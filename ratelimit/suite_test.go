package ratelimit

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/apierr"
	"petstore/auth"
)

// The suite: every test here runs against both stores through a real gin router, with the
// stores' clock pinned to a fake clock.

var (
	minuteEnd = time.Date(2030, 1, 2, 3, 5, 0, 0, time.UTC) // end of start's minute window
	dayEnd    = time.Date(2030, 1, 3, 0, 0, 0, 0, time.UTC) // end of start's day window
)

func TestCountdown(t *testing.T) {
	forEachStore(t, func(t *testing.T, clock *fakeClock, s Counters) {
		h := newRouter(t, newLimiter(t, testConfig(), s), map[int64]auth.Plan{1: auth.Free})
		for i := int64(1); i <= 3; i++ {
			check(t, serve(h, req{key: 1}), http.StatusOK, "", map[string]string{
				"X-RateLimit-Limit":     "60",
				"X-RateLimit-Remaining": strconv.FormatInt(60-i, 10),
				"X-RateLimit-Reset":     unix(minuteEnd),
				"RateLimit-Policy":      `"minute";q=60;w=60, "day";q=1000;w=86400`,
				"RateLimit":             fmt.Sprintf(`"minute";r=%d;t=55`, 60-i),
			})
		}
		clock.Advance(time.Minute) // the next minute: the minute window is full again
		check(t, serve(h, req{key: 1}), http.StatusOK, "", map[string]string{
			"X-RateLimit-Remaining": "59",
			"X-RateLimit-Reset":     unix(minuteEnd.Add(time.Minute)),
			"RateLimit":             `"minute";r=59;t=55`,
		})
	})
}

func TestDayWindowBinds(t *testing.T) {
	forEachStore(t, func(t *testing.T, clock *fakeClock, s Counters) {
		h := newRouter(t, newLimiter(t, testConfig(), s), map[int64]auth.Plan{1: {Name: "tiny", PerMinute: 10, PerDay: 25}})
		spend := func(n int) {
			for range n {
				check(t, serve(h, req{key: 1}), http.StatusOK, "", nil)
			}
		}
		minute := map[string]string{"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": unix(minuteEnd)}
		spend(9) // minute 1: 10 requests; minute 0 left, day 15 left
		check(t, serve(h, req{key: 1}), http.StatusOK, "", minute)
		clock.Advance(time.Minute)
		spend(10) // minute 2: day 5 left
		clock.Advance(time.Minute)
		check(t, serve(h, req{key: 1}), http.StatusOK, "", map[string]string{ // minute 9 left, day 4
			"X-RateLimit-Limit": "25", "X-RateLimit-Remaining": "4", "X-RateLimit-Reset": unix(dayEnd),
			"RateLimit": fmt.Sprintf(`"day";r=4;t=%d`, ceilSecs(dayEnd.Sub(clock.Now()))),
		})
		spend(4)
		w := serve(h, req{key: 1})
		check(t, w, http.StatusTooManyRequests, apierr.RateLimited, map[string]string{
			"X-RateLimit-Limit": "25", "X-RateLimit-Remaining": "0",
			"Retry-After": strconv.Itoa(ceilSecs(dayEnd.Sub(clock.Now()))),
		})
		if want := "25 requests per day"; !strings.Contains(w.Body.String(), want) {
			t.Errorf("message: got %s; want it to contain %q", w.Body, want)
		}
	})
}

func TestRetryAfterIsTruthful(t *testing.T) {
	tests := []struct {
		name       string
		plan       auth.Plan
		wantWindow string
	}{
		{"minute", auth.Plan{PerMinute: 3, PerDay: 1000}, "per minute"},
		{"day", auth.Plan{PerMinute: 100, PerDay: 3}, "per day"},
		{"both", auth.Plan{PerMinute: 3, PerDay: 3}, "per day"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, clock *fakeClock, s Counters) {
				h := newRouter(t, newLimiter(t, testConfig(), s), map[int64]auth.Plan{1: tt.plan})
				for range 3 {
					check(t, serve(h, req{key: 1}), http.StatusOK, "", nil)
				}
				w := serve(h, req{key: 1})
				check(t, w, http.StatusTooManyRequests, apierr.RateLimited, nil)
				if !strings.Contains(w.Body.String(), tt.wantWindow) {
					t.Errorf("message: got %s; want it to name %q", w.Body, tt.wantWindow)
				}
				secs, err := strconv.Atoi(w.Header().Get("Retry-After"))
				if err != nil || secs < 1 {
					t.Fatalf("Retry-After: got %q; want whole seconds >= 1", w.Header().Get("Retry-After"))
				}
				clock.Advance(time.Duration(secs-1) * time.Second)
				check(t, serve(h, req{key: 1}), http.StatusTooManyRequests, apierr.RateLimited, nil)
				clock.Advance(time.Second)
				check(t, serve(h, req{key: 1}), http.StatusOK, "", nil)
			})
		})
	}
}

func TestSuspension(t *testing.T) {
	forEachStore(t, func(t *testing.T, clock *fakeClock, s Counters) {
		cfg := testConfig()
		cfg.SuspendAfter, cfg.SuspendBase, cfg.SuspendMax, cfg.SuspendMemory = 3, 5*time.Minute, 20*time.Minute, time.Hour
		plan := auth.Plan{PerMinute: 1, PerDay: 1000}
		h := newRouter(t, newLimiter(t, cfg, s), map[int64]auth.Plan{1: plan, 2: plan})
		suspended := func(retryAfter int) {
			t.Helper()
			check(t, serve(h, req{key: 1}), http.StatusTooManyRequests, apierr.KeySuspended, map[string]string{
				"Retry-After": strconv.Itoa(retryAfter), "X-RateLimit-Remaining": "0",
				"X-RateLimit-Reset": strconv.FormatInt(ceilUnix(clock.Now().Add(time.Duration(retryAfter)*time.Second)), 10),
			})
		}
		provoke := func() { // one admitted request, two rate_limited, the third rejection suspends
			t.Helper()
			check(t, serve(h, req{key: 1}), http.StatusOK, "", nil)
			check(t, serve(h, req{key: 1}), http.StatusTooManyRequests, apierr.RateLimited, nil)
			check(t, serve(h, req{key: 1}), http.StatusTooManyRequests, apierr.RateLimited, nil)
		}
		provoke()
		suspended(300)
		check(t, serve(h, req{key: 2}), http.StatusOK, "", map[string]string{"X-RateLimit-Remaining": "0"})
		clock.Advance(100 * time.Second)
		for range 5 { // requests during the suspension do not extend it
			suspended(200)
		}
		clock.Advance(199 * time.Second)
		suspended(1)
		clock.Advance(time.Second) // it ends; the next suspensions double, up to the maximum
		for _, want := range []int{600, 1200, 1200} {
			provoke()
			suspended(want)
			clock.Advance(time.Duration(want) * time.Second)
		}
		clock.Advance(time.Hour) // past the memory: back to the base length
		provoke()
		suspended(300)
	})
}

func TestAnonymousBudgetIsSeparate(t *testing.T) {
	forEachStore(t, func(t *testing.T, clock *fakeClock, s Counters) {
		h := newRouter(t, newLimiter(t, testConfig(), s), map[int64]auth.Plan{1: auth.Free})
		anon := req{addr: "198.51.100.7:4000"}
		for i := 2; i >= 0; i-- { // the 401 of the require middleware still carries the headers
			check(t, serve(h, anon), http.StatusUnauthorized, apierr.Unauthorized, map[string]string{
				"X-RateLimit-Limit": "3", "X-RateLimit-Remaining": strconv.Itoa(i),
				"RateLimit-Policy": `"minute";q=3;w=60, "day";q=10;w=86400`,
			})
		}
		check(t, serve(h, anon), http.StatusTooManyRequests, apierr.RateLimited, nil)
		keyed := req{key: 1, addr: anon.addr}
		check(t, serve(h, keyed), http.StatusOK, "", map[string]string{"X-RateLimit-Remaining": "59"})
		check(t, serve(h, req{addr: "198.51.100.8:4000"}), http.StatusUnauthorized, "",
			map[string]string{"X-RateLimit-Remaining": "2"})
		check(t, serve(h, req{key: 1, addr: "198.51.100.8:4000"}), http.StatusOK, "",
			map[string]string{"X-RateLimit-Remaining": "58"})
		check(t, serve(h, req{addr: "198.51.100.8:4000"}), http.StatusUnauthorized, "",
			map[string]string{"X-RateLimit-Remaining": "1"})
	})
}

func TestHeadersOnServerErrors(t *testing.T) {
	forEachStore(t, func(t *testing.T, clock *fakeClock, s Counters) {
		h := newRouter(t, newLimiter(t, testConfig(), s), map[int64]auth.Plan{1: auth.Pro})
		check(t, serve(h, req{key: 1, path: "/v1/boom"}), http.StatusInternalServerError, apierr.Internal,
			map[string]string{"X-RateLimit-Limit": "300", "X-RateLimit-Remaining": "299"})
	})
}

func TestExactUnderConcurrency(t *testing.T) {
	forEachStore(t, func(t *testing.T, clock *fakeClock, s Counters) {
		h := newRouter(t, newLimiter(t, testConfig(), s), map[int64]auth.Plan{1: {PerMinute: 50, PerDay: 1000}})
		codes := hammer(200, func(int) (http.Handler, req) { return h, req{key: 1} })
		if codes[http.StatusOK] != 50 || codes[http.StatusTooManyRequests] != 150 {
			t.Errorf("statuses: got %v; want 50×200 and 150×429", codes)
		}
	})
}

// hammer sends n concurrent requests, request i as next(i) says, and counts the statuses.
func hammer(n int, next func(i int) (http.Handler, req)) map[int]int {
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		codes = map[int]int{}
		gate  = make(chan struct{})
	)
	for i := range n {
		wg.Go(func() {
			<-gate
			h, q := next(i)
			code := serve(h, q).Code
			mu.Lock()
			codes[code]++
			mu.Unlock()
		})
	}
	close(gate)
	wg.Wait()
	return codes
}

// ceilSecs returns d in whole seconds, rounded up.
func ceilSecs(d time.Duration) int { return int(math.Ceil(d.Seconds())) }
