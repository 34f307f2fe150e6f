package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/litcrawl/litcrawl/crawler"
	"github.com/litcrawl/litcrawl/sink"
)

// metricsRegistry holds every metric of the process (--metrics-addr).
var metricsRegistry = func() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}()

var (
	crawlerMetrics = crawler.NewMetrics(metricsRegistry)
	sinkPapers     = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "litcrawl_sink_papers_total",
		Help: "Papers acknowledged by each sink."}, []string{"sink"})
	sinkErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "litcrawl_sink_errors_total",
		Help: "Failed writes, by sink."}, []string{"sink"})
	sinkLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "litcrawl_sink_write_seconds",
		Help: "How long a sink took to acknowledge a write.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 8)}, []string{"sink"})
)

func init() { metricsRegistry.MustRegister(sinkPapers, sinkErrors, sinkLatency) }

// observeSink counts a sink's deliveries, errors and latency.
func observeSink(s sink.Sink) sink.Sink {
	name := sink.Describe(s)
	return sink.Observe(s, func(n int, took time.Duration, err error) {
		sinkLatency.WithLabelValues(name).Observe(took.Seconds())
		if err != nil {
			sinkErrors.WithLabelValues(name).Inc()
			return
		}
		sinkPapers.WithLabelValues(name).Add(float64(n))
	})
}

// startMetrics serves /metrics (Prometheus) and /debug/pprof on addr and
// returns the address it listens on.
func startMetrics(addr string) (string, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(metricsRegistry, promhttp.HandlerOpts{Registry: metricsRegistry}))
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return ln.Addr().String(), func() { srv.Close() }, nil
}
