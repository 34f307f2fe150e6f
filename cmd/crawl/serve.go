package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/litcrawl/litcrawl/internal/app"
	"github.com/litcrawl/litcrawl/internal/archive"
	"github.com/litcrawl/litcrawl/internal/config"
	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/history"
	htmlreport "github.com/litcrawl/litcrawl/internal/report"
	"github.com/litcrawl/litcrawl/internal/testsite"
	"github.com/litcrawl/litcrawl/sink"
)

// synthSpec is a --synth value: JOURNAL:PAGES[:PAPERS].
type synthSpec struct {
	journal       int64
	pages, papers int
}

func parseSynth(s string) (synthSpec, error) {
	parts := strings.Split(s, ":")
	bad := exitcode.UsageError(fmt.Errorf("--synth %q: expected JOURNAL:PAGES or JOURNAL:PAGES:PAPERS, e.g. 1001:20: a positive journal id, 1 to 100000 pages, 1 to 200 papers a page", s))
	if len(parts) < 2 || len(parts) > 3 {
		return synthSpec{}, bad
	}
	sp := synthSpec{papers: 20}
	var err error
	if sp.journal, err = strconv.ParseInt(parts[0], 10, 64); err != nil || sp.journal < 1 {
		return sp, bad
	}
	if sp.pages, err = strconv.Atoi(parts[1]); err != nil || sp.pages < 1 || sp.pages > 100000 {
		return sp, bad
	}
	if len(parts) == 3 {
		if sp.papers, err = strconv.Atoi(parts[2]); err != nil || sp.papers < 1 || sp.papers > 200 {
			return sp, bad
		}
	}
	return sp, nil
}

// loopback refuses to serve the test site anywhere but on this machine.
func loopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return exitcode.UsageError(fmt.Errorf("--addr %q: expected HOST:PORT, e.g. 127.0.0.1:8089", addr))
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return exitcode.UsageError(fmt.Errorf("--addr %q: the test site serves on loopback only (127.0.0.1, ::1, localhost)", addr))
	}
	return nil
}

// buildSite makes a test site from --dir, --synth, --faults and --seed.
func buildSite(dir, warcDir string, synth []string, faults string, seed int64) (*testsite.Site, int, error) {
	site := testsite.New()
	pages := 0
	if warcDir != "" {
		// The last archived response of each path (robots.txt included).
		err := archive.Responses(warcDir, func(r archive.Response) error {
			u, err := url.Parse(r.URL)
			if err != nil {
				return nil
			}
			h := r.Header.Clone()
			h.Del("Content-Length")
			if u.Path == "/robots.txt" && r.Status == 200 {
				site.SetRobots(string(r.Body))
				return nil
			}
			site.SetResponse(u.Path, r.Status, h, r.Body)
			pages++
			return nil
		})
		if err != nil {
			return nil, 0, fmt.Errorf("--archive: %w", err)
		}
	}
	if dir != "" {
		if info, err := os.Stat(dir); err != nil || !info.IsDir() {
			return nil, 0, fmt.Errorf("--dir %s: not a directory", dir)
		}
		n, err := site.LoadDir(dir)
		if err != nil {
			return nil, 0, fmt.Errorf("--dir %s: %w", dir, err)
		}
		pages += n
	}
	for _, s := range synth {
		sp, err := parseSynth(s)
		if err != nil {
			return nil, 0, err
		}
		site.SynthJournal(sp.journal, sp.pages, sp.papers)
		pages += sp.pages
	}
	p, err := testsite.ProfileNamed(faults)
	if err != nil {
		return nil, 0, exitcode.UsageError(fmt.Errorf("--faults: %w", err))
	}
	site.SetProfile(p, seed)
	if faults == "attack" {
		site.SetAttack()
		pages += len(testsite.AttackJournals)
	}
	return site, pages, nil
}

