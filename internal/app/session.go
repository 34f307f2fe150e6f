package app

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync"

	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/quality"

	"github.com/litcrawl/litcrawl/crawler"
	"github.com/litcrawl/litcrawl/internal/config"
	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/frontier"
	"github.com/litcrawl/litcrawl/internal/history"
	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/sink"
	"github.com/litcrawl/litcrawl/sink/quarantine"
)

// session is one run, local or a fleet worker's: what every run opens
// (its summary, the --report file, the quarantine, the sinks, the fetcher,
// the engine) and how every run ends (the quality gate, the failed pages,
// the records quarantined, the summary kept in the history, printed and
// written to --report, and the error that is its exit code). Crawl and
// Work differ only in what they put around it: the state and its history,
// or the frontier and its runs stream.
type session struct {
	e    *Env
	kind history.Kind
	id   string
	sum  *engine.Summary
	// journals are the run's journals, named in its summary (nil: a
	// worker's, which takes whatever jobs come).
	journals []int64
	// failedCounts: failed pages end the run with exit 3 (a local run's;
	// a worker's are retried by the fleet or dead-lettered).
	failedCounts bool
	// worker, when set, names the process in the summary (a fleet's
	// history has no other record of it).
	worker *workerIdentity
	// keep puts the finished run's summary in the history (the state's,
	// or the fleet's runs stream); an error fails the run.
	keep func(summary []byte) error

	// learned are the journals' profiles of the recent runs, newest
	// first (quality.Learned); relearn: this run starts them anew.
	learned map[int64][]quality.Profile
	relearn bool

	summaryFile *summaryFile     // --report; nil: none
	quarantine  *quarantine.File // the records a sink refuses
	out         sink.Sink        // the sinks; nil until opened
	closeOut    func() error     // closes out once
}

// workerIdentity names a worker process in its run's summary.
type workerIdentity struct {
	host string
	pid  int
}

// newSession begins a run's session: its summary counts from now.
func (e *Env) newSession(kind history.Kind, id string, journals []int64, quar *quarantine.File, keep func([]byte) error) *session {
	return &session{e: e, kind: kind, id: id, sum: engine.NewSummary(), journals: journals, quarantine: quar, keep: keep,
		failedCounts: kind != history.Worker}
}

// openSummaryFile opens --report FILE (path "": none) before the run
// starts, so that a directory that cannot be written fails it at once.
func (s *session) openSummaryFile(path, stateDir string) error {
	if path == "" {
		return nil
	}
	f, err := openSummaryFile(path, stateDir)
	if err != nil {
		return err
	}
	s.summaryFile = f
	s.sum.LogPagesTo(f.pages())
	return nil
}

// openSinks opens the run's sinks, retried, observed, quarantining what a
// sink refuses; o's counters are the session's.
func (s *session) openSinks(ctx context.Context, urls []string, o SinkOptions) error {
	openCtx, cancelOpen := s.e.untilStop(ctx) // the first signal gives up a sink that does not answer
	defer cancelOpen()
	o.Stdout, o.Log, o.Metrics = s.e.Stdout, s.e.Log, s.e.Metrics
	o.OnRetry, o.Quarantine, o.OnQuarantine = s.sum.CountSinkRetry, s.quarantine, s.sum.CountQuarantined
	out, err := OpenSinks(openCtx, urls, o)
	if err != nil {
		return err
	}
	s.out, s.closeOut = out, sync.OnceValue(out.Close)
	return nil
}

// fetcher is the run's HTTP fetcher, from the configuration: over rt
// (nil: the network), its waits counted in the session's summary; adjust,
// when set, changes the configuration first (an offline run keeps no
// politeness, a worker paces fleet-wide).
func (s *session) fetcher(rt http.RoundTripper, adjust func(*crawler.Config)) (*crawler.Fetcher, error) {
	fcfg := FetcherConfig(s.e.Config)
	fcfg.Transport, fcfg.Metrics, fcfg.Waits = rt, s.e.Metrics.fetch(), &s.sum.Waits
	if adjust != nil {
		adjust(&fcfg)
	}
	return crawler.New(fcfg, s.e.log())
}

// start starts the engine over the session's fetcher, ledger and sinks.
func (s *session) start(f *crawler.Fetcher, l ledger.Ledger, stopWhenUnreachable bool) *engine.Run {
	o := engine.Options{ID: s.id, Fetcher: f, Ledger: l, Sink: s.out, StopWhenUnreachable: stopWhenUnreachable,
		Concurrency: s.e.Config.Fetch.Concurrency, Log: s.e.log(), Metrics: s.e.Metrics.engine(), Summary: s.sum,
		Citations: s.e.Config.Updates.Citations}
	if s.e.Config.Quality.Holds() && s.quarantine != nil {
		o.Hold = s.quarantine
	}
	return engine.Start(o)
}

