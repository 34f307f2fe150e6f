package crawler

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the crawler's Prometheus metrics. A nil *Metrics counts
// nothing.
type Metrics struct {
	Pages   *prometheus.CounterVec // by result: done, failed, skipped, past-end
	Fetches *prometheus.CounterVec // by status class: 2xx … 5xx, error
	Retries *prometheus.CounterVec // failed tries by cause
	Breaker *prometheus.GaugeVec   // by host: 0 closed, 1 open, 0.5 half-open
}

// NewMetrics registers the crawler's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Pages: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "litcrawl_pages_total",
			Help: "Listing pages finished, by result (done, failed, skipped, past-end)."}, []string{"result"}),
		Fetches: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "litcrawl_fetches_total",
			Help: "HTTP fetches, by status class (2xx, 3xx, 4xx, 5xx, error)."}, []string{"status_class"}),
		Retries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "litcrawl_retries_total",
			Help: "Failed tries of pages, by cause (network, http-5xx, http-429, truncated, soft-block, circuit-open)."}, []string{"cause"}),
		Breaker: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "litcrawl_circuit_breaker_state",
			Help: "Per-host circuit breaker: 0 closed, 0.5 half-open, 1 open."}, []string{"host"}),
	}
	reg.MustRegister(m.Pages, m.Fetches, m.Retries, m.Breaker)
	return m
}

func (m *Metrics) page(result string) {
	if m != nil {
		m.Pages.WithLabelValues(result).Inc()
	}
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

func (m *Metrics) retry(cause string) {
	if m != nil {
		m.Retries.WithLabelValues(cause).Inc()
	}
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
	}
	m.Breaker.WithLabelValues(host).Set(v)
}
