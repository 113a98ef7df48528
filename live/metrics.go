package live

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the delivery series on /metrics (conns.Metrics are the connections').
type Metrics struct {
	active     prometheus.Gauge
	delivered  prometheus.Counter
	busErrors  prometheus.Counter
	readErrors prometheus.Counter

	busLog, readLog Throttle
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
		busErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "petstore_subscription_publish_errors_total", Help: "Wake-ups that could not be published to Redis.",
		}),
		readErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "petstore_subscription_read_errors_total", Help: "Reads of new pets for subscribers that failed.",
		}),
	}
}

// Collectors returns the series to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.active, m.delivered, m.busErrors, m.readErrors}
}

// Throttle logs a failure at most once every 10 seconds: a failing Redis or database would
// otherwise log at every attempt. Its zero value is ready; each kind of failure has its own.
type Throttle struct{ last atomic.Int64 }

// Warn logs msg with err unless t logged within the last 10 seconds, or err is a cancellation.
func (t *Throttle) Warn(msg string, err error) {
	now := time.Now().UnixNano()
	prev := t.last.Load()
	if now-prev < int64(10*time.Second) || !t.last.CompareAndSwap(prev, now) {
		return
	}
	if errors.Is(err, context.Canceled) {
		return
	}
	slog.Warn(msg, "err", err)
}
