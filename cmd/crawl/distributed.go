package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/litcrawl/litcrawl/crawler"
	"github.com/litcrawl/litcrawl/frontier"
)

type frontierFlags struct {
	url        string
	ackWait    time.Duration
	maxDeliver int
}

func (f *frontierFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.url, "frontier", "", "the shared frontier: nats://[user:pass@]host:port (JetStream)")
	fl.DurationVar(&f.ackWait, "ack-wait", 2*time.Minute, "how long a worker may hold a job without a heartbeat before it is redelivered")
	fl.IntVar(&f.maxDeliver, "max-deliver", 5, "tries of a job before it is dead-lettered")
}

func (f *frontierFlags) connect(cmd *cobra.Command) (*frontier.Frontier, error) {
	if f.url == "" {
		return nil, usageError{errors.New("--frontier nats://host:port is required")}
	}
	if f.ackWait <= 0 || f.maxDeliver < 1 {
		return nil, usageError{fmt.Errorf("--ack-wait %v and --max-deliver %d: expected a positive duration and at least 1", f.ackWait, f.maxDeliver)}
	}
	return frontier.Connect(cmd.Context(), f.url, frontier.Options{AckWait: f.ackWait, MaxDeliver: f.maxDeliver})
}

func noArgs(name string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usageError{fmt.Errorf("%s takes no arguments, got %q", name, args)}
		}
		return nil
	}
}

func newEnqueueCmd() *cobra.Command {
	var ff frontierFlags
	var journals []int64
	var pages string
	var nightly bool
	cmd := &cobra.Command{
		Use:   "enqueue --frontier URL (--journal J … --pages A-B | --nightly)",
		Short: "Publish crawl jobs to the shared frontier for workers",
		Long: `enqueue publishes page jobs to the frontier's JetStream work queue, each
once (its msg-id is journal-page-run, so a repeated enqueue adds nothing).
--pages A-B enqueues those pages of each journal; --nightly enqueues page 1
of each journal's nightly walk, which the workers continue page by page
until nightly.stop_after_known_pages pages of known papers, the last page
or nightly.max_pages.`,
		Args: noArgs("enqueue"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			if len(journals) == 0 {
				journals = cfg.Journals
			}
			if len(journals) == 0 {
				return usageError{errors.New("no journal: give --journal J or set journals in the config")}
			}
			if nightly == (pages != "") {
				return usageError{errors.New("give either --pages A-B or --nightly")}
			}
			runID := newRunID(time.Now())
			var jobs []frontier.Job
			if nightly {
				for _, j := range journals {
					jobs = append(jobs, frontier.Job{Journal: j, Page: 1, RunID: runID, Nightly: true,
						StopAfterKnown: cfg.Nightly.StopAfterKnownPages, MaxPages: cfg.Nightly.MaxPages})
				}
			} else {
				from, to, err := parsePages(pages)
				if err != nil {
					return err
				}
				if to == 0 {
					return usageError{fmt.Errorf("--pages %q: a distributed backfill needs its last page (A-B); use --nightly for walks", pages)}
				}
				for _, j := range journals {
					for p := from; p <= to; p++ {
						jobs = append(jobs, frontier.Job{Journal: j, Page: p, RunID: runID})
					}
				}
			}
			f, err := ff.connect(cmd)
			if err != nil {
				return err
			}
			defer f.Close()
			n, err := f.Enqueue(cmd.Context(), jobs...)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "enqueued %d jobs (run %s)\n", n, runID)
			return nil
		},
	}
	ff.register(cmd)
	cmd.Flags().Int64SliceVar(&journals, "journal", nil, "journal id (repeatable); default: the configured journals")
	cmd.Flags().StringVar(&pages, "pages", "", "page range A-B")
	cmd.Flags().BoolVar(&nightly, "nightly", false, "enqueue the nightly walk of each journal")
	return cmd
}

