package app

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/litcrawl/litcrawl/crawler"
	"github.com/litcrawl/litcrawl/internal/config"
	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/history"
	"github.com/litcrawl/litcrawl/internal/state"
	"github.com/litcrawl/litcrawl/sink/quarantine"
)

// Crawl is one local run: a backfill or a nightly run.
type Crawl struct {
	Kind     string // "backfill" or "nightly"
	Journals []int64
	// Sinks are the sink URLs (none: standard output), and JournalSinks
	// those of the journals whose records go to sinks of their own.
	Sinks        []string
	JournalSinks map[int64][]string
	// StateDir holds the crawl state.
	StateDir string
	// Report, when set, is where the run report goes (JSON, with a page log).
	Report string
	Transport
	// A backfill's pages: From..To (To 0: until the listing ends).
	From, To            int
	NoResume, Redeliver bool
	// Progress, when set, shows the run's progress while it goes on; total
	// is the pages expected (-1: unknown). It returns the function that
	// stops it.
	Progress func(total int64, sum *engine.Summary) (stop func())
}

// validate checks what the values given do not say alone: a journal to
// crawl, at most backfill.max_pages pages, a report that is not the
// records' file. Each value was checked where it entered (the flags, the
// configuration).
func (c Crawl) validate(cfg *config.Config) error {
	if err := needJournals(c.Journals); err != nil {
		return err
	}
	if c.Kind == "backfill" && c.To != 0 {
		if err := checkSpan(cfg, c.Journals, c.From, c.To, "run"); err != nil {
			return err
		}
	}
	if c.Report != "" {
		for _, u := range slices.Concat(append([][]string{c.Sinks}, slices.Collect(maps.Values(c.JournalSinks))...)...) {
			if p, ok := strings.CutPrefix(u, "jsonl:"); ok && samePath(p, c.Report) {
				return exitcode.Usagef("--report %s: is the records' JSONL file too: give the report a file of its own", c.Report)
			}
		}
	}
	return nil
}

// needJournals: a run needs journals, from --journal or the configuration.
func needJournals(js []int64) error {
	if len(js) == 0 {
		return exitcode.Usagef("no journal: give --journal J or set journals in the config")
	}
	return nil
}

// checkSpan bounds the pages of a journal one run (or one enqueue) takes:
// backfill.max_pages, the journal's own where it has one.
func checkSpan(cfg *config.Config, journals []int64, from, to int, what string) error {
	for _, j := range journals {
		if m := cfg.For(j).Backfill.MaxPages; to-from >= m {
			key := "backfill.max_pages"
			if m != cfg.Backfill.MaxPages {
				key = fmt.Sprintf("journal %d's backfill.max_pages", j)
			}
			return exitcode.Usagef("--pages %d-%d: at most %s (%d) pages a journal in one %s; do a long range in parts", from, to, key, m, what)
		}
	}
	return nil
}

// limits are the walk bounds of the journals with their own settings: a
// nightly's, or a backfill's (whose max_pages is backfill.max_pages).
func limits(cfg *config.Config, journals []int64, backfill bool) map[int64]engine.Limits {
	var out map[int64]engine.Limits
	for _, j := range journals {
		if s := cfg.For(j); s.Own != nil {
			if out == nil {
				out = map[int64]engine.Limits{}
			}
			l := engine.Limits{StopAfterKnownPages: s.Nightly.StopAfterKnownPages, MaxPages: s.Nightly.MaxPages, StopAfterRepeatPages: s.Backfill.StopAfterRepeatPages, AuditPages: s.Nightly.AuditPages}
			if backfill {
				l.MaxPages = s.Backfill.MaxPages
			}
			out[j] = l
		}
	}
	return out
}

