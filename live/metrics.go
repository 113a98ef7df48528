package live

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the subscription series on /metrics.
type Metrics struct {
	active     prometheus.Gauge
	delivered  prometheus.Counter
	cutOff     *prometheus.CounterVec
	busErrors  prometheus.Counter
	readErrors prometheus.Counter
	capErrors  prometheus.Counter
	conns      prometheus.Gauge
	pending    prometheus.Gauge
	limit      *prometheus.GaugeVec
	refused    *prometheus.CounterVec

	lastBusLog, lastReadLog, lastCapLog atomic.Int64
}

// NewMetrics returns the series, not yet registered (Collectors).
func NewMetrics() *Metrics {
	return &Metrics{
		active: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "petstore_subscriptions_active", Help: "Subscriptions open on this instance (WebSocket operations and SSE streams).",
		}),
		delivered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "petstore_subscription_events_delivered_total", Help: "petAdded events handed to subscriptions.",
		}),
		cutOff: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "petstore_subscribers_cut_off_total",
			Help: "Subscribers closed by the service, by reason: slow (buffer full), revoked (key revoked or suspended), shutdown, over_cap (caps restored after Redis lost them), error.",
		}, []string{"reason"}),
		busErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "petstore_subscription_publish_errors_total", Help: "Wake-ups that could not be published to Redis.",
		}),
		readErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "petstore_subscription_read_errors_total", Help: "Reads of new pets for subscribers that failed.",
		}),
		capErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "petstore_subscription_cap_errors_total",
			Help: "Calls to Redis for the caps shared by every instance (taking, renewing, removing leases) that failed.",
		}),
		conns: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "petstore_live_connections", Help: "WebSockets (from their upgrade, initialised or not) and SSE streams this instance holds.",
		}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "petstore_live_connections_pending", Help: "WebSockets without a valid key in their upgrade whose connection_init has not yet named one.",
		}),
		limit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "petstore_live_connections_limit",
			Help: "The most this instance holds, sized from its memory: connections (every WebSocket and SSE stream), pending (WebSockets not yet initialised).",
		}, []string{"kind"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "petstore_live_connections_refused_total",
			Help: "WebSocket upgrades and SSE streams refused, by the limit they met: connections, pending (the instance's), pending_per_address.",
		}, []string{"limit"}),
	}
}

// Collectors returns the series to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.active, m.delivered, m.cutOff, m.busErrors, m.readErrors, m.capErrors,
		m.conns, m.pending, m.limit, m.refused}
}

// logEvery logs msg with err at most once every 10 seconds, last holding the time of the last
// line: a failing Redis or database would otherwise log at every attempt.
func logEvery(last *atomic.Int64, msg string, err error) {
	now := time.Now().UnixNano()
	prev := last.Load()
	if now-prev < int64(10*time.Second) || !last.CompareAndSwap(prev, now) {
		return
	}
	if errors.Is(err, context.Canceled) {
		return
	}
	slog.Warn(msg, "err", err)
}
