package app

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/litcrawl/litcrawl/crawler"
	"github.com/litcrawl/litcrawl/internal/config"
	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/frontier"
	"github.com/litcrawl/litcrawl/internal/history"
	"github.com/litcrawl/litcrawl/internal/redact"
	"github.com/litcrawl/litcrawl/sink"
	"github.com/litcrawl/litcrawl/sink/quarantine"
)

// Fleet names the shared frontier and how to set it up.
type Fleet struct {
	// URL is nats://[user:pass@]host:port, several servers comma-separated.
	URL string
	// AckWait and MaxDeliver change the workers' consumer when given (0:
	// as it is; the defaults when it is created).
	AckWait    time.Duration
	MaxDeliver int
	// Replicas of the frontier's streams and buckets (0: as they are; 1
	// when created).
	Replicas int
}

func (e *Env) connect(ctx context.Context, f Fleet) (*frontier.Frontier, error) {
	if f.URL == "" {
		return nil, exitcode.Usagef("--frontier nats://host:port is required")
	}
	return frontier.Connect(ctx, f.URL, frontier.Options{AckWait: f.AckWait, MaxDeliver: f.MaxDeliver, Replicas: f.Replicas, Log: e.log()})
}

// Enqueue is what to put on the frontier: pages From..To of each journal,
// or each journal's nightly walk.
type Enqueue struct {
	Fleet
	Journals []int64
	From, To int
	Nightly  bool
}

// validate checks what the values given do not say alone: a journal to
// enqueue, a last page, and at most backfill.max_pages pages. Each value
// was checked where it entered (the flags, the configuration).
func (o Enqueue) validate(cfg *config.Config) error {
	if err := needJournals(o.Journals); err != nil {
		return err
	}
	if o.Nightly {
		return nil
	}
	if o.To == 0 {
		return exitcode.Usagef("--pages %d-: a distributed backfill needs its last page (A-B); use --nightly for walks", o.From)
	}
	return checkSpan(cfg, o.Journals, o.From, o.To, "enqueue")
}

// Enqueue publishes the jobs under a new run id, one at a time. Pages (or
// walks) whose jobs are pending or in flight are not added again. When
// Env.Stop closes it stops, and says what it did so far.
func (e *Env) Enqueue(ctx context.Context, o Enqueue) (runID string, n frontier.Enqueued, err error) {
	if err := o.validate(e.Config); err != nil {
		return "", n, err
	}
	runID = NewRunID(time.Now())
	interrupted := false
	// The first signal stops making jobs; the one being published finishes.
	yieldUnlessStopped := func(yield func(frontier.Job) bool, j frontier.Job) bool {
		select {
		case <-e.Stop:
			interrupted = true
			return false
		default:
			return yield(j)
		}
	}
	f, err := e.connect(ctx, o.Fleet)
	if err != nil {
		return "", n, err
	}
	defer f.Close()
	var markErr error
	jobs := func(yield func(frontier.Job) bool) {
		for _, j := range o.Journals {
			if o.Nightly {
				// The walk starts from the state the last one left (engine.Walk).
				ws, err := f.Ledger().WalkState(ctx, j)
				if err != nil {
					markErr = fmt.Errorf("journal %d: read where the last nightly walk stopped: %w", j, err)
					return
				}
				js := e.Config.For(j)
				w := engine.NewWalk(engine.Limits{StopAfterKnownPages: js.Nightly.StopAfterKnownPages, MaxPages: js.Nightly.MaxPages,
					StopAfterRepeatPages: js.Backfill.StopAfterRepeatPages}, js.Nightly.AuditPages, ws)
				job := frontier.WalkJob(j, runID, w)
				if !yieldUnlessStopped(yield, job) {
					return
				}
				continue
			}
			for p := o.From; p <= o.To; p++ {
				if !yieldUnlessStopped(yield, frontier.PageJob(j, p, runID)) {
					return
				}
			}
		}
	}
	n, err = f.EnqueueSeq(ctx, jobs)
	if err == nil && markErr != nil {
		err = markErr
	}
	if err == nil && interrupted {
		err = context.Canceled
	}
	return runID, n, err
}

// FleetView reads the state and the history of a fleet over one
// connection (crawl status --watch and --serve read it again and again).
type FleetView struct {
	e  *Env
	fl Fleet

	mu sync.Mutex
	f  *frontier.Frontier
}

// OpenFleet connects to the fleet's frontier.
func (e *Env) OpenFleet(ctx context.Context, fl Fleet) (*FleetView, error) {
	f, err := e.connect(ctx, fl)
	if err != nil {
		return nil, err
	}
	return &FleetView{e: e, fl: fl, f: f}, nil
}

