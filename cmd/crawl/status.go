package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/litcrawl/litcrawl/frontier"
)

func newStatusCmd() *cobra.Command {
	var ff frontierFlags
	var asJSON bool
	var watch time.Duration
	cmd := &cobra.Command{
		Use:   "status --frontier URL [--json] [--watch 2s]",
		Short: "Show the fleet: jobs pending and in flight, workers, progress, dead letters",
		Long: `status prints the state of the fleet:
  - jobs pending (and how many a worker holds), done, dead-lettered; the
    pages per second over the last minute and, at that rate, the time to go;
  - the workers seen in the last hour (host, pid, version, start, jobs done,
    last seen): alive, gone (it stopped saying it is alive: killed, or cut
    off) or exited;
  - each job in flight: journal and page, the worker that holds it and
    whether it is alive, how long it has held it, the delivery attempt and
    the last heartbeat (a gone worker's job goes to another worker when
    the ack wait has passed since that heartbeat);
  - per journal: pending, done, dead-lettered, and whether a nightly walk
    is under way; then the last five dead letters with their errors.

While a cluster elects a new leader it keeps asking, up to 30 seconds.
Like enqueue and worker it creates the frontier's streams when they do not
exist yet (with --replicas), and changes nothing else. --watch prints it
again every interval until interrupted.`,
		Example: `  crawl status --frontier nats://127.0.0.1:4222
  crawl status --frontier nats://127.0.0.1:4222 --watch 2s
  crawl status --frontier nats://127.0.0.1:4222 --json | jq '.status.in_flight_jobs'`,
		Args: noArgs("status"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, fl, err := ff.env(cmd)
			if err != nil {
				return err
			}
			ctx, cancel := stopOnSignal(cmd.Context(), 0)
			defer cancel()
			of(cmd).quietStop.Store(watch > 0) // Ctrl-C just ends the watch
			w := cmd.OutOrStdout()
			for {
				tctx, cancelT := context.WithTimeout(ctx, 30*time.Second)
				st, dls, err := env.Status(tctx, fl, 5)
				cancelT()
				if err != nil {
					if watch > 0 && ctx.Err() != nil {
						return nil
					}
					return err
				}
				if watch > 0 && terminal(w) {
					io.WriteString(w, "\x1b[H\x1b[2J") // clear the screen
				}
				if asJSON {
					if err := json.NewEncoder(w).Encode(map[string]any{"status": st, "dead_letters": dls}); err != nil {
						return err
					}
				} else {
					printStatus(w, st, dls, time.Now())
				}
				if watch == 0 {
					return nil
				}
				if !terminal(w) && !asJSON {
					fmt.Fprintln(w)
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(watch):
				}
			}
		},
	}
	ff.register(cmd, false)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON (one object a line with --watch)")
	typedVar(cmd.Flags(), newDuration(&watch, 0, false, "2s").within(time.Second, time.Hour), "watch", "print the status again every interval, 1s to 1h, until interrupted")
	return cmd
}

// printStatus prints the fleet's status as text.
func printStatus(w io.Writer, st *frontier.Status, dls []frontier.DeadLetter, now time.Time) {
	fmt.Fprintf(w, "frontier: nats-server %s, %s, ack wait %v\n", clean(st.Server), plural(st.Replicas, "replica"), time.Duration(st.AckWait*float64(time.Second)))
	rate := "no page done in the last minute"
	if st.PagesPerSecond > 0 {
		rate = fmt.Sprintf("%.2f pages/s over the last minute", st.PagesPerSecond)
		if st.Pending > 0 {
			rate += fmt.Sprintf(", about %v to go", (time.Duration(st.ETASeconds) * time.Second).Round(time.Second))
		}
	}
	fmt.Fprintf(w, "jobs: %d pending (%d in flight), %d dead-lettered, %d done; %s\n", st.Pending, st.InFlight, st.Dead, st.Done, rate)
	if st.Stuck > 0 {
		fmt.Fprintf(w, "stuck: %s the server brought back below its ack floor after a crash; an idle worker requeues them\n", plural(int(st.Stuck), "job"))
	}
	states := map[string]int{}
	for _, wi := range st.Workers {
		states[wi.State]++
	}
	fmt.Fprintf(w, "workers: %d alive, %d gone, %d exited (seen in the last hour)\n", states[frontier.WorkerAlive], states[frontier.WorkerGone], states[frontier.WorkerExited])
	ago := func(t time.Time) string { return now.Sub(t).Round(time.Second).String() + " ago" }
	if len(st.Workers) > 0 {
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  WORKER\tSTATE\tHOST\tPID\tVERSION\tSTARTED\tLAST SEEN\tDONE\tHOLDS")
		for _, wi := range st.Workers {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\t%s\t%s\t%d\t%d\n", clean(wi.ID), wi.State, clean(wi.Host), wi.PID, clean(shorten(wi.Version, 24)),
				wi.Started.Local().Format(time.DateTime), ago(wi.LastSeen), wi.Jobs.Done+wi.Jobs.PastEnd, len(wi.Held))
		}
		tw.Flush()
	}
	if len(st.InFlightJobs) > 0 {
		fmt.Fprintln(w, "in flight:")
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  JOURNAL\tPAGE\tWORKER\tWORKER STATE\tHELD FOR\tDELIVERY\tLAST HEARTBEAT")
		for _, h := range st.InFlightJobs {
			page := fmt.Sprint(h.Page)
			if h.Nightly {
				page += " (nightly)"
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%d\t%s\n", h.Journal, page, clean(h.Worker), h.WorkerState, now.Sub(h.Since).Round(time.Second), h.Delivery, ago(h.Heartbeat))
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "%-12s %10s %8s %8s  %s\n", "journal", "pending", "done", "dead", "nightly walk")
	for _, j := range st.Journals {
		walk := "-"
		if j.Walking {
			walk = "under way"
		}
		fmt.Fprintf(w, "%-12d %10d %8d %8d  %s\n", j.Journal, j.Pending, j.Done, j.Dead, walk)
	}
	for _, d := range dls {
		fmt.Fprintf(w, "dead: journal %d page %d after %d tries, %s: %s\n", d.Job.Journal, d.Job.Page, d.Deliveries, d.At.Local().Format(time.DateTime), clean(d.Error))
	}
}
