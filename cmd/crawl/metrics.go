package main

import (
	"bufio"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"

	"github.com/litcrawl/litcrawl/internal/atomicfile"
)

// startMetrics serves /metrics (Prometheus) on addr, and /debug/pprof when
// withPprof, and returns the address it listens on. /debug/pprof/cmdline is
// never served: the command line may hold secrets (sink URLs with
// passwords, a --base-url with user info).
func startMetrics(reg *prometheus.Registry, addr string, withPprof bool) (string, func(), error) {
	ln, err := listen("--metrics-addr", addr)
	if err != nil {
		return "", nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	if withPprof {
		mux.HandleFunc("/debug/pprof/", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/debug/pprof/cmdline" {
				http.Error(w, "not served: the command line may hold secrets", http.StatusNotFound)
				return
			}
			pprof.Index(w, r)
		})
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return ln.Addr().String(), func() { srv.Close() }, nil
}

// writeMetricsFile writes the metrics to path in the text format
// node_exporter's textfile collector reads, durably (atomicfile): a
// collector never reads half a file, and a power loss leaves the old one.
func writeMetricsFile(reg *prometheus.Registry, path string) error {
	mfs, err := reg.Gather()
	if err != nil {
		return err
	}
	return atomicfile.Write(path, func(w *bufio.Writer) error {
		for _, mf := range mfs {
			if _, err := expfmt.MetricFamilyToText(w, mf); err != nil {
				return err
			}
		}
		return nil
	})
}