// Crawl runs c: it opens the state and the sinks, rolls the sinks back to
// the state's token, records the run in the history, runs the engine,
// prints the summary, writes the report, and applies the quality gate. It
// returns the run's summary (nil when the run did not start) and an error
// that says how it ended: nil, a *ConfigError, a *QualityError,
// ErrPagesFailed (wrapped), ctx's error, or another (fatal) error.
func (e *Env) Crawl(ctx context.Context, c Crawl) (*engine.Summary, error) {
	cfg := e.Config
	if err := c.validate(cfg); err != nil {
		return nil, err
	}
	runID := NewRunID(time.Now())
	rt, closeRT, err := c.Transport.open(runID, cfg.Fetch.MaxBodyBytes)
	if err != nil {
		return nil, err
	}
	defer closeRT()
	st, err := state.Open(c.StateDir)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if m := st.Migrated(); m.From != 0 {
		e.log().Info("state migrated", "dir", c.StateDir, "from_format", m.From, "to_format", state.Format,
			"seconds", m.Took.Seconds(), "bytes_before", m.BytesBefore, "bytes_after", m.BytesAfter)
	}
	// The run is in the history from the moment it holds the state, and
	// runs.json says so to crawl runs and crawl report until it ends.
	host, _ := os.Hostname()
	hist := state.Run{ID: runID, Kind: c.Kind, Started: time.Now(), Journals: c.Journals, PID: os.Getpid(), Host: host}
	if err := st.WriteSnapshot(hist); err != nil {
		e.log().Warn("crawl runs will not show the history while this run goes on", "error", err)
	}
	if err := st.PutRun(hist); err != nil {
		return nil, fmt.Errorf("run history: %w", err)
	}
	// A run that fails before it fetches (a sink that cannot be opened, a
	// report that cannot be written) is recorded with its error.
	sum := engine.NewSummary()
	// record ends the run in the history: its summary, with the exit code
	// of final.
	record := func(rep *history.RunSummary, final error) ([]byte, error) {
		code := e.exitCode(final)
		rep.Journals, rep.ExitCode = c.Journals, &code
		data, _ := json.Marshal(rep)
		hist.Finished, hist.Summary = time.Now(), data
		return data, st.PutRun(hist)
	}
	// The report is written however the run ends, so that a monitor that
	// reads it never sees the previous run's success.
	var report *summaryFile
	early := func(err error) (*engine.Summary, error) {
		rep := newRunSummary(runID, c.Kind, sum, nil, err)
		data, _ := record(&rep, err)
		if report != nil {
			report.write(data)
		}
		return nil, err
	}
	if c.Report != "" {
		if report, err = openSummaryFile(c.Report, c.StateDir); err != nil {
			return early(err)
		}
		defer report.discard()
		sum.LogPagesTo(report.pages())
	}
	quar := quarantine.In(c.StateDir)
	if held, err := resolvePending(ctx, st, quar.Path()); err != nil {
		return early(fmt.Errorf("quarantine: %w", err))
	} else if len(held) > 0 {
		e.log().Warn("the quarantine holds records a sink refused in earlier runs: crawl quarantine list shows them, crawl quarantine retry delivers them", "records", len(held), "file", quar.Path())
	}
	openCtx, cancelOpen := e.untilStop(ctx) // the first signal gives up a sink that does not answer
	defer cancelOpen()
	out, err := OpenSinks(openCtx, c.Sinks, SinkOptions{Writer: st.WriterID(), Stdout: e.Stdout, Log: e.Log, Metrics: e.Metrics,
		OnRetry: sum.CountSinkRetry, Quarantine: quar, OnQuarantine: sum.CountQuarantined, PerJournal: c.JournalSinks, Journals: c.Journals})
	if err != nil {
		return early(err)
	}
	defer out.Close()
	if err := restore(ctx, st, out, c.Kind == "backfill" && c.NoResume && c.Redeliver, e.log()); err != nil {
		return early(err)
	}
	fcfg := FetcherConfig(cfg)
	fcfg.Transport, fcfg.Metrics, fcfg.Waits = rt, e.Metrics.fetch(), &sum.Waits
	if c.Offline != "" {
		fcfg.Delay, fcfg.Jitter, fcfg.JournalDelays = 0, 0, nil // nothing goes to the site: no politeness to keep
	}
	fetch, err := crawler.New(fcfg, e.log())
	if err != nil {
		return early(err)
	}
	run := engine.Start(engine.Options{ID: runID, Fetcher: fetch, Ledger: st, Sink: out, StopWhenUnreachable: true,
		Concurrency: cfg.Fetch.Concurrency, Log: e.log(), Metrics: e.Metrics.engine(), Summary: sum})
	stopProgress := func() {}
	if c.Progress != nil {
		total := int64(-1)
		if c.Kind == "backfill" && c.To != 0 {
			total = int64(len(c.Journals) * (c.To - c.From + 1))
		}
		stopProgress = c.Progress(total, sum)
	}
	var runErr error
	switch c.Kind {
	case "backfill":
		runErr = run.Backfill(ctx, engine.BackfillOptions{Journals: c.Journals, From: c.From, To: c.To,
			NoResume: c.NoResume, Redeliver: c.Redeliver, Stop: e.Stop,
			StopAfterRepeatPages: cfg.Backfill.StopAfterRepeatPages, MaxPages: cfg.Backfill.MaxPages, PerJournal: limits(cfg, c.Journals, true)})
	case "nightly":
		runErr = run.Nightly(ctx, engine.NightlyOptions{Journals: c.Journals, Stop: e.Stop,
			StopAfterKnownPages: cfg.Nightly.StopAfterKnownPages, MaxPages: cfg.Nightly.MaxPages,
			StopAfterRepeatPages: cfg.Backfill.StopAfterRepeatPages, AuditPages: cfg.Nightly.AuditPages, PerJournal: limits(cfg, c.Journals, false)})
	default:
		runErr = exitcode.Usagef("run kind %q: expected backfill or nightly", c.Kind)
	}
	run.Close()
	stopProgress()
	if err := out.Close(); err != nil && runErr == nil {
		runErr = fmt.Errorf("close sinks: %w", err)
	}
	if err := closeRT(); err != nil && runErr == nil {
		runErr = fmt.Errorf("--archive: %w", err)
	}

	rep := newRunSummary(runID, c.Kind, sum, nil, runErr)
	rep.QualityThresholds = &cfg.Quality
	var logErr error
	if report != nil {
		logErr = sum.PageLogErr()
		if runErr == nil {
			runErr = logErr
		}
	}
	final := verdict(cfg.Quality, runErr, sum, &rep, quar.Path(), true)
	data, herr := record(&rep, final)
	e.printSummary(rep, sum)
	if herr != nil && final == nil {
		final = fmt.Errorf("run history: %w", herr)
	}
	if report != nil && logErr == nil {
		if err := report.write(data); err != nil && final == nil {
			final = err
		}
	}
	return sum, final
}
