package engine

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the engine's Prometheus metrics. A nil *Metrics counts
// nothing.
type Metrics struct {
	Pages   *prometheus.CounterVec // by result: done, failed, skipped, past-end
	Retries *prometheus.CounterVec // failed tries by cause
}

// NewMetrics registers the engine's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Pages: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "litcrawl_pages_total",
			Help: "Listing pages finished, by result (done, failed, skipped, past-end)."}, []string{"result"}),
		Retries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "litcrawl_retries_total",
			Help: "Failed tries of pages, by cause (network, http-5xx, http-429, truncated, soft-block, circuit-open)."}, []string{"cause"}),
	}
	reg.MustRegister(m.Pages, m.Retries)
	return m
}

func (m *Metrics) page(result string) {
	if m != nil {
		m.Pages.WithLabelValues(result).Inc()
	}
}

func (m *Metrics) retry(cause string) {
	if m != nil {
		m.Retries.WithLabelValues(cause).Inc()
	}
}
