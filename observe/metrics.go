package observe

import (
	"database/sql"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"petstore/internal/version"
	"petstore/ratelimit"
)

// durationBuckets are the upper bounds, in seconds, of the request latency histogram: from
// one millisecond (a cached read) to ten seconds (past every timeout of the service).
var durationBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// Metrics holds the service's Prometheus series (see the package doc) and serves them. Its
// methods are safe for concurrent use.
type Metrics struct {
	reg         *prometheus.Registry
	handler     http.Handler
	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	inFlight    prometheus.Gauge
	decisionVec *prometheus.CounterVec
	decisions   [len(outcomes)][len(plans)]prometheus.Counter // nil for outcome 0: made on use
	suspensions [len(plans)]prometheus.Counter
	series      sync.Map // seriesKey -> *requestSeries
}

// NewMetrics registers the service's series, the Go runtime collector and the process
// collector on reg, and returns the Metrics that feeds them. It takes a Registry rather than
// a Registerer because Handler serves what reg gathers; pass prometheus.NewRegistry(), not the
// global default registry, so that nothing else registers series behind the service's back.
// It fails when reg already has any of these series.
func NewMetrics(reg *prometheus.Registry) (*Metrics, error) {
	m := &Metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "petstore_http_requests_total",
			Help: "HTTP requests answered, by route template, method and status.",
		}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "petstore_http_request_duration_seconds",
			Help:    "Time spent serving HTTP requests (from the metrics middleware to the end of the handler chain), by route template, method and status.",
			Buckets: durationBuckets,
		}, []string{"route", "method", "status"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "petstore_http_requests_in_flight",
			Help: "HTTP requests being served.",
		}),
		decisionVec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "petstore_ratelimit_decisions_total",
			Help: "Rate-limit decisions, by outcome (allowed, limited, suspended) and plan of the key (anonymous: no valid key).",
		}, []string{"outcome", "plan"}),
	}
	suspensions := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "petstore_ratelimit_suspensions_total",
		Help: "Requests rejected with key_suspended, by plan: the one that starts a suspension and each one sent during it.",
	}, []string{"plan"})
	m.resolve(suspensions)
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "petstore_build_info",
		Help:        "Always 1, labelled with the version and commit of the build that runs and its Go version.",
		ConstLabels: prometheus.Labels{"version": version.Version(), "commit": version.Commit(), "goversion": runtime.Version()},
	})
	build.Set(1)
	err := register(reg, m.requests, m.duration, m.inFlight, m.decisionVec, suspensions, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err != nil {
		return nil, err
	}
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:      promLog{},
		ErrorHandling: promhttp.ContinueOnError, // a failing collector must not blank the page
		Registry:      reg,                      // counts those failures
	})
	return m, nil
}

// resolve creates the rate-limit series of every known outcome and plan up front, so that
// they read zero rather than absent until the first decision, and so that counting one looks
// nothing up.
func (m *Metrics) resolve(suspensions *prometheus.CounterVec) {
	for p, plan := range plans {
		for o := 1; o < len(outcomes); o++ {
			m.decisions[o][p] = m.decisionVec.WithLabelValues(outcomes[o], plan)
		}
		m.suspensions[p] = suspensions.WithLabelValues(plan)
	}
}

// register registers every collector on reg.
func register(reg *prometheus.Registry, cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("observe: %w", err)
		}
	}
	return nil
}

// Handler returns the handler of GET /metrics: every series of the registry, in the text
// format Prometheus scrapes (or OpenMetrics/protobuf when the scraper asks for it).
func (m *Metrics) Handler() http.Handler { return m.handler }

// Middleware is the gin.HandlerFunc that counts and times every request. Install it before
// gin's recovery (see the package doc) so that it sees the 500 of a recovered panic.
func (m *Metrics) Middleware(c *gin.Context) {
	start := time.Now()
	m.inFlight.Inc()
	defer m.inFlight.Dec()
	c.Next()
	m.observe(c.FullPath(), c.Request.Method, c.Writer.Status(), time.Since(start))
}

// observe counts one request of the given route template, method and status.
func (m *Metrics) observe(fullPath, method string, status int, d time.Duration) {
	k := seriesKey{route: routeLabel(fullPath), method: methodLabel(method), status: status}
	s, ok := m.series.Load(k)
	if !ok {
		code := statusLabel(status)
		s, _ = m.series.LoadOrStore(k, &requestSeries{
			requests: m.requests.WithLabelValues(k.route, k.method, code),
			duration: m.duration.WithLabelValues(k.route, k.method, code),
		})
	}
	rs := s.(*requestSeries)
	rs.requests.Inc()
	rs.duration.Observe(d.Seconds())
}

// seriesKey names the request series of a route template (a gin route or unmatched), a method
// label and a status: a set bounded by the routes, the methods of methodLabel and the status
// codes net/http accepts.
type seriesKey struct {
	route, method string
	status        int
}

// requestSeries are the series that count and time the requests of one seriesKey, looked up
// once: WithLabelValues checks and hashes the three labels at every call.
type requestSeries struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// ObserveDecision counts one rate-limit decision; it is the limiter's hook
// (ratelimit.Config.OnDecision). plan is the key's plan name or ratelimit.AnonymousPlan; any
// other name is counted as "other".
func (m *Metrics) ObserveDecision(outcome ratelimit.Outcome, plan string) {
	o, p := outcomeIndex(outcome), planIndex(plan)
	if c := m.decisions[o][p]; c != nil {
		c.Inc()
	} else {
		m.decisionVec.WithLabelValues(outcomes[o], plans[p]).Inc()
	}
	if outcome == ratelimit.Suspended {
		m.suspensions[p].Inc()
	}
}

// RegisterDB adds the connection-pool statistics of db (the go_sql_* series, labelled
// db_name="petstore"). It fails when a pool is registered already.
func (m *Metrics) RegisterDB(db *sql.DB) error {
	return register(m.reg, collectors.NewDBStatsCollector(db, "petstore"))
}

// RegisterStoreErrors adds petstore_ratelimit_store_errors_total, read from count at each
// scrape (pass ratelimit.Limiter.StoreErrors). It fails when it is registered already.
func (m *Metrics) RegisterStoreErrors(count func() uint64) error {
	return register(m.reg, prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "petstore_ratelimit_store_errors_total",
		Help: "Rate-limit decisions the store failed to make (each request admitted uncounted or answered 503, as configured).",
	}, func() float64 { return float64(count()) }))
}

// promLog sends the errors of the /metrics handler to slog.Default.
type promLog struct{}

// Println logs v as one error line.
func (promLog) Println(v ...any) { slog.Error("metrics: " + fmt.Sprint(v...)) }

// Register adds the series of another package (live.Metrics, conns.Metrics) to /metrics.
func (m *Metrics) Register(cs ...prometheus.Collector) error { return register(m.reg, cs...) }