func newWorkerCmd() *cobra.Command {
	var ff frontierFlags
	var f crawlFlags
	var idle time.Duration
	cmd := &cobra.Command{
		Use:   "worker --frontier URL [--sink URL …]",
		Short: "Take jobs from the shared frontier, crawl them and deliver the papers",
		Long: `worker takes page jobs from the frontier, fetches and parses them,
delivers the papers not delivered before (fleet-wide: a shared key-value
bucket) to its sinks, and acks a job only after every sink acknowledged.
A job that fails is retried later, and after --max-deliver tries goes to
the dead-letter stream with its error. A killed worker loses nothing: its
jobs are redelivered. fetch.delay is a fleet-wide pace per host. Run any
number of workers on any number of machines; deliver to a queue sink with
dedupe (nats://…?stream=…) so that a job redelivered after a delivery
leaves each paper once. The first SIGINT/SIGTERM stops taking jobs.`,
		Args: noArgs("worker"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			log, err := newLogger(cmd)
			if err != nil {
				return err
			}
			ccfg, err := f.crawlerConfig(cmd, cfg)
			if err != nil {
				return err
			}
			limitMemory(ccfg.Concurrency)
			sinks := cfg.Sinks
			if cmd.Flags().Changed("sink") {
				sinks = f.sinks
			}
			fr, err := ff.connect(cmd)
			if err != nil {
				return err
			}
			defer fr.Close()
			ctx, cancel := stopOnSignal(cmd.Context(), cfg.ShutdownTimeout.D())
			defer cancel()
			out, err := openSinks(ctx, sinks, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			defer out.Close()
			ccfg.Pacer = &frontier.Pacer{KV: fr.Pace, Delay: ccfg.Delay}
			ccfg.Delay = 0 // the pacer spaces the requests fleet-wide
			c, err := crawler.New(ctx, ccfg, nil, out, log)
			if err != nil {
				return err
			}
			depth := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "litcrawl_frontier_jobs_pending",
				Help: "Jobs in the shared frontier (taken or not)."}, func() float64 {
				st, err := fr.Status(ctx)
				if err != nil {
					return -1
				}
				return float64(st.Pending)
			})
			if metricsRegistry.Register(depth) == nil {
				atEnd(func() { metricsRegistry.Unregister(depth) })
			}
			w := &frontier.Worker{F: fr, Crawler: c, Out: out, Log: log, Concurrency: ccfg.Concurrency, IdleExit: idle, Stop: stopChan(ctx)}
			err = w.Run(ctx)
			fmt.Fprintf(cmd.ErrOrStderr(), "crawl worker: %v\n", w.Counts())
			return err
		},
	}
	ff.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.baseURL, "base-url", "", "site base URL, e.g. a local test server")
	fl.StringArrayVar(&f.sinks, "sink", nil, "sink URL (repeatable); replaces the configured sinks")
	fl.IntVar(&f.concurrency, "concurrency", 0, "jobs handled at once (default: fetch.concurrency)")
	fl.DurationVar(&f.delay, "delay", -1, "fleet-wide delay between requests to a host (default: fetch.delay)")
	fl.DurationVar(&idle, "exit-when-idle", 0, "exit after this long without a job (batch runs); 0 runs until interrupted")
	return cmd
}

func newStatusCmd() *cobra.Command {
	var ff frontierFlags
	cmd := &cobra.Command{
		Use:   "status --frontier URL",
		Short: "Show the frontier's jobs: pending, in flight, dead-lettered",
		Args:  noArgs("status"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := ff.connect(cmd)
			if err != nil {
				return err
			}
			defer f.Close()
			st, err := f.Status(cmd.Context())
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "jobs: %d pending (%d in flight), %d dead-lettered\n", st.Pending, st.InFlight, st.Dead)
			fmt.Fprintf(w, "%-12s %10s %8s\n", "journal", "pending", "dead")
			for _, j := range st.Journals {
				fmt.Fprintf(w, "%-12d %10d %8d\n", j.Journal, j.Pending, j.Dead)
			}
			dls, err := f.DeadLetters(cmd.Context())
			if err != nil {
				return err
			}
			for i := max(0, len(dls)-5); i < len(dls); i++ {
				d := dls[i]
				fmt.Fprintf(w, "dead: journal %d page %d after %d tries: %s\n", d.Job.Journal, d.Job.Page, d.Deliveries, d.Error)
			}
			return nil
		},
	}
	ff.register(cmd)
	return cmd
}
