package observe

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"petstore/auth"
)

func TestMain(m *testing.M) {
	gin.SetMode(gin.TestMode)
	os.Exit(m.Run())
}

// testKey is the only bearer key fakeAuth accepts; it must never reach a log line.
const testKey = "petstore_test_S3cr3tPartThatMustNeverBeLogged0000"

// testKeyID is the key ID of testKey.
const testKeyID = 7

// harness is a gin router wired as rest.NewRouter wires the service: the observe middleware
// first, then gin's recovery, then the routes, with /v1 behind a fake authentication.
type harness struct {
	t       *testing.T
	router  *gin.Engine
	metrics *Metrics
	log     *slog.Logger
	logs    *bytes.Buffer
}

// newHarness returns a harness logging at level. limit, when not nil, makes the middleware
// that follows authentication on /v1 (a rate limiter fed to the harness's Metrics).
func newHarness(t *testing.T, level slog.Level, limit func(*Metrics) gin.HandlerFunc) *harness {
	t.Helper()
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatalf("NewMetrics: %v", err)
	}
	logs := new(bytes.Buffer)
	h := &harness{t: t, metrics: m, logs: logs,
		log: slog.New(NewJSONLogHandler(logs, &slog.HandlerOptions{Level: level}))}
	r := gin.New()
	r.HandleMethodNotAllowed = true
	r.Use(NewRequestLog(h.log).Middleware, m.Middleware)
	r.Use(gin.CustomRecoveryWithWriter(io.Discard, h.recovered))
	r.NoRoute(func(c *gin.Context) { c.JSON(http.StatusNotFound, gin.H{"code": "not_found"}) })
	r.NoMethod(func(c *gin.Context) { c.JSON(http.StatusMethodNotAllowed, gin.H{"code": "method_not_allowed"}) })
	r.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	r.GET("/metrics", gin.WrapH(m.Handler()))
	v1 := r.Group("/v1", fakeAuth)
	if limit != nil {
		v1.Use(limit(m))
	}
	h.routes(v1)
	h.router = r
	return h
}

// routes adds the /v1 routes of the harness.
func (h *harness) routes(v1 *gin.RouterGroup) {
	v1.GET("/pets/:petId", func(c *gin.Context) {
		if c.Param("petId") != "42" {
			c.JSON(http.StatusNotFound, gin.H{"code": "not_found"})
			return
		}
		c.JSON(http.StatusOK, gin.H{"id": 42, "name": "Rex", "categoryId": 1})
	})
	v1.POST("/pets", func(c *gin.Context) { c.JSON(http.StatusCreated, gin.H{"id": 43}) })
	v1.GET("/store/orders", func(c *gin.Context) { c.JSON(http.StatusNotImplemented, gin.H{"code": "not_implemented"}) })
	v1.GET("/panic", func(*gin.Context) { panic("boom") })
	v1.GET("/fail", func(c *gin.Context) {
		h.log.ErrorContext(c.Request.Context(), "request failed", "err", "database is down")
		c.JSON(http.StatusServiceUnavailable, gin.H{"code": "unavailable"})
	})
}

// recovered answers a panic as rest's recovery does: a log line with the request's context,
// then a 500.
func (h *harness) recovered(c *gin.Context, p any) {
	h.log.ErrorContext(c.Request.Context(), "handler panicked", "panic", fmt.Sprint(p))
	c.AbortWithStatusJSON(http.StatusInternalServerError, gin.H{"code": "internal_error"})
}

// fakeAuth stands for auth.Authenticator.Identify: testKey is key testKeyID of the pro plan.
func fakeAuth(c *gin.Context) {
	if c.GetHeader("Authorization") == "Bearer "+testKey {
		p := &auth.Principal{KeyID: testKeyID, Plan: auth.Plan{Name: "pro", PerMinute: 2, PerDay: 100}}
		c.Request = c.Request.WithContext(auth.NewContext(c.Request.Context(), p))
	}
}

// do sends one request through the router; header holds name, value pairs.
func (h *harness) do(method, target string, header ...string) *httptest.ResponseRecorder {
	h.t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.router.ServeHTTP(w, req)
	return w
}

// scrape GETs /metrics through the router and parses the text it serves.
func (h *harness) scrape() map[string]*dto.MetricFamily {
	h.t.Helper()
	w := h.do(http.MethodGet, "/metrics")
	if w.Code != http.StatusOK {
		h.t.Fatalf("GET /metrics: got status %d; want 200", w.Code)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(w.Body)
	if err != nil {
		h.t.Fatalf("parse /metrics: %v", err)
	}
	return mfs
}

// series returns the samples of family name: counter and gauge values, or histogram sample
// counts, keyed by their labels as "name=value,..." in name order.
func series(t *testing.T, mfs map[string]*dto.MetricFamily, name string) map[string]float64 {
	t.Helper()
	mf, ok := mfs[name]
	if !ok {
		t.Fatalf("/metrics has no %s", name)
	}
	out := make(map[string]float64)
	for _, m := range mf.GetMetric() {
		out[labelKey(m.GetLabel())] = value(m)
	}
	return out
}

// labelKey returns labels as "name=value,..." sorted by name.
func labelKey(labels []*dto.LabelPair) string {
	parts := make([]string, 0, len(labels))
	for _, l := range labels {
		parts = append(parts, l.GetName()+"="+l.GetValue())
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// value returns the value of a counter, gauge or untyped sample, or a histogram's count.
func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return m.GetUntyped().GetValue()
}

// lines returns the JSON log lines written so far, and forgets them.
func (h *harness) lines() []map[string]any {
	h.t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(h.logs)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			h.t.Fatalf("log line %q is not JSON: %v", sc.Text(), err)
		}
		out = append(out, line)
	}
	h.logs.Reset()
	return out
}

// requestLines returns the request lines among lines.
func requestLines(lines []map[string]any) []map[string]any {
	var out []map[string]any
	for _, l := range lines {
		if l["msg"] == "request" {
			out = append(out, l)
		}
	}
	return out
}

// diff reports every key whose value in got differs from want, or that only one of them has.
func diff(t *testing.T, what string, got, want map[string]float64) {
	t.Helper()
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			t.Errorf("%s{%s}: got %v (present: %v); want %v", what, k, g, ok, w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s{%s}: got %v; want no such series", what, k, g)
		}
	}
}
