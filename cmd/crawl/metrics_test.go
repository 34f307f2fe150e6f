package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/internal/exitcode"
)

// /metrics shows what a crawl did, per page result, status class and
// sink; /debug/pprof answers on the same listener with --pprof only, and
// never serves the command line.
func TestMetricsEndpoint(t *testing.T) {
	t.Parallel()
	sess := newSession(nil)
	addr, stop, err := startMetrics(sess.registry, "127.0.0.1:0", true)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	_, srv := fixtureSite(t)
	dir := t.TempDir()
	code, _, errs := crawlIn(t, sess, "backfill", "--journal", "501422", "--pages", "1-5", "--base-url", srv.URL, "--delay", "0",
		"--state-dir", filepath.Join(dir, "s"), "--sink", "jsonl:"+filepath.Join(dir, "p.jsonl"))
	if code != exitcode.OK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	get := func(path string) string {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		return string(b)
	}
	m := get("/metrics")
	for _, want := range []string{`litcrawl_pages_total{result="done"}`, `litcrawl_pages_total{result="past-end"}`,
		`litcrawl_fetches_total{status_class="2xx"}`, `litcrawl_fetches_total{status_class="4xx"}`,
		`litcrawl_sink_papers_total{sink="jsonl:`, `litcrawl_sink_write_seconds_bucket`, `litcrawl_circuit_breaker_state{host="127.0.0.1"} 0`,
		`go_goroutines`} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if !strings.Contains(get("/debug/pprof/"), "goroutine") {
		t.Error("/debug/pprof/ does not list profiles")
	}
	if code := status(t, "http://"+addr+"/debug/pprof/cmdline"); code != http.StatusNotFound {
		t.Errorf("/debug/pprof/cmdline: %d, want 404 (the command line may hold passwords)", code)
	}
}

func status(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Without --pprof nothing but /metrics is served.
func TestPprofIsOffByDefault(t *testing.T) {
	t.Parallel()
	addr, stop, err := startMetrics(newSession(nil).registry, "127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/profile"} {
		if code := status(t, "http://"+addr+p); code != http.StatusNotFound {
			t.Errorf("%s without --pprof: %d, want 404", p, code)
		}
	}
	if code, _, errs := crawl(t, "parse", "--pprof", "fixtures/edge/captcha.htm"); code != exitcode.Usage || !strings.Contains(errs, "--metrics-addr") {
		t.Errorf("--pprof without --metrics-addr: exit %d, %q", code, errs)
	}
}

// --metrics-file writes the metrics at the end in node_exporter's textfile
// format, for one-shot runs whose scrape endpoint would be gone.
func TestMetricsFile(t *testing.T) {
	t.Parallel()
	_, srv := fixtureSite(t)
	dir := t.TempDir()
	prom := filepath.Join(dir, "litcrawl.prom")
	code, _, errs := crawl(t, "backfill", "--journal", "501422", "--pages", "1-2", "--base-url", srv.URL, "--delay", "0",
		"--state-dir", filepath.Join(dir, "s"), "-o", filepath.Join(dir, "p.jsonl"), "--metrics-file", prom)
	if code != exitcode.OK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	b, err := os.ReadFile(prom)
	if err != nil || !strings.Contains(string(b), `litcrawl_pages_total{result="done"}`) {
		t.Errorf("metrics file: %v\n%s", err, b)
	}
	// Its directory is made when missing; one that is a file is refused.
	made := filepath.Join(dir, "no", "such", "m.prom")
	if code, _, errs := crawl(t, "parse", "--metrics-file", made, filepath.Join(repoRoot, "fixtures", "html", "flat-p")); code != exitcode.OK {
		t.Errorf("--metrics-file in a missing directory: exit %d: %s", code, errs)
	}
	if _, err := os.Stat(made); err != nil {
		t.Errorf("--metrics-file in a missing directory: %v", err)
	}
	if code, _, errs := crawl(t, "parse", "--metrics-file", filepath.Join(prom, "m.prom"), filepath.Join(repoRoot, "fixtures", "html", "flat-p")); code != exitcode.Usage ||
		!strings.Contains(errs, "is not a directory") {
		t.Errorf("--metrics-file below a file: exit %d: %s", code, errs)
	}
}