// Close closes the connection.
func (v *FleetView) Close() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.f.Close()
}

// frontier is the view's connection, made again when the server closed
// it (it reconnects by itself otherwise), so that a watch or a live page
// outlives it.
func (v *FleetView) frontier(ctx context.Context) (*frontier.Frontier, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.f.Closed() {
		return v.f, nil
	}
	f, err := v.e.connect(ctx, v.fl)
	if err != nil {
		return nil, err
	}
	v.f = f
	return f, nil
}

// Status is the frontier's state: jobs pending, in flight and
// dead-lettered, the workers, and the last lastDead dead letters.
func (v *FleetView) Status(ctx context.Context, lastDead int) (*frontier.Status, []frontier.DeadLetter, error) {
	f, err := v.frontier(ctx)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Status(ctx)
	if err != nil {
		return nil, nil, err
	}
	// The audit's line is a part of the status: one that cannot be read
	// (a bucket that holds what no worker wrote) is said, not fatal.
	if err := f.FillAudit(ctx, st); err != nil {
		if ctx.Err() != nil {
			return nil, nil, err
		}
		st.AuditError = err.Error()
	}
	dls, err := f.DeadLetters(ctx, lastDead)
	return st, dls, err
}

// Runs are the fleet's worker runs (the frontier's runs stream) as
// history views, newest first. A run without its final summary is running
// while its worker is alive, and killed when it is gone.
func (v *FleetView) Runs(ctx context.Context) ([]history.RunView, error) {
	f, err := v.frontier(ctx)
	if err != nil {
		return nil, err
	}
	raw, notRead, err := f.Runs(ctx)
	if err != nil {
		return nil, err
	}
	workers, _, err := f.Workers(ctx)
	if err != nil {
		return nil, err
	}
	state := map[string]string{}
	for _, wi := range workers {
		state[wi.ID] = wi.State
	}
	runs := make([]history.RunView, 0, len(raw))
	for _, data := range raw {
		// A summary of more parts than a worker writes (failures beyond
		// those kept, a journal map of a site) is nobody's: decoded, its
		// megabyte would take gigabytes.
		if bytes.Count(data, []byte("{")) > maxRunObjects {
			notRead++
			continue
		}
		var rep history.RunSummary
		if json.Unmarshal(data, &rep) != nil || !frontier.ValidRunID(rep.RunID) {
			notRead++
			continue
		}
		if len(rep.Failures) > history.MaxFailuresKept {
			rep.FailuresOmitted += len(rep.Failures) - history.MaxFailuresKept
			rep.Failures = rep.Failures[:history.MaxFailuresKept]
		}
		if len(rep.Error) > 2000 {
			rep.Error = strings.ToValidUTF8(rep.Error[:2000], "") + "…"
		}
		// A start this fleet cannot have had (before the project, or a day
		// ahead of this clock) would be the "latest" run for ever.
		if started, err := time.Parse(time.RFC3339, rep.Started); err != nil || started.Year() < 2020 || started.After(time.Now().Add(24*time.Hour)) {
			continue
		}
		rv := history.FromReport(rep, v.e.Config.Quality)
		if rep.ExitCode == nil {
			rv.Finished = time.Time{}
			rv.Status = history.StatusKilled
			if state[rep.RunID] == frontier.WorkerAlive {
				rv.Status = history.StatusRunning
			}
		}
		runs = append(runs, rv)
	}
	slices.SortStableFunc(runs, NewestFirst)
	if notRead > 0 {
		v.e.log().Warn(fmt.Sprintf("the fleet's runs stream: %d run summaries left out (not a worker's, or beyond a read: at most %d runs and %d MiB, newest first, none over %d MiB)",
			notRead, frontier.MaxRuns, frontier.MaxRunsReadBytes>>20, frontier.MaxRunSummaryBytes>>20), "left_out", notRead)
	}
	return runs, nil
}

// maxRunObjects bounds the JSON objects of a run summary read from the
// fleet: a worker's holds a few per journal and per failed page kept.
const maxRunObjects = 50_000

// NewestFirst orders runs by start, newest first; runs started in the same
// second (summaries keep seconds) by how long they ran, the longest first,
// so that a worker killed at once is not the fleet's "latest".
func NewestFirst(a, b history.RunView) int {
	if c := b.Started.Compare(a.Started); c != 0 {
		return c
	}
	return cmp.Compare(b.DurationSeconds, a.DurationSeconds)
}

// FleetRuns are the fleet's worker runs (FleetView.Runs).
func (e *Env) FleetRuns(ctx context.Context, fl Fleet) ([]history.RunView, error) {
	v, err := e.OpenFleet(ctx, fl)
	if err != nil {
		return nil, err
	}
	defer v.Close()
	return v.Runs(ctx)
}

