package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/litcrawl/litcrawl/internal/app"
	"github.com/litcrawl/litcrawl/internal/config"
	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/redact"
)

// frontierFlags name the shared frontier.
type frontierFlags struct {
	url        string
	ackWait    time.Duration
	maxDeliver int
	replicas   int
}

// register registers --frontier and --replicas, and with consumer the
// flags that change the workers' consumer (not on status, which only
// reads).
func (f *frontierFlags) register(cmd *cobra.Command, consumer bool) {
	fl := cmd.Flags()
	fl.StringVar(&f.url, "frontier", "", "the shared frontier: nats://[user:pass@]host:port[,host:port…] (JetStream, nats-server 2.9.10 or newer)")
	typedVar(fl, newIntIn(&f.replicas, 0, 1, config.MaxReplicas, ""), "replicas", "replicas of the frontier's streams and buckets, 1 to 5, on a cluster: new ones are created with it, existing ones moved in place (default: frontier.replicas; as they are, 1 when created)")
	if consumer {
		typedVar(fl, newDuration(&f.ackWait, 0, true, "30s").within(config.MinAckWait, config.MaxAckWait), "ack-wait", "how long a worker may hold a job without a heartbeat before it goes to another worker, 1s to 10m; workers heartbeat every third of it (default: frontier.ack_wait; as the frontier has it, 30s when created)")
		typedVar(fl, newIntIn(&f.maxDeliver, 0, 1, 100, "tries"), "max-deliver", "tries of a job before it is dead-lettered (default: as the frontier has it; 5 when it is created)")
	}
}

// fleet turns the flags into the frontier's options; a flag not given
// leaves the frontier as it is.
func (f *frontierFlags) fleet(cmd *cobra.Command, env *app.Env) (app.Fleet, error) {
	for _, server := range strings.Split(f.url, ",") {
		if scheme, _, ok := strings.Cut(server, "://"); ok && scheme != "nats" && scheme != "tls" {
			return app.Fleet{}, exitcode.Usagef("--frontier %s: expected nats://HOST:PORT (or tls://), several comma-separated", redact.URL(server))
		}
	}
	fl := app.Fleet{URL: f.url, Replicas: env.Config.Frontier.Replicas}
	// The flags' values were checked as they were parsed (flags.go).
	if cmd.Flags().Changed("replicas") {
		fl.Replicas = f.replicas
	}
	fl.AckWait, fl.MaxDeliver = f.ackWait, f.maxDeliver
	if cmd.Flags().Lookup("ack-wait") != nil && !cmd.Flags().Changed("ack-wait") {
		fl.AckWait = env.Config.Frontier.AckWait.D() // enqueue and worker set the ack wait; status only reads
	}
	return fl, nil
}

// env is the command's environment and the frontier the flags name.
func (f *frontierFlags) env(cmd *cobra.Command) (*app.Env, app.Fleet, error) {
	env, err := newEnv(cmd)
	if err != nil {
		return nil, app.Fleet{}, err
	}
	fl, err := f.fleet(cmd, env)
	return env, fl, err
}