func newServeCmd() *cobra.Command {
	var dir, warcDir, addr, faults string
	var verbose bool
	var seed int64
	var synth []string
	var grow growFlag
	cmd := &cobra.Command{
		Use:   "serve [--dir DIR] [--archive DIR] [--synth J:PAGES[:PAPERS]] [--grow N/INTERVAL] [--addr 127.0.0.1:8089] [--faults PROFILE]",
		Short: "Serve fixture or synthetic listing pages on loopback, with injected faults",
		Long: `serve runs the test site: the listing pages of --dir (files named
literature_d{journal}[_{page}].htm), the responses of a WARC archive
(--archive, as --archive on a crawl wrote them), and synthetic journals (--synth,
unique papers, about 60 KB a page) under the site's URL scheme, on a
loopback address only. --faults injects faults at random: none, flaky
(5xx, 429 with Retry-After, resets, truncated and slow responses, soft
blocks at a few percent each) or hostile (high rates); the same --seed
gives the same faults. --faults attack adds journals 9001-9009, each a
hostile or broken site in one way (a page answering every page number, non-
paper JSON, a gzip bomb, 10,000 papers, redirects to another port and
host, a slowloris, a Retry-After of a day, a host down for ever) and a
robots.txt with a Crawl-delay of a day: see docs/security.md. Circuits
are per host and these journals share one: crawl the dead one (9009)
last, or it takes the others down with it. It serves until interrupted.

--grow N/INTERVAL adds N new papers at page 1 of each --synth journal
every INTERVAL, pushing the others down a page at a time, as the live
site does between nightlies: a nightly run then delivers them alone.`,
		Example: `  crawl serve --dir fixtures/html --faults flaky --seed 7
  crawl serve --synth 1001:2000 --addr 127.0.0.1:8089
  crawl backfill --journal 1001 --pages 1- --base-url http://127.0.0.1:8089 --delay 0
  crawl serve --faults attack
  crawl serve --synth 1001:50 --grow 10/1m`,
		Args: noArgs("serve"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := loopback(addr); err != nil {
				return err
			}
			if _, err := testsite.ProfileNamed(faults); err != nil {
				return exitcode.UsageError(fmt.Errorf("--faults: %w", err))
			}
			if grow.n > 0 && len(synth) == 0 {
				return exitcode.Usagef("--grow %s: adds papers to the --synth journals: give --synth J:PAGES too", grow.String())
			}
			if dir == "" && warcDir == "" && len(synth) == 0 && faults != "attack" {
				return exitcode.UsageError(errors.New("nothing to serve: give --dir DIR, --archive DIR and/or --synth J:PAGES (or --faults attack)"))
			}
			site, pages, err := buildSite(dir, warcDir, synth, faults, seed)
			if err != nil {
				return err
			}
			ln, err := listen("--addr", addr)
			if err != nil {
				return fmt.Errorf("serve: %w", err)
			}
			if site.Robots() == "" {
				site.SetRobots("User-agent: *\nAllow: /\n")
			}
			of(cmd).quietStop.Store(true) // Ctrl-C just ends the site
			srv := &http.Server{Handler: siteHandler(site, verbose, cmd.ErrOrStderr()), ReadHeaderTimeout: 10 * time.Second}
			growing := ""
			if grow.n > 0 {
				growing = fmt.Sprintf("; growing by %d papers at page 1 of each synthetic journal every %v", grow.n, grow.every)
			}
			say(cmd.ErrOrStderr(), slog.LevelInfo, fmt.Sprintf("serving %d pages on http://%s (faults: %s, seed %d)%s; interrupt to stop", pages, ln.Addr(), faults, seed, growing),
				"addr", ln.Addr().String(), "pages", pages, "faults", faults, "seed", seed, "grow", grow.String())
			ctx, cancel := stopOnSignal(cmd.Context(), 0)
			defer cancel()
			if grow.n > 0 {
				if err := startGrowing(ctx, site, synth, grow, cmd.ErrOrStderr()); err != nil {
					return err
				}
			}
			return serveUntil(ctx, srv, ln, "serve")
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dir, "dir", "", "serve the listing pages found below this directory")
	fl.StringVar(&warcDir, "archive", "", "serve the responses archived in this directory of WARC files (the last one of each path)")
	fl.StringArrayVar(&synth, "synth", nil, "serve a synthetic journal: JOURNAL:PAGES[:PAPERS per page, default 20] (repeatable)")
	fl.StringVar(&addr, "addr", "127.0.0.1:8089", "loopback address to listen on")
	fl.StringVar(&faults, "faults", "none", "fault profile: none, flaky, hostile or attack (journals 9001-9009)")
	fl.Int64Var(&seed, "seed", 1, "seed of the fault profile (the same seed gives the same faults)")
	fl.BoolVar(&verbose, "verbose", false, "log every request (method, path, status, duration)")
	fl.Var(&grow, "grow", "add N new papers at page 1 of each --synth journal every INTERVAL (`N/INTERVAL`, e.g. 10/1m: 1 to 1000 papers, 1s to 24h)")
	return cmd
}

// growFlag is --grow N/INTERVAL.
type growFlag struct {
	n     int
	every time.Duration
}

func (g *growFlag) Set(s string) error {
	a, b, ok := strings.Cut(s, "/")
	n, err := strconv.Atoi(a)
	every, err2 := time.ParseDuration(b)
	if !ok || err != nil || err2 != nil || n < 1 || n > 1000 || every < time.Second || every > 24*time.Hour {
		return fmt.Errorf("expected N/INTERVAL such as 10/1m: 1 to 1000 papers, every 1s to 24h")
	}
	g.n, g.every = n, every
	return nil
}

func (g *growFlag) String() string {
	if g.n == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%v", g.n, g.every)
}
func (g *growFlag) Type() string { return "N/INTERVAL" }

// growFirstPage is where grown papers' ids begin (SynthID's page field):
// above any --synth journal's pages.
const growFirstPage = 100001

// startGrowing adds g.n papers at the top of each synthetic journal every
// g.every until ctx ends, saying so on w.
func startGrowing(ctx context.Context, site *testsite.Site, synth []string, g growFlag, w io.Writer) error {
	type listing struct {
		journal int64
		perPage int
		ids     []string
	}
	var ls []*listing
	for _, sv := range synth {
		sp, err := parseSynth(sv)
		if err != nil {
			return err
		}
		l := &listing{journal: sp.journal, perPage: sp.papers}
		for p := 1; p <= sp.pages; p++ {
			for i := range sp.papers {
				l.ids = append(l.ids, testsite.SynthID(sp.journal, p, i))
			}
		}
		ls = append(ls, l)
	}
	go func() {
		t := time.NewTicker(g.every)
		defer t.Stop()
		added := 0
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			for _, l := range ls {
				fresh := make([]string, g.n)
				for i := range fresh {
					k := added + g.n - 1 - i // newest first
					fresh[i] = testsite.SynthID(l.journal, growFirstPage+k/100, k%100)
				}
				l.ids = append(fresh, l.ids...)
				site.SetListing(l.journal, l.ids, l.perPage)
			}
			added += g.n
			say(w, slog.LevelInfo, fmt.Sprintf("grew: %d new papers at page 1 of each journal (%d added so far)", g.n, added), "added", g.n, "added_total", added)
		}
	}()
	return nil
}

