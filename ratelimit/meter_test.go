package ratelimit

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"petstore/apierr"
	"petstore/auth"
)

// newMeterRouter returns a router whose /v1 requests go through Meter: GET /v1/op?cost=N
// charges N units as the GraphQL handler does, then writes its answer whatever the outcome
// (as gqlgen writes its error answer), an invalid_request refusal as its 400; GET /v1/pets
// answers without charging anything.
func newMeterRouter(lim *Limiter, plans map[int64]auth.Plan) *gin.Engine {
	r := gin.New()
	r.Use(identify(plans), lim.Meter, require)
	r.GET("/v1/op", func(c *gin.Context) {
		n, _ := strconv.Atoi(c.Query("cost"))
		units, err := c.Writer.(interface{ ChargeRequest(int) (int, error) }).ChargeRequest(n)
		if e := apierr.From(err); err != nil && e.Code == apierr.InvalidRequest {
			apierr.Write(c.Writer, c.Request, e)
			return
		}
		c.String(http.StatusOK, "charged %d", units)
	})
	r.GET("/v1/pets", func(c *gin.Context) { c.String(http.StatusOK, "[]") })
	return r
}

// op is the request of an operation costing n.
func op(n int) req { return req{key: 1, path: "/v1/op?cost=" + strconv.Itoa(n)} }

func TestMeterChargesTheCost(t *testing.T) {
	forEachStore(t, func(t *testing.T, clock *fakeClock, s Counters) {
		h := newMeterRouter(newLimiter(t, testConfig(), s), map[int64]auth.Plan{1: auth.Free})
		w := serve(h, op(10))
		check(t, w, http.StatusOK, "", map[string]string{
			"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "50", "RateLimit": `"minute";r=50;t=55`,
		})
		if w.Body.String() != "charged 10" {
			t.Errorf("body: got %q; want charged 10", w.Body)
		}
		// Answered without a charge: one request, when the answer starts. A cost below one
		// is one.
		check(t, serve(h, req{key: 1}), http.StatusOK, "", map[string]string{"X-RateLimit-Remaining": "49"})
		check(t, serve(h, op(0)), http.StatusOK, "", map[string]string{"X-RateLimit-Remaining": "48"})
		// Without a valid key: charged to the address at once, as Middleware charges it.
		check(t, serve(h, req{path: "/v1/op?cost=10"}), http.StatusUnauthorized, apierr.Unauthorized,
			map[string]string{"X-RateLimit-Limit": "3", "X-RateLimit-Remaining": "2"})
	})
}

func TestMeterRefusesMoreThanRemains(t *testing.T) {
	forEachStore(t, func(t *testing.T, clock *fakeClock, s Counters) {
		h := newMeterRouter(newLimiter(t, testConfig(), s), map[int64]auth.Plan{1: {PerMinute: 12, PerDay: 1000}})
		check(t, serve(h, op(10)), http.StatusOK, "", map[string]string{"X-RateLimit-Remaining": "2"})
		w := serve(h, op(10))
		check(t, w, http.StatusTooManyRequests, apierr.RateLimited, map[string]string{
			"X-RateLimit-Remaining": "2", // nothing charged
			"Retry-After":           strconv.Itoa(ceilSecs(minuteEnd.Sub(clock.Now()))),
		})
		if want := "costs 10 and 2 are left"; !strings.Contains(w.Body.String(), want) {
			t.Errorf("body: got %s; want it to say %q", w.Body, want)
		}
		check(t, serve(h, op(2)), http.StatusOK, "", map[string]string{"X-RateLimit-Remaining": "0"})
		clock.Advance(minuteEnd.Sub(clock.Now())) // Retry-After later: the minute has reset
		check(t, serve(h, op(10)), http.StatusOK, "", map[string]string{"X-RateLimit-Remaining": "2"})
	})
}

func TestMeterRefusesMoreThanALimit(t *testing.T) {
	forEachStore(t, func(t *testing.T, clock *fakeClock, s Counters) {
		h := newMeterRouter(newLimiter(t, testConfig(), s), map[int64]auth.Plan{1: {PerMinute: 4, PerDay: 1000}})
		// No wait would admit it: not 429 (a retry after Retry-After would be refused again)
		// but invalid_request, charged one request as any refused operation.
		w := serve(h, op(5))
		check(t, w, http.StatusBadRequest, apierr.InvalidRequest, map[string]string{"X-RateLimit-Remaining": "3", "Retry-After": ""})
		if want := "costs 5 requests"; !strings.Contains(w.Body.String(), want) || !strings.Contains(w.Body.String(), "4 per minute") {
			t.Errorf("body: got %s; want it to say %q and name the limit", w.Body, want)
		}
		check(t, serve(h, op(3)), http.StatusOK, "", map[string]string{"X-RateLimit-Remaining": "0"})
		check(t, serve(h, op(5)), http.StatusTooManyRequests, apierr.RateLimited, nil)
	})
}

func TestMeterStoreFailure(t *testing.T) {
	for _, failOpen := range []bool{true, false} {
		t.Run("fail open "+strconv.FormatBool(failOpen), func(t *testing.T) {
			t.Parallel()
			proxy, s := proxiedStore(t)
			cfg := testConfig()
			cfg.FailOpen = failOpen
			h := newMeterRouter(newLimiter(t, cfg, s), map[int64]auth.Plan{1: auth.Free})
			proxy.Cut()
			w := serve(h, op(10))
			if failOpen {
				check(t, w, http.StatusOK, "", map[string]string{"X-RateLimit-Remaining": "60"})
				return
			}
			check(t, w, http.StatusServiceUnavailable, apierr.Unavailable, map[string]string{"Retry-After": "1", "X-RateLimit-Remaining": "60"})
		})
	}
}

// TestMeterChargesAtOnce: concurrent operations of one key, 3 units each, are admitted while
// all three fit: 50 a minute admits 16, whatever the interleaving.
func TestMeterChargesAtOnce(t *testing.T) {
	forEachStore(t, func(t *testing.T, clock *fakeClock, s Counters) {
		h := newMeterRouter(newLimiter(t, testConfig(), s), map[int64]auth.Plan{1: {PerMinute: 50, PerDay: 1000}})
		codes := hammer(30, func(int) (http.Handler, req) { return h, op(3) }) // 14 rejections: no suspension
		if codes[http.StatusOK] != 16 || codes[http.StatusTooManyRequests] != 14 {
			t.Errorf("statuses: got %v; want 16×200 and 14×429", codes)
		}
		check(t, serve(h, op(2)), http.StatusOK, "", map[string]string{"X-RateLimit-Remaining": "0"})
	})
}
