package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/litcrawl/litcrawl/archive"
	"github.com/litcrawl/litcrawl/config"
	"github.com/litcrawl/litcrawl/crawler"
	"github.com/litcrawl/litcrawl/state"
)

type crawlFlags struct {
	journals    []int64
	baseURL     string
	sinks       []string
	stateDir    string
	concurrency int
	delay       time.Duration
	report      string
	archive     string
	offline     string
}

func (f *crawlFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.Int64SliceVar(&f.journals, "journal", nil, "journal id to crawl (repeatable); replaces the configured journals")
	fl.StringVar(&f.baseURL, "base-url", "", "site base URL, e.g. a local test server (its host becomes the only allowed host)")
	fl.StringArrayVar(&f.sinks, "sink", nil, "sink URL (repeatable); replaces the configured sinks; default stdout")
	fl.StringVar(&f.stateDir, "state-dir", "", "crawl state directory (default: state_dir from the config)")
	fl.IntVar(&f.concurrency, "concurrency", 0, "requests in flight per host (default: fetch.concurrency)")
	fl.DurationVar(&f.delay, "delay", -1, "delay between requests to a host, e.g. 0, 1.5s (default: fetch.delay)")
	fl.StringVar(&f.report, "report", "", "write the run summary as JSON to this file")
	fl.StringVar(&f.archive, "archive", "", "record every fetch as WARC files in this directory")
	fl.StringVar(&f.offline, "offline", "", "fetch nothing: answer every request from the WARC files of this directory")
}

// crawlerConfig merges the configuration and the flags.
func (f *crawlFlags) crawlerConfig(cmd *cobra.Command, cfg *config.Config) (crawler.Config, error) {
	c := crawler.Config{
		BaseURL: cfg.Site.BaseURL, FirstPage: cfg.Site.FirstPage, PageN: cfg.Site.PageN, AllowedHosts: cfg.Site.AllowedHosts,
		Concurrency: cfg.Fetch.Concurrency, Delay: cfg.Fetch.Delay.D(), Jitter: cfg.Fetch.Jitter.D(), Timeout: cfg.Fetch.Timeout.D(),
		MaxBodyBytes: cfg.Fetch.MaxBodyBytes,
		Retry: crawler.RetryPolicy{MaxAttempts: cfg.Fetch.Attempts, BackoffBase: cfg.Fetch.BackoffBase.D(),
			BackoffMax: cfg.Fetch.BackoffMax.D(), MaxRetryAfter: cfg.Fetch.MaxRetryAfter.D()},
		BreakerThreshold: cfg.Fetch.BreakerThreshold, BreakerCooldown: cfg.Fetch.BreakerCooldown.D(),
		SlowdownMax: cfg.Fetch.BackoffMax.D(), UserAgent: cfg.Fetch.UserAgent, Robots: cfg.Fetch.Robots,
		Metrics: crawlerMetrics,
	}
	if f.baseURL != "" {
		u, err := url.Parse(f.baseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return c, usageError{fmt.Errorf("--base-url %q: expected an http(s) URL such as http://127.0.0.1:8089", f.baseURL)}
		}
		c.BaseURL, c.AllowedHosts = strings.TrimRight(f.baseURL, "/"), []string{u.Hostname()}
	}
	if cmd.Flags().Changed("concurrency") {
		if f.concurrency < 1 {
			return c, usageError{fmt.Errorf("--concurrency %d: expected at least 1", f.concurrency)}
		}
		c.Concurrency = f.concurrency
	}
	if cmd.Flags().Changed("delay") {
		if f.delay < 0 {
			return c, usageError{fmt.Errorf("--delay %v: expected 0 or more", f.delay)}
		}
		c.Delay, c.Jitter = f.delay, min(c.Jitter, f.delay/2)
	}
	return c, nil
}

// parsePages reads "A-B" or "A-" (until the listing ends) or "A".
func parsePages(s string) (from, to int, err error) {
	a, b, dash := strings.Cut(s, "-")
	from, err = strconv.Atoi(a)
	if err == nil && dash && b != "" {
		to, err = strconv.Atoi(b)
	} else if err == nil && !dash {
		to = from
	}
	if err != nil || from < 1 || (to != 0 && to < from) {
		return 0, 0, usageError{fmt.Errorf("--pages %q: expected A-B, A- (until the listing ends) or A, with 1 <= A <= B", s)}
	}
	return from, to, nil
}

