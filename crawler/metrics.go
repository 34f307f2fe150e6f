package crawler

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the fetcher's Prometheus metrics. A nil *Metrics counts
// nothing.
type Metrics struct {
	Fetches *prometheus.CounterVec // by status class: 2xx … 5xx, error
	Breaker *prometheus.GaugeVec   // by host: 0 closed, 0.5 half-open, 1 open, 2 down
}

// NewMetrics registers the fetcher's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Fetches: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "litcrawl_fetches_total",
			Help: "HTTP fetches, by status class (2xx, 3xx, 4xx, 5xx, error)."}, []string{"status_class"}),
		Breaker: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "litcrawl_circuit_breaker_state",
			Help: "Per-host circuit breaker: 0 closed, 0.5 half-open, 1 open, 2 down (pages fail at once)."}, []string{"host"}),
	}
	reg.MustRegister(m.Fetches, m.Breaker)
	return m
}

func (m *Metrics) fetch(status int, failed bool) {
	if m == nil {
		return
	}
	class := "error"
	if !failed && status >= 100 && status < 600 {
		class = string(rune('0'+status/100)) + "xx"
	}
	m.Fetches.WithLabelValues(class).Inc()
}

func (m *Metrics) breaker(host, state string) {
	if m == nil {
		return
	}
	v := 0.0
	switch state {
	case "open":
		v = 1
	case "half-open":
		v = 0.5
	case "down":
		v = 2
	}
	m.Breaker.WithLabelValues(host).Set(v)
}
