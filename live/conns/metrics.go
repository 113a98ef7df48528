package conns

import (
	"github.com/prometheus/client_golang/prometheus"

	"petstore/live"
)

// Metrics are the connection series on /metrics (live.Metrics are the delivery's).
type Metrics struct {
	cutOff    *prometheus.CounterVec
	capErrors prometheus.Counter
	conns     prometheus.Gauge
	pending   prometheus.Gauge
	limit     *prometheus.GaugeVec
	refused   *prometheus.CounterVec

	capLog, checkLog live.Throttle
}

// NewMetrics returns the series, not yet registered (Collectors).
func NewMetrics() *Metrics {
	return &Metrics{
		cutOff: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "petstore_subscribers_cut_off_total",
			Help: "Subscribers closed by the service, by reason: slow (buffer full), revoked (key revoked or suspended), shutdown, over_cap (caps restored after Redis lost them), error.",
		}, []string{"reason"}),
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
	return []prometheus.Collector{m.cutOff, m.capErrors, m.conns, m.pending, m.limit, m.refused}
}

// cutLabel returns the reason label of a close code on petstore_subscribers_cut_off_total.
func cutLabel(code int) string {
	switch code {
	case live.CloseSlow:
		return "slow"
	case live.CloseForbidden:
		return "revoked"
	case live.CloseGoingAway:
		return "shutdown"
	}
	return "error"
}