// newRunID names a run: its start time (ids sort by it) and 8 random hex
// digits, so two runs never share an id, even in the same second (a
// nightly run must not take the previous run's papers for its own).
func newRunID(now time.Time) string {
	var b [4]byte
	rand.Read(b[:])
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

func newBackfillCmd() *cobra.Command {
	var f crawlFlags
	var pages string
	var noResume, redeliver bool
	cmd := &cobra.Command{
		Use:   "backfill --journal J [--journal J2 …] --pages A-B",
		Short: "Fetch a range of listing pages (resumable)",
		Long: `backfill fetches pages A to B (or A- until the listing ends) of each
journal, delivers the papers not delivered before to the sinks, and
commits each page to the crawl state once every sink acknowledged it.
Pages committed by an earlier run are skipped (--no-resume refetches
them; their papers are still delivered only if not known, unless
--redeliver). A run killed at any moment resumes where it stopped, with
every paper delivered once.

Exit codes: 0 every page done, 3 some pages failed (listed in the
summary and retried by the next run), 1 fatal, 2 usage, 130/143
interrupted.`,
		Example: `  crawl backfill --journal 501422 --pages 1-50 --sink jsonl:out/papers.jsonl
  crawl backfill --journal 501422 --pages 1- --base-url http://127.0.0.1:8089 --delay 0`,
		Args: noArgs("backfill"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if pages == "" {
				return usageError{fmt.Errorf("--pages is required (A-B, A- or A)")}
			}
			from, to, err := parsePages(pages)
			if err != nil {
				return err
			}
			return runCrawl(cmd, &f, func(c *crawler.Crawler, _ *config.Config, journals []int64, runID string, p *crawler.Summary) (*crawler.Summary, error) {
				total := int64(-1)
				if to != 0 {
					total = int64(len(journals) * (to - from + 1))
				}
				stop := startProgress(cmd.ErrOrStderr(), total, p, slogFrom(cmd))
				defer stop()
				sum, err := c.Backfill(cmd.Context(), crawler.BackfillOptions{Journals: journals, From: from, To: to,
					NoResume: noResume, Redeliver: redeliver, RunID: runID, Stop: stopChan(cmd.Context()), Progress: p})
				return sum, err
			})
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&pages, "pages", "", "page range: A-B, A- (until the listing ends) or A")
	cmd.Flags().BoolVar(&noResume, "no-resume", false, "refetch pages committed by earlier runs")
	cmd.Flags().BoolVar(&redeliver, "redeliver", false, "deliver papers again even if they were delivered before")
	return cmd
}

// runCrawl sets up config, logger, state and sinks, runs the crawl and
// reports; it is shared by the crawl commands.
func runCrawl(cmd *cobra.Command, f *crawlFlags, crawl func(c *crawler.Crawler, cfg *config.Config, journals []int64, runID string, progress *crawler.Summary) (*crawler.Summary, error)) error {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return err
	}
	log, err := newLogger(cmd)
	if err != nil {
		return err
	}
	cmd.SetContext(context.WithValue(cmd.Context(), loggerKey{}, log))
	ccfg, err := f.crawlerConfig(cmd, cfg)
	if err != nil {
		return err
	}
	limitMemory(ccfg.Concurrency)
	journals := cfg.Journals
	if len(f.journals) > 0 {
		journals = f.journals
	}
	if len(journals) == 0 {
		return usageError{fmt.Errorf("no journal: give --journal J or set journals in the config")}
	}
	for _, j := range journals {
		if j <= 0 {
			return usageError{fmt.Errorf("--journal %d: expected a positive journal id", j)}
		}
	}
	sinks := cfg.Sinks
	if cmd.Flags().Changed("sink") {
		sinks = f.sinks
	}
	stateDir := cfg.StateDir
	if f.stateDir != "" {
		stateDir = f.stateDir
	}
	if f.archive != "" && f.offline != "" {
		return usageError{errors.New("--archive and --offline: give one (an offline run fetches nothing to record)")}
	}
	// After a signal, the pages in flight get shutdown_timeout to finish.
	ctx, cancel := stopOnSignal(cmd.Context(), cfg.ShutdownTimeout.D())
	defer cancel()
	cmd.SetContext(ctx)
	st, err := state.Open(stateDir)
	if err != nil {
		return err
	}
	defer st.Close()
	out, err := openSinks(ctx, sinks, cmd.OutOrStdout())
	if err != nil {
		return err
	}
	runID := newRunID(time.Now())
	switch {
	case f.offline != "":
		a, err := archive.Load(f.offline)
		if err != nil {
			out.Close()
			return fmt.Errorf("--offline: %w", err)
		}
		ccfg.Transport = a
	case f.archive != "":
		rec, err := archive.NewRecorder(nil, archive.RecorderOptions{Dir: f.archive, RunID: runID, MaxBody: ccfg.MaxBodyBytes})
		if err != nil {
			out.Close()
			return fmt.Errorf("--archive: %w", err)
		}
		defer rec.Close()
		ccfg.Transport = rec
	}
	c, err := crawler.New(ctx, ccfg, st, out, log)
	if err != nil {
		out.Close()
		return err
	}
	progress := crawler.NewSummary()
	var reportOut *reportFile
	if f.report != "" {
		if reportOut, err = openReport(f.report); err != nil {
			out.Close()
			return err
		}
		defer reportOut.discard()
		progress.LogPagesTo(reportOut.pages())
	}
	started := time.Now()
	st.PutRun(state.Run{ID: runID, Kind: cmd.Name(), Started: started})
	sum, crawlErr := crawl(c, cfg, journals, runID, progress)
	if err := out.Close(); err != nil && crawlErr == nil {
		crawlErr = fmt.Errorf("close sinks: %w", err)
	}
	if sum != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "crawl %s %s: %s\n", cmd.Name(), runID, sum)
		for _, pf := range sum.Failures() {
			fmt.Fprintf(cmd.ErrOrStderr(), "  failed: journal %d page %d: %s\n", pf.Journal, pf.Page, pf.Error)
		}
		rep := runReport(runID, cmd.Name(), sum, crawlErr)
		st.PutRun(state.Run{ID: runID, Kind: cmd.Name(), Started: started, Finished: time.Now(), Summary: rep})
		if reportOut != nil {
			err := sum.PageLogErr()
			if err == nil {
				err = reportOut.write(rep)
			}
			if err != nil && crawlErr == nil {
				crawlErr = err
			}
		}
	}
	switch {
	case crawlErr != nil:
		return crawlErr
	case qualityAlarm(cfg.Quality, sum.QualityCounts()) != nil:
		return exitCodeError{exitQuality, qualityAlarm(cfg.Quality, sum.QualityCounts())}
	case sum.Failed.Load() > 0:
		return exitCodeError{exitIncomplete, fmt.Errorf("%d pages failed; the next run retries them", sum.Failed.Load())}
	}
	return nil
}

