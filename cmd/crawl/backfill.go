package main

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/litcrawl/litcrawl/internal/app"
	"github.com/litcrawl/litcrawl/internal/config"
	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/history"
	"github.com/litcrawl/litcrawl/site"
)

// crawlFlags are the flags the crawling commands share.
type crawlFlags struct {
	journals    []int64
	baseURL     string
	sinks       sinkFlags
	stateDir    string
	concurrency int
	delay       time.Duration
	report      string
	archive     string
	offline     string
	relearn     bool
}

func (f *crawlFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	journalsVar(fl, &f.journals, "a journal id `J` to crawl (repeatable); replaces the configured journals")
	f.registerSite(cmd)
	stateDirVar(fl, &f.stateDir)
	fl.StringVar(&f.report, "report", "", "write the run summary as JSON to this file")
	fl.StringVar(&f.archive, "archive", "", "record every fetch as WARC files in this directory")
	fl.StringVar(&f.offline, "offline", "", "fetch nothing: answer every request from the WARC files of this directory")
	fl.BoolVar(&f.relearn, "relearn", false, "the journals' papers of this run are their new normal: the quality gate does not compare them with the journals' earlier runs, and later runs learn from this one on (after a change of layout the site made on purpose)")
}

// registerSite registers the flags that say where and how to fetch, and
// where records go (shared with the worker).
func (f *crawlFlags) registerSite(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.baseURL, "base-url", "", "site base URL, e.g. a local test server (its host and port become the only ones allowed); user:password@ in it is sent as Basic auth and shown nowhere")
	f.sinks.register(fl, false, "replaces the config's sinks (default: the config's, else standard output)")
	typedVar(fl, newIntIn(&f.concurrency, 0, 1, config.MaxConcurrency, "requests per host (fetch.concurrency's bounds)"), "concurrency", "requests in flight per host (default: fetch.concurrency)")
	typedVar(fl, newDuration(&f.delay, 0, false, "0 or 1.5s"), "delay", "delay between requests to a host, e.g. 0, 1.5s, for every journal, one with a fetch.delay of its own too (default: fetch.delay)")
}

// apply overrides the configuration with the flags given.
func (f *crawlFlags) apply(cmd *cobra.Command, cfg *config.Config) error {
	if f.baseURL != "" {
		u, err := site.CheckBaseURL(f.baseURL) // the file's rule (site.base_url)
		if err != nil {
			return exitcode.UsageError(fmt.Errorf("--base-url %w", err))
		}
		cfg.Site.BaseURL, cfg.Site.AllowedHosts = strings.TrimRight(f.baseURL, "/"), []string{u.Hostname()}
	}
	if cmd.Flags().Changed("concurrency") {
		cfg.Fetch.Concurrency = f.concurrency
	}
	if cmd.Flags().Changed("delay") {
		cfg.Fetch.Delay, cfg.Fetch.Jitter = config.Duration(f.delay), config.Duration(min(cfg.Fetch.Jitter.D(), f.delay/2))
		cfg.DropJournalDelays() // --delay sets every journal's delay, one of the file's own too
	}
	sinks, err := f.sinks.resolve(cmd, cfg.Sinks)
	if err != nil {
		return err
	}
	if f.sinks.replaces(cmd) {
		cfg.Sinks = sinks
		cfg.DropJournalSinks() // --sink replaces every sink of the file, a journal's too
	}
	warnStdoutSink(cmd, cfg)
	if f.stateDir != "" {
		cfg.StateDir = f.stateDir
	}
	if f.report != "" {
		// (checked, and its directory made, before the state is opened)
		if err := app.PrepareOutputFile(f.report, cfg.StateDir); err != nil {
			return exitcode.UsageError(fmt.Errorf("--report %s: %w", f.report, err))
		}
	}
	// The flags obey the same bounds as the file: one validation for both.
	if err := cfg.Prepare(); err != nil {
		return exitcode.UsageError(fmt.Errorf("with the command-line flags: %w", err))
	}
	return nil
}