// serveUntil serves on ln until ctx ends, then shuts the server down
// (5 s for the requests in hand); what names the command in its errors.
func serveUntil(ctx context.Context, srv *http.Server, ln net.Listener, what string) error {
	go func() {
		<-ctx.Done()
		sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
		defer c()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// siteHandler serves the site, its index at /, and with verbose logs every
// request on w.
func siteHandler(site *testsite.Site, verbose bool, w io.Writer) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
			io.WriteString(rw, site.Index())
			return
		}
		if !verbose {
			site.ServeHTTP(rw, r)
			return
		}
		start := time.Now()
		sw := &statusWriter{ResponseWriter: rw, status: http.StatusOK}
		site.ServeHTTP(sw, r)
		say(w, slog.LevelInfo, fmt.Sprintf("%s %s %d %v", r.Method, r.URL.RequestURI(), sw.status, time.Since(start).Round(time.Millisecond)),
			"method", r.Method, "path", r.URL.RequestURI(), "status", sw.status, "seconds", time.Since(start).Seconds())
	})
}

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) { s.status = code; s.ResponseWriter.WriteHeader(code) }
func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
func (s *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := s.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("cannot hijack")
	}
	return h.Hijack()
}

// demoConfig is the configuration of crawl demo: the test site at base,
// four requests at once and no delay (it is on this machine), retries
// quick enough for a demo.
func demoConfig(base string) *config.Config {
	cfg := config.Default().CheckSinksBy(sink.Registered{})
	cfg.Site.BaseURL, cfg.Site.AllowedHosts = base, []string{"127.0.0.1"}
	f := &cfg.Fetch
	f.Concurrency, f.Delay, f.Jitter, f.Timeout = 4, 0, 0, config.Duration(5*time.Second)
	f.Attempts, f.BackoffBase, f.BackoffMax, f.MaxRetryAfter = 8, config.Duration(20*time.Millisecond), config.Duration(500*time.Millisecond), config.Duration(time.Second)
	f.BreakerThreshold, f.BreakerCooldown, f.UserAgent = 10, config.Duration(200*time.Millisecond), "litcrawl-demo"
	return cfg
}