// runReport is the run summary as JSON, for the run history and --report
// (which adds the page log).
func runReport(runID, kind string, s *crawler.Summary, err error) []byte {
	r := map[string]any{
		"run_id": runID, "kind": kind, "started": s.Started.UTC().Format(time.RFC3339),
		"duration_seconds": time.Since(s.Started).Seconds(),
		"pages":            map[string]int64{"done": s.Done.Load(), "failed": s.Failed.Load(), "skipped": s.Skipped.Load(), "past_end": s.Ended.Load()},
		"papers":           map[string]int64{"new": s.PapersNew.Load(), "known": s.PapersKnown.Load()},
		"retries":          s.Retries(),
		"failures":         s.Failures(),
		"quality":          s.QualityCounts(),
	}
	if err != nil {
		r["error"] = err.Error()
	}
	b, _ := json.Marshal(r)
	return b
}

func newNightlyCmd() *cobra.Command {
	var f crawlFlags
	cmd := &cobra.Command{
		Use:   "nightly",
		Short: "Walk each journal from page 1 and deliver only new papers",
		Long: `nightly walks each configured journal (or --journal) from page 1 until
nightly.stop_after_known_pages consecutive pages hold only papers known
before this run began, or nightly.max_pages, and delivers only papers
never delivered before. Papers delivered earlier in the same run do not
count as known, so papers pushed down by new ones during the walk cannot
stop it early, and are not delivered twice. A page that fails stops its
journal's walk; the next run walks again from page 1.

Exit codes: 0 every walk finished, 3 some pages failed, 1 fatal, 2 usage,
130/143 interrupted.`,
		Example: `  crawl nightly --sink jsonl:out/papers-{date}.jsonl
  crawl nightly --journal 501422 --base-url http://127.0.0.1:8089 --delay 0`,
		Args: noArgs("nightly"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCrawl(cmd, &f, func(c *crawler.Crawler, cfg *config.Config, journals []int64, runID string, p *crawler.Summary) (*crawler.Summary, error) {
				stop := startProgress(cmd.ErrOrStderr(), -1, p, slogFrom(cmd))
				defer stop()
				sum, err := c.Nightly(cmd.Context(), crawler.NightlyOptions{Journals: journals, RunID: runID, Stop: stopChan(cmd.Context()),
					StopAfterKnownPages: cfg.Nightly.StopAfterKnownPages, MaxPages: cfg.Nightly.MaxPages, Progress: p})
				return sum, err
			})
		},
	}
	f.register(cmd)
	return cmd
}

type loggerKey struct{}

// slogFrom is the logger runCrawl put in the command's context.
func slogFrom(cmd *cobra.Command) *slog.Logger {
	if l, ok := cmd.Context().Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return slog.New(slog.DiscardHandler)
}

// qualityAlarm names the first field of the parsed papers below its
// threshold, or returns nil.
func qualityAlarm(t config.Quality, q crawler.Quality) error {
	if q.Pages == 0 {
		return nil
	}
	if per := float64(q.Records) / float64(q.Pages); per < t.MinPapersPerPage {
		return fmt.Errorf("quality alarm: %.1f papers per page (quality.min_papers_per_page %.1f): the site's layout has probably changed", per, t.MinPapersPerPage)
	}
	for _, f := range []struct {
		name string
		n    int
		min  float64
		key  string
	}{
		{"a title", q.WithTitle, t.MinTitleShare, "quality.min_title_share"},
		{"a DOI", q.WithDOI, t.MinDOIShare, "quality.min_doi_share"},
		{"authors", q.WithAuthor, t.MinAuthorsShare, "quality.min_authors_share"},
		{"a publication date", q.WithDate, t.MinPublishedShare, "quality.min_published_share"},
	} {
		if share := float64(f.n) / float64(max(q.Records, 1)); share < f.min {
			return fmt.Errorf("quality alarm: only %.0f%% of %d papers have %s (%s %.2f): the site's layout has probably changed",
				100*share, q.Records, f.name, f.key, f.min)
		}
	}
	return nil
}
