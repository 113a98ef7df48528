package observe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"petstore/ratelimit"
	"petstore/store"
)

func TestHTTPMetrics(t *testing.T) {
	h := newHarness(t, slog.LevelInfo, nil)
	for _, tt := range []struct {
		method, target string
		status         int
	}{
		{"GET", "/v1/pets/42", 200},
		{"GET", "/v1/pets/42?token=abc", 200},
		{"GET", "/v1/pets/7", 404},
		{"POST", "/v1/pets", 201},
		{"GET", "/no/such/secret-path", 404},
		{"BREW", "/v1/pets/42", 405},
		{"DELETE", "/v1/pets/42", 405},
		{"GET", "/v1/panic", 500},
		{"GET", "/healthz", 200},
	} {
		if w := h.do(tt.method, tt.target); w.Code != tt.status {
			t.Errorf("%s %s: got status %d; want %d", tt.method, tt.target, w.Code, tt.status)
		}
	}
	mfs := h.scrape()
	want := map[string]float64{
		"method=GET,route=/v1/pets/:petId,status=200": 2,
		"method=GET,route=/v1/pets/:petId,status=404": 1,
		"method=POST,route=/v1/pets,status=201":       1,
		"method=GET,route=unmatched,status=404":       1,
		"method=OTHER,route=unmatched,status=405":     1,
		"method=DELETE,route=unmatched,status=405":    1,
		"method=GET,route=/v1/panic,status=500":       1,
		"method=GET,route=/healthz,status=200":        1,
	}
	diff(t, "petstore_http_requests_total", series(t, mfs, "petstore_http_requests_total"), want)
	diff(t, "petstore_http_request_duration_seconds", series(t, mfs, "petstore_http_request_duration_seconds"), want)
	diff(t, "petstore_http_requests_in_flight", series(t, mfs, "petstore_http_requests_in_flight"), map[string]float64{"": 1}) // the scrape
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_resident_memory_bytes"} {
		if _, ok := mfs[name]; !ok {
			t.Errorf("/metrics has no %s", name)
		}
	}
	noRawValues(t, mfs, "/v1/pets/42", "/v1/pets/7", "secret-path", "BREW", "token", "192.0.2.1")
}

// noRawValues fails when a label value of a petstore_ series contains any of raw.
func noRawValues(t *testing.T, mfs map[string]*dto.MetricFamily, raw ...string) {
	t.Helper()
	for name, mf := range mfs {
		if !strings.HasPrefix(name, "petstore_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				for _, r := range raw {
					if strings.Contains(l.GetValue(), r) {
						t.Errorf("%s has label %s=%q; want no raw request data in labels", name, l.GetName(), l.GetValue())
					}
				}
			}
		}
	}
}

// TestLabelsBounded sends requests with distinct paths and methods: they share one series.
func TestLabelsBounded(t *testing.T) {
	h := newHarness(t, slog.LevelInfo, nil)
	for i := range 200 {
		h.do(fmt.Sprintf("M%dX", i), fmt.Sprintf("/scan/%d/admin.php", i))
	}
	got := series(t, h.scrape(), "petstore_http_requests_total")
	diff(t, "petstore_http_requests_total", got, map[string]float64{"method=OTHER,route=unmatched,status=404": 200})
}

