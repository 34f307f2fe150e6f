package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/litcrawl/litcrawl/crawler"
	"github.com/litcrawl/litcrawl/internal/config"
	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/history"
	"github.com/litcrawl/litcrawl/internal/quality"
	"github.com/litcrawl/litcrawl/internal/state"
	"github.com/litcrawl/litcrawl/sink/quarantine"
)

// Crawl is one local run: a backfill or a nightly run.
type Crawl struct {
	Kind     history.Kind // history.Backfill or history.Nightly
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
	// Relearn: the journals' papers of this run are their new normal
	// (quality.Learned does not compare them; later runs learn from here).
	Relearn bool
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
	if c.Kind == history.Backfill && c.To != 0 {
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
// and ends as every run does (session.finish: the quality gate, the
// summary printed, kept and written to --report). It returns the run's
// summary (nil when the run did not start) and an error that says how it
// ended, which maps to the exit code (exitcode.Of): nil, a usage error,
// the quality gate's alarm (exitcode.QualityError), ErrPagesFailed or
// ErrQuarantined (wrapped), ctx's error, or another (fatal) error.
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
	st, err := openState(c.StateDir, e.log())
	if err != nil {
		return nil, err
	}
	defer st.Close()
	// What the journals' papers held in the recent runs: the quality gate
	// learns each journal from them.
	learned, err := recentProfiles(st)
	if err != nil {
		return nil, err
	}
	// The run is in the history from the moment it holds the state, and
	// runs.json says so to crawl runs and crawl report until it ends.
	host, pid := hostAndPID()
	hist := state.Run{ID: runID, Kind: string(c.Kind), Started: time.Now(), Journals: c.Journals, PID: pid, Host: host}
	if err := st.WriteSnapshot(hist); err != nil {
		e.log().Warn("crawl runs will not show the history while this run goes on", "error", err)
	}
	if err := st.PutRun(hist); err != nil {
		return nil, fmt.Errorf("run history: %w", err)
	}
	s := e.newSession(c.Kind, runID, c.Journals, quarantine.In(c.StateDir), func(summary []byte) error {
		hist.Finished, hist.Summary = time.Now(), summary
		return st.PutRun(hist)
	})
	defer s.close()
	s.learned, s.relearn = learned, c.Relearn
	// A run that fails before it fetches (a sink that cannot be opened, a
	// report that cannot be written) is recorded with its error.
	if err := s.openSummaryFile(c.Report, c.StateDir); err != nil {
		return nil, s.abort(err)
	}
	if held, err := resolvePending(ctx, st, s.quarantine.Path()); err != nil {
		return nil, s.abort(fmt.Errorf("quarantine: %w", err))
	} else if len(held) > 0 {
		e.log().Warn("the quarantine holds records of earlier runs (a sink refused them, or the quality gate held them back): crawl quarantine list shows them; crawl quarantine retry delivers the refused ones, and --reparse the held ones once the parser reads them right", "records", len(held), "file", s.quarantine.Path())
	}
	if err := s.openSinks(ctx, c.Sinks, SinkOptions{Writer: st.WriterID(), PerJournal: c.JournalSinks, Journals: c.Journals}); err != nil {
		return nil, s.abort(err)
	}
	if err := restore(ctx, st, s.out, c.Kind == history.Backfill && c.NoResume && c.Redeliver, e.log()); err != nil {
		return nil, s.abort(err)
	}
	fetch, err := s.fetcher(rt, func(f *crawler.Config) {
		if c.Offline != "" {
			f.Delay, f.Jitter, f.JournalDelays = 0, 0, nil // nothing goes to the site: no politeness to keep
		}
	})
	if err != nil {
		return nil, s.abort(err)
	}
	run := s.start(fetch, st, true)
	stopProgress := c.progress(s.sum)
	runErr := c.drive(ctx, run, cfg, e.Stop)
	run.Close()
	stopProgress()
	if err := s.closeOut(); err != nil && runErr == nil {
		runErr = fmt.Errorf("close sinks: %w", err)
	}
	if err := closeRT(); err != nil && runErr == nil {
		runErr = fmt.Errorf("--archive: %w", err)
	}
	return s.sum, s.end(runErr, nil)
}

// openState opens the crawl state in dir, saying when it migrated it.
func openState(dir string, log *slog.Logger) (*state.Store, error) {
	st, err := state.Open(dir)
	if err != nil {
		return nil, err
	}
	if m := st.Migrated(); m.From != 0 {
		log.Info("state migrated", "dir", dir, "from_format", m.From, "to_format", state.Format,
			"seconds", m.Took.Seconds(), "bytes_before", m.BytesBefore, "bytes_after", m.BytesAfter)
	}
	return st, nil
}

// progress starts the run's progress display, when it has one; it
// returns the function that stops it.
func (c Crawl) progress(sum *engine.Summary) (stop func()) {
	if c.Progress == nil {
		return func() {}
	}
	total := int64(-1)
	if c.Kind == history.Backfill && c.To != 0 {
		total = int64(len(c.Journals) * (c.To - c.From + 1))
	}
	return c.Progress(total, sum)
}

// drive runs the engine as c's kind says.
func (c Crawl) drive(ctx context.Context, run *engine.Run, cfg *config.Config, stop <-chan struct{}) error {
	switch c.Kind {
	case history.Backfill:
		return run.Backfill(ctx, engine.BackfillOptions{Journals: c.Journals, From: c.From, To: c.To,
			NoResume: c.NoResume, Redeliver: c.Redeliver, Stop: stop,
			StopAfterRepeatPages: cfg.Backfill.StopAfterRepeatPages, MaxPages: cfg.Backfill.MaxPages, PerJournal: limits(cfg, c.Journals, true)})
	case history.Nightly:
		return run.Nightly(ctx, engine.NightlyOptions{Journals: c.Journals, Stop: stop,
			StopAfterKnownPages: cfg.Nightly.StopAfterKnownPages, MaxPages: cfg.Nightly.MaxPages,
			StopAfterRepeatPages: cfg.Backfill.StopAfterRepeatPages, AuditPages: cfg.Nightly.AuditPages, PerJournal: limits(cfg, c.Journals, false)})
	}
	return exitcode.Usagef("run kind %q: expected backfill or nightly", c.Kind)
}

// recentProfiles are what each journal's papers held in the runs of the
// history, newest run first (quality.Learned takes what it needs).
func recentProfiles(st *state.Store) (map[int64][]quality.Profile, error) {
	runs, err := st.Runs()
	if err != nil {
		return nil, fmt.Errorf("run history: %w", err)
	}
	out := map[int64][]quality.Profile{}
	for _, r := range slices.Backward(runs) {
		var sum struct {
			PerJournal map[string]struct {
				Profile *quality.Profile `json:"profile"`
			} `json:"per_journal"`
		}
		if len(r.Summary) == 0 || json.Unmarshal(r.Summary, &sum) != nil {
			continue // a run killed before its end, or an older summary: nothing to learn
		}
		for k, c := range sum.PerJournal {
			j, err := strconv.ParseInt(k, 10, 64)
			if err != nil || c.Profile == nil || !c.Profile.Valid() {
				continue
			}
			out[j] = append(out[j], *c.Profile)
		}
	}
	return out, nil
}