func noArgs(name string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return exitcode.UsageError(fmt.Errorf("%s takes no arguments (usage: %s), got %q", name, cmd.UseLine(), args))
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
		Use:   "enqueue --frontier URL [--journal J …] (--pages A-B | --nightly)",
		Short: "Publish crawl jobs to the shared frontier for workers",
		Long: `enqueue publishes page jobs to the frontier's JetStream work queue.
--pages A-B enqueues those pages of each journal; --nightly enqueues each
journal's nightly walk, which the workers continue page by page until
nightly.stop_after_known_pages pages of known papers, the last page or
nightly.max_pages.

A repeated enqueue adds nothing: a page whose job is pending or in
flight (taken by a worker, not yet done) is not enqueued again, whatever
run enqueued it, and a journal whose nightly walk is under way gets no
second walk. Once a job is done or dead-lettered, its page can be
enqueued again.`,
		Example: `  crawl enqueue --frontier nats://127.0.0.1:4222 --journal 501422 --pages 1-200
  crawl enqueue --frontier nats://127.0.0.1:4222 --nightly`,
		Args: noArgs("enqueue"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, fl, err := ff.env(cmd)
			if err != nil {
				return err
			}
			if len(journals) == 0 {
				journals = env.Config.JournalIDs()
			}
			if nightly == (pages != "") {
				return exitcode.UsageError(errors.New("give either --pages A-B or --nightly"))
			}
			o := app.Enqueue{Fleet: fl, Journals: journals, Nightly: nightly}
			if !nightly {
				if o.From, o.To, err = parsePages(pages); err != nil {
					return err
				}
			}
			runID, n, err := env.Enqueue(cmd.Context(), o)
			if err != nil && n.Added+n.Queued == 0 {
				return err
			}
			defer func() {
				if err != nil {
					say(cmd.ErrOrStderr(), slog.LevelWarn, "crawl enqueue: stopped early: the jobs above were enqueued, the rest not")
				}
			}()
			if env.JSON {
				env.Log.Info("enqueued", "run_id", runID, "added", n.Added, "already_queued", n.Queued)
			} else if n.Added == 0 {
				say(cmd.ErrOrStderr(), slog.LevelInfo, fmt.Sprintf("enqueued nothing: %s already pending or in flight", plural(n.Queued, "job")), "queued", n.Queued)
			} else {
				text := fmt.Sprintf("enqueued %s (run %s)", plural(n.Added, "job"), runID)
				if n.Queued > 0 {
					text += fmt.Sprintf("; %s already pending or in flight", plural(n.Queued, "job"))
				}
				say(cmd.ErrOrStderr(), slog.LevelInfo, text, "added", n.Added, "queued", n.Queued, "run_id", runID)
			}
			return err
		},
	}
	ff.register(cmd, true)
	journalsVar(cmd.Flags(), &journals, "a journal id `J` (repeatable; default: the configured journals)")
	cmd.Flags().StringVar(&pages, "pages", "", "pages A-B, or a page A")
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
A job that fails is retried later, and after the frontier's max
deliveries (or at once, when it fails for good) goes to the dead-letter
stream with its error. A killed worker loses nothing: it heartbeats the
jobs it holds every third of the ack wait (frontier.ack_wait, 30s), so
a dead worker's job goes to another worker within the ack wait. fetch.delay
is a fleet-wide pace per host. Run any number of workers on any number of
machines; deliver to a queue sink with dedupe (nats://…?stream=…) so that a
job redelivered after a delivery leaves each paper once.

The worker says every 2s in the frontier's workers bucket who it is and
what it holds (crawl status shows it, and a worker that stopped saying so
as gone), and keeps its run's summary in the runs stream (crawl runs
--frontier, crawl report --frontier). The first SIGINT/SIGTERM stops
taking jobs; the jobs in hand finish within shutdown_timeout, or are
handed back at once; at the end the worker prints its summary (JSON with
--log-format json).`,
		Example: `  crawl worker --frontier nats://127.0.0.1:4222 --sink 'nats://127.0.0.1:4222/papers.new?stream=PAPERS'`,
		Args:    noArgs("worker"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, err := newEnv(cmd)
			if err != nil {
				return err
			}
			if err := f.apply(cmd, env.Config); err != nil {
				return err
			}
			fl, err := ff.fleet(cmd, env)
			if err != nil {
				return err
			}
			limitMemory(env.Config.Fetch.Concurrency)
			ctx, cancel := stopOnSignal(cmd.Context(), env.Config.ShutdownTimeout.D())
			defer cancel()
			return env.Work(ctx, app.Work{Fleet: fl, Sinks: env.Config.Sinks, JournalSinks: env.Config.JournalSinks(), IdleExit: idle, Version: shortVersion(), Report: f.report})
		},
	}
	ff.register(cmd, true)
	f.registerSite(cmd)
	cmd.Flags().StringVar(&f.report, "report", "", "at the end, write the worker run's summary as JSON to this file, with a line per page (as crawl backfill --report)")
	typedVar(cmd.Flags(), newDuration(&idle, 0, false, "5s"), "exit-when-idle", "exit once this long without a job and the whole fleet is drained: nothing pending or in flight on any worker (batch runs); 0 runs until interrupted")
	return cmd
}

// plural is "1 job", "2 jobs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// frontierTimeout bounds a read of the frontier by a command (status, runs
// and report with --frontier): a cluster elects a new leader within
// seconds; one that cannot (most of its servers down) is said to be so.
const frontierTimeout = 30 * time.Second

// frontierNoticeAfter is how long a read waits before saying it waits.
const frontierNoticeAfter = 3 * time.Second

// readFrontier runs read within frontierTimeout. When the frontier does
// not answer within frontierNoticeAfter it says once that it waits, and
// when it never does, what is missing.
func readFrontier(cmd *cobra.Command, ctx context.Context, read func(ctx context.Context) error) error {
	name := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
	ctx, cancel := context.WithTimeout(ctx, frontierTimeout)
	defer cancel()
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTimer(frontierNoticeAfter)
		defer t.Stop()
		select {
		case <-t.C:
			sayf(cmd.ErrOrStderr(), slog.LevelWarn, "crawl %s: waiting for the frontier (no answer yet: a cluster electing a leader, most of its servers down, or a long read); up to %v", name, frontierTimeout)
		case <-done:
		}
	}()
	err := read(ctx)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		return fmt.Errorf("%s: the frontier did not answer within %v (%w): a stream replicated on a cluster answers only while most of its servers are up, and a single server only while it is up; start the servers that are down, or see the server's log", name, frontierTimeout, err)
	}
	return err
}