// Work is a fleet worker's session.
type Work struct {
	Fleet
	// Sinks are the sink URLs (none: standard output); a queue sink that
	// deduplicates by record id (nats://…?stream=…) is the one that keeps
	// every paper once across redeliveries.
	Sinks []string
	// JournalSinks are the sinks of the journals whose records go to
	// sinks of their own (journals[].sinks).
	JournalSinks map[int64][]string
	// IdleExit, when set, ends the session after this long without a job.
	IdleExit time.Duration
	// Quarantine is the file that keeps the records a sink refuses
	// (quarantine.Name in the config's state_dir by default).
	Quarantine string
	// Version is the program's version, shown by crawl status.
	Version string
	// Report, when set, is where the worker run's report goes (JSON, with
	// a page log), as a local run's --report.
	Report string
}

// Work takes jobs from the frontier until ctx ends, Env.Stop closes, or
// the worker is idle IdleExit, doing each through the engine with the
// fleet's ledger and pacer; then it ends as every run does
// (session.finish): its summary, with the quality gate's verdict and
// exit code, joins the fleet's runs stream, is printed, and is written to
// --report.
func (e *Env) Work(ctx context.Context, o Work) error {
	cfg := e.Config
	f, err := e.connect(ctx, o.Fleet)
	if err != nil {
		return err
	}
	defer f.Close()
	id := NewRunID(time.Now())
	s := e.newSession(history.Worker, id, nil, quarantine.New(cmp.Or(o.Quarantine, filepath.Join(cfg.StateDir, quarantine.Name))),
		func(summary []byte) error {
			// The run's summary joins the fleet's history (crawl runs
			// --frontier); a frontier away costs the history, not the run.
			pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if err := f.PublishRun(pctx, id, summary); err != nil {
				e.log().Warn("the run summary was not kept in the frontier: crawl runs --frontier will show its last snapshot", "error", err)
			}
			return nil
		})
	defer s.close()
	host, pid := hostAndPID()
	s.worker = &workerIdentity{host: host, pid: pid}
	if err := s.openSummaryFile(o.Report, cfg.StateDir); err != nil {
		return err
	}
	if err := s.openSinks(ctx, o.Sinks, SinkOptions{PerJournal: o.JournalSinks}); err != nil {
		return err
	}
	warnJSONLOnWorker(o.Sinks, o.JournalSinks, e.log())
	fetch, err := s.fetcher(nil, func(fc *crawler.Config) {
		fc.Pacer = f.Pacer(fc.Delay) // the pace is fleet-wide
		fc.Delay = 0
	})
	if err != nil {
		return err
	}
	run := s.start(fetch, f.Ledger(), false)
	defer e.Metrics.gauge(prometheus.GaugeOpts{Name: "litcrawl_frontier_jobs_pending", Help: "Jobs in the shared frontier (taken or not)."},
		func() float64 {
			ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			st, err := f.Status(ctx)
			if err != nil {
				return -1
			}
			return float64(st.Pending)
		})()
	var w *frontier.Worker
	w = f.NewWorker(frontier.WorkerOptions{Run: run, Log: e.log(), Concurrency: cfg.Fetch.Concurrency, IdleExit: o.IdleExit, Stop: e.Stop,
		Identity: frontier.Identity{ID: id, Host: host, PID: pid, Version: o.Version, Started: s.sum.Started.UTC()},
		Summary:  func() []byte { jobs := w.Jobs(); return s.snapshot(&jobs) }})
	e.log().Info("worker started", "server", f.ServerVersion(), "ack_wait", f.AckWait().String(), "max_deliver", f.MaxDeliver())
	runErr := w.Run(ctx)
	run.Close()
	jobs := w.Jobs()
	// A worker ends by the rule a local run does (the quality gate
	// included); its failed pages are retried or dead-lettered.
	return s.finish(runErr, &jobs)
}

// warnJSONLOnWorker: a JSON-lines file cannot drop a redelivered job's
// records; a queue sink that deduplicates by record id can.
func warnJSONLOnWorker(sinks []string, perJournal map[int64][]string, log *slog.Logger) {
	urls := sinks
	if len(urls) == 0 {
		urls = []string{sink.Stdout}
	}
	for _, js := range perJournal {
		urls = append(urls, js...)
	}
	for _, u := range urls {
		if sink.Scheme(u) == "jsonl" {
			log.Warn("a JSON-lines sink on a worker cannot drop a redelivered job's records: give workers a queue sink (nats://…?stream=…)", "sink", redact.URL(u))
		}
	}
}