// demoArrivals are the papers that arrive at the top of each demo journal
// before each of the demo's three nights.
var demoArrivals = [][3]int{{14, 6, 25}, {9, 0, 31}, {22, 11, 4}}

// demoJournals are the synthetic journals of crawl demo: 3 journals of 6
// pages of 20 papers.
var demoJournals = []int64{1001, 1002, 1003}

const demoPages = 6

func newDemoCmd() *cobra.Command {
	var outDir, faults string
	var seed int64
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the whole pipeline offline against a built-in flaky test site",
		Long: `demo starts the test site in-process on a free loopback port with the
flaky fault profile, backfills three synthetic journals (360 papers)
into OUT/demo.jsonl with the crawl state in OUT/demo-state, then runs
three nightly crawls, new papers arriving on the site before each, and
writes the HTML report of the four runs to OUT/report.html. Each demo
starts afresh: it removes the previous demo's output and state. No
network is needed.`,
		Args: noArgs("demo"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, ok := testsite.Profiles[faults]; !ok {
				return exitcode.UsageError(fmt.Errorf("--faults %q: expected none, flaky or hostile (crawl serve --faults attack serves the attack journals)", faults))
			}
			var synth []string
			for _, j := range demoJournals {
				synth = append(synth, fmt.Sprintf("%d:%d", j, demoPages))
			}
			site, _, err := buildSite("", "", synth, faults, seed)
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return fmt.Errorf("demo: %w", err)
			}
			srv := &http.Server{Handler: site, ReadHeaderTimeout: 10 * time.Second}
			go srv.Serve(ln)
			defer srv.Close()
			base := "http://" + ln.Addr().String()

			out, stateDir := filepath.Join(outDir, "demo.jsonl"), filepath.Join(outDir, "demo-state")
			if err := os.RemoveAll(stateDir); err != nil {
				return err
			}
			if err := os.Remove(out); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			sayf(cmd.ErrOrStderr(), slog.LevelInfo, "demo: test site on %s (faults: %s, seed %d); backfilling journals %v into %s", base, faults, seed, demoJournals, out)
			env, err := newEnv(cmd)
			if err != nil {
				return err
			}
			env.Config = demoConfig(base)
			ctx, cancel := stopOnSignal(cmd.Context(), 5*time.Second)
			defer cancel()
			sum, err := env.Crawl(ctx, app.Crawl{Kind: history.Backfill, Journals: demoJournals, From: 1, To: 0,
				Sinks: []string{"jsonl:" + out}, StateDir: stateDir,
				Progress: func(total int64, sum *engine.Summary) func() {
					return startProgress(cmd.ErrOrStderr(), int64(len(demoJournals)*demoPages), sum, env.Log)
				}})
			if err != nil && !errors.Is(err, app.ErrPagesFailed) {
				return err
			}
			papers := sum.PapersNew.Load()
			// Three nights: new papers arrive at the top of each journal's
			// listing, and a nightly run delivers them alone.
			listings := map[int64][]string{}
			for _, j := range demoJournals {
				for p := 1; p <= demoPages; p++ {
					for i := range 20 {
						listings[j] = append(listings[j], testsite.SynthID(j, p, i))
					}
				}
			}
			for night, arrivals := range demoArrivals {
				if ctx.Err() != nil {
					break
				}
				for k, j := range demoJournals {
					var fresh []string
					for i := range arrivals[k] {
						fresh = append(fresh, testsite.SynthID(j, 900+night, i))
					}
					listings[j] = append(fresh, listings[j]...)
					site.SetListing(j, listings[j], 20)
				}
				sayf(cmd.ErrOrStderr(), slog.LevelInfo, "demo: night %d: %d new papers on the site; nightly run", night+1, arrivals[0]+arrivals[1]+arrivals[2])
				nsum, nerr := env.Crawl(ctx, app.Crawl{Kind: history.Nightly, Journals: demoJournals, Sinks: []string{"jsonl:" + out}, StateDir: stateDir,
					Progress: func(total int64, sum *engine.Summary) func() {
						return startProgress(cmd.ErrOrStderr(), total, sum, env.Log)
					}})
				if nerr != nil && !errors.Is(nerr, app.ErrPagesFailed) {
					return nerr
				}
				if nsum != nil {
					papers += nsum.PapersNew.Load()
				}
				if err == nil {
					err = nerr
				}
			}
			reportPath := filepath.Join(outDir, "report.html")
			if h, herr := history.Read(stateDir, env.Config.Quality); herr == nil {
				if _, herr = writeReport(reportPath, htmlreport.Data{StateDir: stateDir, Runs: h.Runs, Thresholds: env.Config.Quality, Generated: time.Now()}); herr != nil {
					return herr
				}
			} else {
				return herr
			}
			// The next steps, with the command as this one was called
			// (go run ./cmd/crawl in a checkout, crawl once installed).
			self := "crawl"
			if exe, err := os.Executable(); err == nil && strings.Contains(exe, "go-build") {
				self = "go run ./cmd/crawl"
			}
			var next strings.Builder
			tw := tabwriter.NewWriter(&next, 0, 4, 3, ' ', 0)
			fmt.Fprintf(tw, "  open %s in a browser\tthe report of the four runs\n", reportPath)
			fmt.Fprintf(tw, "  %s runs --state-dir %s\tthe run history\n", self, stateDir)
			fmt.Fprintf(tw, "  %s runs show latest --state-dir %s\tthe last run in full\n", self, stateDir)
			fmt.Fprintf(tw, "  %s serve --synth 1001:50 --faults flaky\ta test site to crawl by hand (README: Everyday commands)\n", self)
			tw.Flush()
			sayf(cmd.ErrOrStderr(), slog.LevelInfo, "demo: %d papers in %s (state in %s); report in %s\nNext:\n%s",
				papers, out, stateDir, reportPath, strings.TrimRight(next.String(), "\n"))
			return err
		},
	}
	cmd.Flags().StringVar(&outDir, "out", "out", "directory for demo.jsonl and demo-state")
	cmd.Flags().StringVar(&faults, "faults", "flaky", "fault profile of the test site: none, flaky or hostile")
	cmd.Flags().Int64Var(&seed, "seed", 1, "seed of the fault profile")
	return cmd
}