func TestMethodLabel(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"GET", "GET"}, {"HEAD", "HEAD"}, {"POST", "POST"}, {"PUT", "PUT"}, {"PATCH", "PATCH"},
		{"DELETE", "DELETE"}, {"OPTIONS", "OPTIONS"}, {"CONNECT", "CONNECT"}, {"TRACE", "TRACE"},
		{"get", "OTHER"}, {"PROPFIND", "OTHER"}, {"", "OTHER"}, {strings.Repeat("X", 1000), "OTHER"},
	} {
		if got := methodLabel(tt.in); got != tt.want {
			t.Errorf("methodLabel(%.20q): got %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestStatusAndRouteLabels(t *testing.T) {
	for _, tt := range []struct {
		code int
		want string
	}{{200, "200"}, {404, "404"}, {599, "599"}, {999, "999"}, {1000, "1000"}} {
		if got := statusLabel(tt.code); got != tt.want {
			t.Errorf("statusLabel(%d): got %q; want %q", tt.code, got, tt.want)
		}
	}
	if got := routeLabel(""); got != "unmatched" {
		t.Errorf(`routeLabel(""): got %q; want "unmatched"`, got)
	}
	if got := routeLabel("/v1/pets/:petId"); got != "/v1/pets/:petId" {
		t.Errorf("routeLabel(/v1/pets/:petId): got %q; want /v1/pets/:petId", got)
	}
}

// fixedClock is a ratelimit clock that stays 10 s into a minute, so no window resets mid-test.
func fixedClock() time.Time { return time.Date(2030, 1, 2, 3, 4, 10, 0, time.UTC) }

// limiter returns a harness option that installs a real in-process limiter reporting to the
// harness's Metrics: one anonymous request a minute, suspension at the second rejection.
func limiter(t *testing.T, s ratelimit.Counters) func(*Metrics) gin.HandlerFunc {
	return func(m *Metrics) gin.HandlerFunc {
		cfg := ratelimit.DefaultConfig()
		cfg.AnonymousPerMinute, cfg.SuspendAfter = 1, 2
		cfg.Logger = slog.New(slog.DiscardHandler)
		cfg.OnDecision = m.ObserveDecision
		l, err := ratelimit.New(cfg, s)
		if err != nil {
			t.Fatalf("ratelimit.New: %v", err)
		}
		if err := m.RegisterStoreErrors(l.StoreErrors); err != nil {
			t.Fatalf("RegisterStoreErrors: %v", err)
		}
		return l.Middleware
	}
}

func TestRateLimitMetrics(t *testing.T) {
	h := newHarness(t, slog.LevelInfo, limiter(t, ratelimit.NewMemoryCounters(fixedClock)))
	bearer := "Bearer " + testKey
	for i, want := range []int{200, 200, 429, 429, 429} { // the key's plan admits 2 a minute
		if w := h.do("GET", "/v1/pets/42", "Authorization", bearer); w.Code != want {
			t.Errorf("keyed request %d: got status %d; want %d", i, w.Code, want)
		}
	}
	for i, want := range []int{200, 429, 429} { // anonymous: 1 a minute, by client address
		if w := h.do("GET", "/v1/pets/42"); w.Code != want {
			t.Errorf("anonymous request %d: got status %d; want %d", i, w.Code, want)
		}
	}
	mfs := h.scrape()
	want := zeroDecisions()
	want["outcome=allowed,plan=pro"] = 2
	want["outcome=limited,plan=pro"] = 1
	want["outcome=suspended,plan=pro"] = 2
	want["outcome=allowed,plan=anonymous"] = 1
	want["outcome=limited,plan=anonymous"] = 1
	want["outcome=suspended,plan=anonymous"] = 1
	diff(t, "petstore_ratelimit_decisions_total", series(t, mfs, "petstore_ratelimit_decisions_total"), want)
	diff(t, "petstore_ratelimit_suspensions_total", series(t, mfs, "petstore_ratelimit_suspensions_total"),
		map[string]float64{"plan=free": 0, "plan=pro": 2, "plan=business": 0, "plan=enterprise": 0, "plan=anonymous": 1, "plan=other": 0})
	diff(t, "petstore_ratelimit_store_errors_total", series(t, mfs, "petstore_ratelimit_store_errors_total"), map[string]float64{"": 0})
}

// zeroDecisions returns every pre-created decision series at zero.
func zeroDecisions() map[string]float64 {
	out := make(map[string]float64)
	for _, o := range []string{"allowed", "limited", "suspended"} {
		for _, p := range plans {
			out["outcome="+o+",plan="+p] = 0
		}
	}
	return out
}

// downStore is a rate-limit store whose server does not answer.
type downStore struct{}

func (downStore) Take(context.Context, ratelimit.Subject, ratelimit.Policy, int64) (ratelimit.Decision, error) {
	return ratelimit.Decision{}, errors.New("dial tcp 127.0.0.1:6379: connection refused")
}

func (s downStore) Check(ctx context.Context, subj ratelimit.Subject, p ratelimit.Policy) (ratelimit.Decision, error) {
	return s.Take(ctx, subj, p, 1)
}

func TestStoreErrorMetric(t *testing.T) {
	h := newHarness(t, slog.LevelInfo, limiter(t, downStore{}))
	for range 3 {
		if w := h.do("GET", "/v1/pets/42", "Authorization", "Bearer "+testKey); w.Code != 200 {
			t.Errorf("GET with the store down (fail open): got status %d; want 200", w.Code)
		}
	}
	mfs := h.scrape()
	diff(t, "petstore_ratelimit_store_errors_total", series(t, mfs, "petstore_ratelimit_store_errors_total"), map[string]float64{"": 3})
	diff(t, "petstore_ratelimit_decisions_total", series(t, mfs, "petstore_ratelimit_decisions_total"), zeroDecisions())
}

func TestObserveDecisionLabels(t *testing.T) {
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	m.ObserveDecision(ratelimit.Allowed, "enterprise")
	m.ObserveDecision(ratelimit.Limited, "Gold' OR 1=1") // a plan name from nowhere
	m.ObserveDecision(ratelimit.Outcome(9), "free")
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := make(map[string]*dto.MetricFamily)
	for _, mf := range mfs {
		byName[mf.GetName()] = mf
	}
	got := series(t, byName, "petstore_ratelimit_decisions_total")
	want := zeroDecisions()
	want["outcome=allowed,plan=enterprise"] = 1
	want["outcome=limited,plan=other"] = 1
	want["outcome=unknown,plan=free"] = 1
	diff(t, "petstore_ratelimit_decisions_total", got, want)
}

func TestRegisterDB(t *testing.T) {
	db, err := store.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "pets.db"), store.DefaultPool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	h := newHarness(t, slog.LevelInfo, nil)
	if err := h.metrics.RegisterDB(db.SQL()); err != nil {
		t.Fatalf("RegisterDB: %v", err)
	}
	if err := h.metrics.RegisterDB(db.SQL()); err == nil {
		t.Errorf("RegisterDB twice: got success; want an error")
	}
	mfs := h.scrape()
	diff(t, "go_sql_max_open_connections", series(t, mfs, "go_sql_max_open_connections"), map[string]float64{"db_name=petstore": 1})
	if _, ok := mfs["go_sql_wait_count_total"]; !ok {
		t.Errorf("/metrics has no go_sql_wait_count_total")
	}
}

func TestNewMetricsTwiceFails(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := NewMetrics(reg); err != nil {
		t.Fatalf("NewMetrics: %v", err)
	}
	if _, err := NewMetrics(reg); err == nil {
		t.Errorf("NewMetrics on the same registry twice: got success; want an error")
	}
}

// TestOutcomeLabels pins the outcome labels to ratelimit's numbering.
func TestOutcomeLabels(t *testing.T) {
	for _, o := range []ratelimit.Outcome{ratelimit.Allowed, ratelimit.Limited, ratelimit.Suspended} {
		if got := outcomes[outcomeIndex(o)]; got != o.String() {
			t.Errorf("outcome label of %v: got %q; want %q", o, got, o.String())
		}
	}
}