// outputsNotSinks refuses --report, --metrics-file and --cpuprofile
// naming a sink's file (a JSONL file, a feeds' directory): each is
// replaced whole (or written) by the command, and the records there would
// be lost while the state marks them delivered. It runs before any of
// them is opened (the root's PersistentPreRunE).
func outputsNotSinks(cmd *cobra.Command, sinks []string) error {
	for _, name := range []string{"report", "metrics-file", "cpuprofile"} {
		fl := cmd.Flags().Lookup(name)
		if fl == nil || fl.Value.String() == "" {
			continue
		}
		if err := app.NotASinksFile(fl.Value.String(), sinks); err != nil {
			return exitcode.UsageError(fmt.Errorf("--%s %s: %w", name, fl.Value.String(), err))
		}
	}
	return nil
}

// commandSinks are the sinks the command delivers to, as far as its
// flags and the configuration say before it runs: --sink and -o, else
// (a crawl, a replay, a retry) the configuration's, its journals' too;
// nil for a command that delivers nothing.
func commandSinks(cmd *cobra.Command) []string {
	fl := cmd.Flags().Lookup("sink")
	if fl == nil {
		return nil
	}
	var sinks []string
	if fl.Changed {
		sinks, _ = cmd.Flags().GetStringArray("sink")
	}
	if o := cmd.Flags().Lookup("output"); o != nil && o.Value.String() != "" {
		sinks = append(sinks, "jsonl:"+o.Value.String())
	}
	if len(sinks) > 0 || cmd.Name() == "parse" {
		return sinks
	}
	if cfg, err := loadConfig(cmd); err == nil {
		return slices.Concat(append([][]string{cfg.Sinks}, slices.Collect(maps.Values(cfg.JournalSinks()))...)...)
	}
	return nil
}

// warnStdoutSink says once, on stderr, that a crawl's records go to
// standard output while that is no terminal (a file, a pipe, a log a
// scheduler keeps): the state marks them delivered, so a scheduled run
// without a file sink would leave its papers in its log.
func warnStdoutSink(cmd *cobra.Command, cfg *config.Config) {
	fileStdout := len(cfg.Sinks) == 0 || slices.Contains(cfg.Sinks, "-")
	stdout := len(cfg.Journals) == 0 && fileStdout
	for _, j := range cfg.Journals { // (a journal with sinks of its own does not use the file's)
		stdout = stdout || len(j.Sinks) == 0 && fileStdout || slices.Contains(j.Sinks, "-")
	}
	if !stdout || terminal(cmd.OutOrStdout()) {
		return
	}
	sayf(cmd.ErrOrStderr(), slog.LevelWarn, "crawl %s: the records go to standard output, which is not a terminal here (a file, a pipe or a log): the crawl state marks them delivered all the same. A scheduled crawl wants a file sink: --sink jsonl:FILE, or sinks: in the configuration (README: Your first week)", cmd.Name())
}

// parsePages reads "A-B" or "A-" (until the listing ends) or "A": page
// numbers in plain digits.
func parsePages(s string) (from, to int, err error) {
	a, b, dash := strings.Cut(s, "-")
	number := func(v string) (int, bool) {
		n, err := strconv.Atoi(v)
		return n, err == nil && v != "" && strings.Trim(v, "0123456789") == "" && n >= 1 && n <= config.MaxPageNumber
	}
	from, ok := number(a)
	switch {
	case ok && dash && b != "":
		to, ok = number(b)
		ok = ok && to >= from
	case ok && !dash:
		to = from
	}
	if !ok {
		return 0, 0, exitcode.UsageError(fmt.Errorf("--pages %q: expected A-B, A- (until the listing ends) or A, with 1 <= A <= B <= %d", s, config.MaxPageNumber))
	}
	return from, to, nil
}

