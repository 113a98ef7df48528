package webhooks

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the dispatcher's Prometheus metrics, registered by the service with the others.
type Metrics struct {
	queued, delivered, retried, failed, deferred prometheus.Counter
	oldest                                       prometheus.Gauge
}

// newMetrics returns the dispatcher's metrics.
func newMetrics() *Metrics {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: "petstore_webhook_deliveries_" + name + "_total", Help: help})
	}
	return &Metrics{
		queued:    counter("queued", "Webhook deliveries queued: one per pet added and subscribed endpoint."),
		delivered: counter("delivered", "Webhook deliveries a receiver acknowledged with a 2xx."),
		retried:   counter("retried", "Webhook delivery attempts that failed and were scheduled again."),
		failed:    counter("failed", "Webhook deliveries that failed for good: retry schedule spent, or endpoint disabled."),
		deferred:  counter("deferred", "Webhook deliveries claimed but not sent then, left to be claimed again: their endpoint or the instance held all it may, or their lease was ending."),
		oldest: prometheus.NewGauge(prometheus.GaugeOpts{Name: "petstore_webhook_oldest_undelivered_seconds",
			Help: "Age of the oldest pet event not yet delivered (pending, in the outbox, or not yet queued), as this instance last read it."}),
	}
}

// Collectors returns the metrics, for registration.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.queued, m.delivered, m.retried, m.failed, m.deferred, m.oldest}
}