// summary is the run's summary now, as the history keeps it: ended by
// err (nil: so far, or a success), with the exit code code (nil: under
// way).
func (s *session) summary(jobs *frontier.JobCounts, err error, code *int) history.RunSummary {
	rep := newRunSummary(s.id, s.kind, s.sum, jobs, err)
	rep.QualityThresholds = &s.e.Config.Quality
	rep.Journals, rep.ExitCode = s.journals, code
	if s.worker != nil {
		rep.Host, rep.PID = s.worker.host, s.worker.pid
	}
	return rep
}

// snapshot is the run's summary under way, as JSON (a worker's
// heartbeat carries it to the fleet's runs stream).
func (s *session) snapshot(jobs *frontier.JobCounts) []byte {
	data, _ := json.Marshal(s.summary(jobs, nil, nil))
	return data
}

// abort ends a run that failed before it fetched (a sink that could not
// be opened, a report that could not be written): kept in the history
// and --report with its error, which it returns.
func (s *session) abort(err error) error {
	code := s.e.exitCode(err)
	rep := newRunSummary(s.id, s.kind, s.sum, nil, err)
	rep.Journals, rep.ExitCode = s.journals, &code
	data, _ := json.Marshal(rep)
	s.keep(data) // the run's own error says more than the history's
	if s.summaryFile != nil {
		s.summaryFile.write(data)
	}
	return err
}

// finish ends the run: the sinks closed, then the verdict (verdict: the
// run's own error, the quality gate, failed pages, records quarantined),
// the summary kept in the history, printed, and written to --report. It
// returns the error the run exits with.
func (s *session) finish(runErr error, jobs *frontier.JobCounts) error {
	if s.closeOut != nil {
		if err := s.closeOut(); err != nil && runErr == nil {
			runErr = fmt.Errorf("close sinks: %w", err)
		}
	}
	return s.end(runErr, jobs)
}

// end is finish after the sinks are closed (a local run closes its
// archive between the two).
func (s *session) end(runErr error, jobs *frontier.JobCounts) error {
	var logErr error
	if s.summaryFile != nil {
		if logErr = s.sum.PageLogErr(); runErr == nil {
			runErr = logErr
		}
	}
	rep := s.summary(jobs, runErr, nil)
	var learnedErr error
	var alarmed []int64
	if !s.relearn && s.learned != nil {
		alarmed, learnedErr = quality.CheckLearned(s.sum.Profiles(), s.learned)
	}
	rep.Relearn = s.relearn
	if learnedErr != nil {
		rep.QualityLearned = strings.TrimPrefix(learnedErr.Error(), "quality alarm: ")
	}
	for k, c := range rep.PerJournal {
		if c.Profile == nil {
			continue
		}
		j, _ := strconv.ParseInt(k, 10, 64)
		c.Profile.Relearn = s.relearn
		c.Profile.Alarmed = slices.Contains(alarmed, j)
		rep.PerJournal[k] = c
	}
	final := verdict(s.e.Config.Quality, runErr, s.sum, &rep, s.quarantine.Path(), s.failedCounts, learnedErr)
	code := s.e.exitCode(final)
	rep.ExitCode = &code
	data, _ := json.Marshal(rep)
	herr := s.keep(data)
	s.e.printSummary(rep, s.sum)
	if herr != nil && final == nil {
		final = fmt.Errorf("run history: %w", herr)
	}
	if s.summaryFile != nil && logErr == nil {
		if err := s.summaryFile.write(data); err != nil && final == nil {
			final = err
		}
	}
	return final
}

// verdict is how a run ends, the same rule for a local run and a fleet
// worker's: the run's own error; else the quality gate's alarm (exit 4),
// the fixed thresholds' first, then a journal's papers unlike its recent
// runs' (learned: quality.CheckLearned; a fleet worker learns nothing);
// else, for a local run (failedCounts), its failed pages (a worker's are
// retried or dead-lettered); else the records a sink refused, kept in the
// quarantine at quarPath (named in rep).
func verdict(q config.Quality, runErr error, sum *engine.Summary, rep *history.RunSummary, quarPath string, failedCounts bool, learned error) error {
	final := runErr
	if final == nil {
		final = history.QualityAlarm(q, sum.QualityCounts())
	}
	if final == nil && learned != nil {
		final = exitcode.QualityError(learned) // a journal unlike its recent runs
	}
	if final == nil && failedCounts && sum.Failed.Load() > 0 {
		final = failedPages(sum.Failed.Load())
	}
	if n := sum.Quarantined.Load(); n > 0 {
		rep.Quarantine = quarPath
		if final == nil {
			final = quarantinedRecords(n, quarPath)
		}
	}
	if n := sum.Held.Load(); n > 0 {
		rep.Quarantine = quarPath
		held := heldRecords(n, quarPath)
		if final == nil || exitcode.Of(final) == exitcode.Quality {
			final = exitcode.QualityError(errors.Join(final, held))
		}
	}
	return final
}

// close releases what the session holds, however the run ended (deferred
// right after newSession).
func (s *session) close() {
	if s.closeOut != nil {
		s.closeOut()
	}
	if s.summaryFile != nil {
		s.summaryFile.discard()
	}
}

// hostAndPID names this process.
func hostAndPID() (string, int) {
	host, _ := os.Hostname()
	return host, os.Getpid()
}
