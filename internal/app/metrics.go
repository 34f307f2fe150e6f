package app

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/litcrawl/litcrawl/crawler"
	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/sink"
)

// Metrics are every metric of a crawl, registered once per process.
type Metrics struct {
	Fetch       *crawler.Metrics
	Engine      *engine.Metrics
	sinkPapers  *prometheus.CounterVec
	sinkErrors  *prometheus.CounterVec
	sinkLatency *prometheus.HistogramVec
	reg         prometheus.Registerer
}

// NewMetrics registers the crawl's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{Fetch: crawler.NewMetrics(reg), Engine: engine.NewMetrics(reg), reg: reg,
		sinkPapers: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "litcrawl_sink_papers_total",
			Help: "Papers acknowledged by each sink."}, []string{"sink"}),
		sinkErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "litcrawl_sink_errors_total",
			Help: "Failed writes, by sink."}, []string{"sink"}),
		sinkLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "litcrawl_sink_write_seconds",
			Help: "How long a sink took to acknowledge a write.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 8)}, []string{"sink"}),
	}
	reg.MustRegister(m.sinkPapers, m.sinkErrors, m.sinkLatency)
	return m
}

// observe counts a sink's deliveries, errors and latency.
func (m *Metrics) observe(s sink.Sink) sink.Sink {
	if m == nil {
		return s
	}
	name := sink.Describe(s)
	return sink.Observe(s, func(n int, took time.Duration, err error) {
		m.sinkLatency.WithLabelValues(name).Observe(took.Seconds())
		if err != nil {
			m.sinkErrors.WithLabelValues(name).Inc()
			return
		}
		m.sinkPapers.WithLabelValues(name).Add(float64(n))
	})
}

func (m *Metrics) fetch() *crawler.Metrics {
	if m == nil {
		return nil
	}
	return m.Fetch
}

func (m *Metrics) engine() *engine.Metrics {
	if m == nil {
		return nil
	}
	return m.Engine
}

// gauge registers a gauge for the life of a command; the returned function
// unregisters it.
func (m *Metrics) gauge(opts prometheus.GaugeOpts, f func() float64) func() {
	if m == nil {
		return func() {}
	}
	g := prometheus.NewGaugeFunc(opts, f)
	if m.reg.Register(g) != nil {
		return func() {}
	}
	return func() { m.reg.Unregister(g) }
}
