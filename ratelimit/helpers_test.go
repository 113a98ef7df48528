package ratelimit

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"petstore/apierr"
	"petstore/auth"
)

func TestMain(m *testing.M) {
	gin.SetMode(gin.TestMode)
	slog.SetDefault(slog.New(slog.DiscardHandler)) // apierr.Write logs every 5xx the tests provoke
	os.Exit(m.Run())
}

// start is the fake clocks' first reading: 5.5 s into a minute, so the minute window resets
// 54.5 s later, at 03:05:00 UTC.
var start = time.Date(2030, 1, 2, 3, 4, 5, 500e6, time.UTC)

// fakeClock is a settable clock for the stores.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: start} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// storeCase opens Counters reading the given clock: the suite runs once per case.
type storeCase struct {
	name string
	open func(t *testing.T, clock func() time.Time) Counters
}

var storeCases = []storeCase{
	{"memory", func(_ *testing.T, clock func() time.Time) Counters { return NewMemoryCounters(clock) }},
	{"redis", func(t *testing.T, clock func() time.Time) Counters {
		s := NewRedisCounters(testRedis(t), testPrefix(t), nil)
		s.clock = clock
		return s
	}},
}

// forEachStore runs f as a parallel subtest per store, each with its own fake clock.
func forEachStore(t *testing.T, f func(t *testing.T, clock *fakeClock, s Counters)) {
	t.Helper()
	for _, sc := range storeCases {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			clock := newFakeClock()
			f(t, clock, sc.open(t, clock.Now))
		})
	}
}

// testConfig is DefaultConfig with tighter anonymous limits that tests can exhaust quickly.
func testConfig() Config {
	cfg := DefaultConfig()
	cfg.AnonymousPerMinute, cfg.AnonymousPerDay = 3, 10
	return cfg
}

// newRouter returns a gin router shaped like the service's /v1 group: a test identify
// middleware (the X-Test-Key header names a key of plans), the limiter, a require middleware
// answering 401, then GET /v1/pets (200) and GET /v1/boom (500).
func newRouter(t *testing.T, lim *Limiter, plans map[int64]auth.Plan) *gin.Engine {
	t.Helper()
	r := gin.New()
	r.Use(identify(plans), lim.Middleware, require)
	r.GET("/v1/pets", func(c *gin.Context) { c.String(http.StatusOK, "[]") })
	r.GET("/v1/boom", func(c *gin.Context) { apierr.Write(c.Writer, c.Request, apierr.Wrap(nil)) })
	return r
}

func identify(plans map[int64]auth.Plan) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, err := strconv.ParseInt(c.GetHeader("X-Test-Key"), 10, 64)
		if plan, ok := plans[id]; err == nil && ok {
			p := &auth.Principal{KeyID: id, Plan: plan}
			c.Request = c.Request.WithContext(auth.NewContext(c.Request.Context(), p))
		}
		c.Next()
	}
}

func require(c *gin.Context) {
	if auth.FromContext(c.Request.Context()) == nil {
		apierr.Write(c.Writer, c.Request, apierr.New(apierr.Unauthorized, "missing API key"))
		c.Abort()
	}
}

// newLimiter returns New(cfg, s) or fails the test.
func newLimiter(t *testing.T, cfg Config, s Counters) *Limiter {
	t.Helper()
	lim, err := New(cfg, s)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return lim
}

// req describes one test request: key 0 sends none.
type req struct {
	key  int64
	addr string // RemoteAddr; default 192.0.2.1:1234
	xff  string
	path string // default /v1/pets
}

func serve(h http.Handler, q req) *httptest.ResponseRecorder {
	path := q.path
	if path == "" {
		path = "/v1/pets"
	}
	r := httptest.NewRequest(http.MethodGet, path, nil)
	if q.addr != "" {
		r.RemoteAddr = q.addr
	}
	if q.key != 0 {
		r.Header.Set("X-Test-Key", strconv.FormatInt(q.key, 10))
	}
	if q.xff != "" {
		r.Header.Set("X-Forwarded-For", q.xff)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// check compares the status, the error code (when wantCode is set) and the given headers.
func check(t *testing.T, w *httptest.ResponseRecorder, wantStatus int, wantCode apierr.Code, headers map[string]string) {
	t.Helper()
	if w.Code != wantStatus {
		t.Fatalf("status: got %d; want %d (body %s)", w.Code, wantStatus, w.Body)
	}
	if wantCode != "" {
		if got := errorCode(t, w); got != wantCode {
			t.Errorf("code: got %q; want %q", got, wantCode)
		}
	}
	for k, want := range headers {
		if got := w.Header().Get(k); got != want {
			t.Errorf("%s: got %q; want %q", k, got, want)
		}
	}
}

func unix(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

// errorCode returns the code of the JSON Error body of w.
func errorCode(t *testing.T, w *httptest.ResponseRecorder) apierr.Code {
	t.Helper()
	var b apierr.Body
	if err := json.Unmarshal(w.Body.Bytes(), &b); err != nil {
		t.Fatalf("decoding Error body %q: %v", w.Body, err)
	}
	if b.Status != w.Code {
		t.Errorf("body status: got %d; want %d", b.Status, w.Code)
	}
	return b.Code
}