func newBackfillCmd() *cobra.Command {
	var f crawlFlags
	var pages string
	var noResume, redeliver bool
	cmd := &cobra.Command{
		Use:   "backfill --journal J [--journal J2 …] --pages A-B|A-|A",
		Short: "Fetch a range of listing pages (resumable)",
		Long: `backfill fetches pages A to B (or A- until the listing ends) of each
journal, delivers the papers not delivered before to the sinks, and
commits each page to the crawl state once every sink acknowledged it.
Pages committed by an earlier run are skipped (--no-resume refetches
them; their papers are still delivered only if not known, unless
--redeliver). A run killed at any moment resumes where it stopped, with
every paper delivered once. An open range (A-) also stops a journal
after backfill.stop_after_repeat_pages pages in a row with no paper new
to the run, and at page A+backfill.max_pages-1 (the summary says so,
"incomplete:", with the command that goes on).

Exit codes: 0 every page done, 3 some pages failed (listed in the
summary and retried by the next run) or a sink refused records (kept in
the quarantine: crawl quarantine list), 4 quality alarm, 1 fatal (also: a
host that has not answered once in the run), 2 usage, 130/143
interrupted.`,
		Example: `  crawl backfill --journal 501422 --pages 1-50 --sink jsonl:out/papers.jsonl
  crawl backfill --journal 501422 --pages 1- --base-url http://127.0.0.1:8089 --delay 0`,
		Args: noArgs("backfill"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if pages == "" {
				return exitcode.UsageError(fmt.Errorf("--pages is required (A-B, A- or A)"))
			}
			from, to, err := parsePages(pages)
			if err != nil {
				return err
			}
			return runCrawl(cmd, &f, app.Crawl{Kind: history.Backfill, From: from, To: to, NoResume: noResume, Redeliver: redeliver})
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&pages, "pages", "", "page range: A-B, A- (until the listing ends) or A")
	cmd.Flags().BoolVar(&noResume, "no-resume", false, "refetch pages committed by earlier runs")
	cmd.Flags().BoolVar(&redeliver, "redeliver", false, "deliver papers again even if they were delivered before, as the site shows them now (one shown with less than was delivered goes as its next revision; one read without its JSON that was delivered under its site id is not sent)")
	return cmd
}

func newNightlyCmd() *cobra.Command {
	var f crawlFlags
	cmd := &cobra.Command{
		Use:   "nightly",
		Short: "Walk each journal from page 1 and deliver only new papers",
		Long: `nightly walks each configured journal (or --journal) from page 1 and
delivers only papers never delivered before. A walk ends only on proof:
where it meets, side by side and in their order, the papers that began
the listing the last time a walk read page 1 (with nothing new, page 1
itself). A page that fails stops its journal's walk; the next run walks
again from page 1 and carries on from where it stopped.

A walk fetches at most nightly.max_pages pages. One that stops there
says so (log, summary, report) and leaves a gap: the next nightly jumps to
where the gap's papers are now, and delivers it until it meets the papers
that end it, in order. A paper delivered before met inside a gap proves
nothing: the walk goes on and says so. Then the audit re-reads
nightly.audit_pages more pages (default 1), round the whole listing, so
that every paper still listed is delivered within pages / audit_pages
nights whatever a walk missed; the summary says how long ago every page
was last re-read. A nightly on an empty state says it is a first crawl.
The walk's rules: docs/state.md.

Exit codes: 0 every walk finished, or was cut short at nightly.max_pages
(said in the log, the summary and the history; the next nightly carries
on from there), 3 some pages failed or a sink refused
records (kept in the quarantine: crawl quarantine list), 4 quality alarm,
1 fatal, 2 usage, 130/143 interrupted.`,
		Example: `  crawl nightly --sink jsonl:out/papers-{date}.jsonl
  crawl nightly --sink 'postgres://crawler@db.example.com/lit?table=papers'
  crawl nightly --journal 501422 --base-url http://127.0.0.1:8089 --delay 0`,
		Args: noArgs("nightly"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCrawl(cmd, &f, app.Crawl{Kind: history.Nightly})
		},
	}
	f.register(cmd)
	return cmd
}

// runCrawl is a crawling command: flags → options → the application's
// Crawl, with a progress display.
func runCrawl(cmd *cobra.Command, f *crawlFlags, c app.Crawl) error {
	env, err := newEnv(cmd)
	if err != nil {
		return err
	}
	if err := f.apply(cmd, env.Config); err != nil {
		return err
	}
	limitMemory(env.Config.Fetch.Concurrency)
	c.Journals = f.journals
	if len(c.Journals) == 0 {
		c.Journals = env.Config.JournalIDs()
	}
	c.Sinks, c.JournalSinks, c.StateDir, c.Report = env.Config.Sinks, env.Config.JournalSinks(), env.Config.StateDir, f.report
	c.Transport = app.Transport{Archive: f.archive, Offline: f.offline}
	c.Relearn = f.relearn
	c.Progress = func(total int64, sum *engine.Summary) func() {
		return startProgress(cmd.ErrOrStderr(), total, sum, env.Log)
	}
	// After a signal, the pages in flight get shutdown_timeout to finish.
	ctx, cancel := stopOnSignal(cmd.Context(), env.Config.ShutdownTimeout.D())
	defer cancel()
	_, err = env.Crawl(ctx, c)
	return err
}
