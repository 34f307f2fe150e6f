package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/litcrawl/litcrawl/internal/app"
	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/frontier"
	"github.com/litcrawl/litcrawl/internal/history"
	"github.com/litcrawl/litcrawl/internal/redact"
	htmlreport "github.com/litcrawl/litcrawl/internal/report"
	"github.com/litcrawl/litcrawl/internal/textsafe"
)

func newStatusCmd() *cobra.Command {
	var ff frontierFlags
	var asJSON bool
	var watch time.Duration
	var serve addrFlag
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
again every interval until interrupted.

--serve ADDR serves the same as a web page (built on the server, no
script and nothing from elsewhere; it loads itself again every --watch
interval, 5s by default) with the report's charts of the fleet's runs,
and as JSON at /status.json, until interrupted. The page holds no
secret (the frontier's URL is shown redacted); bind it to a loopback
address, or put it behind what guards your other dashboards.`,
		Example: `  crawl status --frontier nats://127.0.0.1:4222
  crawl status --frontier nats://127.0.0.1:4222 --watch 2s
  crawl status --frontier nats://127.0.0.1:4222 --json | jq '.status.in_flight_jobs'
  crawl status --frontier nats://127.0.0.1:4222 --serve 127.0.0.1:8090`,
		Args: func(cmd *cobra.Command, args []string) error {
			// --watch alone is --watch 2s; "--watch 5s" reads as a bare
			// --watch and an argument, which is its value.
			if len(args) == 1 && cmd.Flags().Changed("watch") && watch == 2*time.Second {
				if err := cmd.Flags().Set("watch", args[0]); err != nil {
					return flagError(cmd, err)
				}
				return nil
			}
			return noArgs("status")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, fl, err := ff.env(cmd)
			if err != nil {
				return err
			}
			ctx, cancel := stopOnSignal(cmd.Context(), 0)
			defer cancel()
			of(cmd).quietStop.Store(watch > 0 || serve.v != "") // Ctrl-C just ends the watch
			// A read holds at most the bounds of docs/security.md (16 MiB of
			// entries, decoded); a soft limit keeps the collector from
			// letting garbage pile up to several times that. It is the
			// process's: set when the command is the process (main made
			// its session), not when another program runs it.
			if os.Getenv("GOMEMLIMIT") == "" && of(cmd).stop != nil {
				debug.SetMemoryLimit(statusMemoryLimit)
			}
			var view *app.FleetView
			err = readFrontier(cmd, ctx, func(ctx context.Context) (err error) {
				view, err = env.OpenFleet(ctx, fl)
				return err
			})
			if err != nil {
				return err
			}
			defer view.Close()
			if serve.v != "" {
				return serveStatus(ctx, cmd, env, view, fl.URL, serve.v, cmp.Or(watch, 5*time.Second))
			}
			w := cmd.OutOrStdout()
			show := func(st *frontier.Status, dls []frontier.DeadLetter) error {
				if watch > 0 && terminal(w) {
					io.WriteString(w, "\x1b[H\x1b[2J") // clear the screen
				}
				if asJSON {
					return json.NewEncoder(w).Encode(map[string]any{"status": st, "dead_letters": dls})
				}
				printStatus(w, st, dls, time.Now())
				if watch > 0 && !terminal(w) {
					fmt.Fprintln(w)
				}
				return nil
			}
			for {
				var st *frontier.Status
				var dls []frontier.DeadLetter
				err := readFrontier(cmd, ctx, func(ctx context.Context) (err error) {
					st, dls, err = view.Status(ctx, 5)
					return err
				})
				switch {
				case err != nil && watch > 0 && ctx.Err() != nil:
					return nil
				case err != nil && watch > 0: // the frontier away: said, and asked again
					sayf(cmd.ErrOrStderr(), slog.LevelWarn, "crawl status: %v; asking again in %v", err, watch)
				case err != nil:
					return err
				default:
					if err := show(st, dls); err != nil {
						return err
					}
				}
				if watch == 0 {
					return nil
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
	typedVar(cmd.Flags(), newDuration(&watch, 0, false, "2s").within(time.Second, time.Hour), "watch", "print the status again every interval, 1s to 1h (--watch alone: 2s), until interrupted (with --serve: how often the page reloads)")
	cmd.Flags().Lookup("watch").NoOptDefVal = "2s"
	cmd.Flags().Var(&serve, "serve", "serve the status as a web page (and /status.json) on `HOST:PORT` until interrupted, e.g. 127.0.0.1:8090")
	return readOnlyCmd(cmd)
}

// statusMemoryLimit is crawl status's soft memory limit.
const statusMemoryLimit = 128 << 20

// maxStatusRows bounds each table of the status (workers, jobs in
// flight), in text and on the page.
const maxStatusRows = 200

// statusHead is the status's first lines: the frontier, the jobs, the
// workers by state.
func statusHead(st *frontier.Status) []string {
	leader := ""
	if st.JobsLeader != "" {
		leader = ", jobs stream led by " + textsafe.Line(shorten(st.JobsLeader, 40))
	}
	lines := []string{fmt.Sprintf("frontier: nats-server %s, %s%s, ack wait %v", textsafe.Line(shorten(st.Server, 24)), plural(st.Replicas, "replica"), leader, time.Duration(st.AckWait*float64(time.Second)))}
	rate := "no page done in the last minute"
	if st.PagesPerSecond > 0 {
		rate = fmt.Sprintf("%.2f pages/s lately", st.PagesPerSecond)
		if st.Pending > 0 {
			rate += fmt.Sprintf(", about %v to go", (time.Duration(min(st.ETASeconds, 1e9)) * time.Second).Round(time.Second))
		}
	}
	lines = append(lines, fmt.Sprintf("jobs: %d pending (%d in flight), %d dead-lettered, %d done by the workers of the last hour, of %d enqueued since the queue was made; %s",
		st.Pending, st.InFlight, st.Dead, st.Done, st.Enqueued, rate))
	if st.Stuck > 0 {
		lines = append(lines, fmt.Sprintf("stuck: %s the server brought back below its ack floor after a crash; an idle worker requeues them", plural(int(st.Stuck), "job")))
	}
	states := map[string]int{}
	for _, wi := range st.Workers {
		states[wi.State]++
	}
	workers := fmt.Sprintf("workers: %d alive, %d gone, %d exited (seen in the last hour)", states[frontier.WorkerAlive], states[frontier.WorkerGone], states[frontier.WorkerExited])
	if st.WorkersNotShown > 0 {
		workers += fmt.Sprintf("; %d entries of the workers bucket not shown (not a worker's, or beyond what a read takes: docs/security.md)", st.WorkersNotShown)
	}
	lines = append(lines, workers)
	if a := st.Audit; a != nil {
		lines = append(lines, "audit: "+auditStatus(*a, time.Now()))
	}
	if st.AuditError != "" {
		lines = append(lines, "audit: the walk states could not be read: "+textsafe.Line(shorten(st.AuditError, 300)))
	}
	if st.JournalsNotCounted {
		lines = append(lines, "journals: jobs and dead letters not counted per journal (a stream holds more subjects than a status lists)")
	}
	return lines
}

// auditStatus is the fleet's audit coverage in a line: how stale the
// least recently re-read page of any journal is.
func auditStatus(a engine.AuditSummary, now time.Time) string {
	switch {
	case a.Unaudited > 0:
		return fmt.Sprintf("%d of %s not yet audited whole (the most to go: journal %d, pages from %d on never re-read)", a.Unaudited, plural(a.Journals, "journal"), a.Worst, a.WorstNext)
	case a.Round > 0:
		return fmt.Sprintf("every page of %s re-read %s (the oldest: journal %d)", plural(a.Journals, "journal"), engine.Within(now.Sub(time.Unix(a.Round, 0))), a.Worst)
	}
	return plural(a.Journals, "journal")
}

// printStatus prints the fleet's status as text; names are cut short and
// tables to maxStatusRows rows.
func printStatus(w io.Writer, st *frontier.Status, dls []frontier.DeadLetter, now time.Time) {
	for _, l := range statusHead(st) {
		fmt.Fprintln(w, l)
	}
	ago := func(t time.Time) string { return agoOf(now, t) }
	when := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.Local().Format(time.DateTime)
	}
	if len(st.Workers) > 0 {
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  WORKER\tSTATE\tHOST\tPID\tVERSION\tSTARTED\tLAST SEEN\tDONE\tHOLDS")
		for _, wi := range st.Workers[:min(len(st.Workers), maxStatusRows)] {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\t%s\t%s\t%d\t%d\n", textsafe.Line(shorten(wi.ID, 40)), wi.State, textsafe.Line(shorten(wi.Host, 40)), wi.PID, versionColumn(wi.Version),
				when(wi.Started), ago(wi.LastSeen), wi.Jobs.Done+wi.Jobs.PastEnd, len(wi.Held))
		}
		tw.Flush()
		if n := len(st.Workers) - maxStatusRows; n > 0 {
			fmt.Fprintf(w, "  … and %d more workers (--json lists them all)\n", n)
		}
	}
	if len(st.InFlightJobs) > 0 {
		fmt.Fprintln(w, "in flight:")
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  JOURNAL\tPAGE\tWORKER\tWORKER STATE\tHELD FOR\tDELIVERY\tLAST HEARTBEAT")
		for _, h := range st.InFlightJobs[:min(len(st.InFlightJobs), maxStatusRows)] {
			page := fmt.Sprint(h.Page)
			if h.Nightly {
				page += " (nightly)"
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%d\t%s\n", h.Journal, page, textsafe.Line(shorten(h.Worker, 40)), h.WorkerState, now.Sub(h.Since).Round(time.Second), h.Delivery, ago(h.Heartbeat))
		}
		tw.Flush()
		if n := len(st.InFlightJobs) - maxStatusRows; n > 0 {
			fmt.Fprintf(w, "  … and %d more jobs in flight (--json lists them all)\n", n)
		}
	}
	if len(st.Journals) > 0 {
		fmt.Fprintf(w, "%-12s %10s %8s %8s  %s\n", "journal", "pending", "done", "dead", "nightly walk")
	}
	for _, j := range st.Journals[:min(len(st.Journals), maxStatusRows)] {
		walk := "-"
		if j.Walking {
			walk = "under way"
		}
		fmt.Fprintf(w, "%-12d %10d %8d %8d  %s\n", j.Journal, j.Pending, j.Done, j.Dead, walk)
	}
	if n := len(st.Journals) - maxStatusRows + st.JournalsNotShown; n > 0 {
		fmt.Fprintf(w, "  … and %d more journals (--json lists up to %d)\n", n, frontier.MaxStatusJournals)
	}
	for _, d := range dls {
		fmt.Fprintf(w, "dead: journal %d page %d after %d tries, %s: %s\n", d.Job.Journal, d.Job.Page, d.Deliveries, d.At.Local().Format(time.DateTime), textsafe.Line(d.Error))
	}
}

// serveStatus serves the fleet's live page and /status.json on addr until
// ctx ends. Each request reads the frontier (bounded by 10 s).
func serveStatus(ctx context.Context, cmd *cobra.Command, env *app.Env, view *app.FleetView, frontierURL, addr string, every time.Duration) error {
	ln, err := listen("--serve", addr)
	if err != nil {
		return err
	}
	shown := redact.URL(frontierURL)
	unavailable := func(w http.ResponseWriter, err error) {
		w.Header().Set("Refresh", strconv.Itoa(int(every.Seconds()))) // back by itself when the frontier is
		http.Error(w, "the frontier cannot be read: "+redact.Error(err, frontierURL), http.StatusServiceUnavailable)
	}
	// The fleet's history changes slowly and may be long: it is read at
	// most every 30 s, whatever the page's reloads and viewers.
	var runsMu sync.Mutex
	var runs []history.RunView
	var runsAt time.Time
	fleetRuns := func(ctx context.Context) ([]history.RunView, error) {
		runsMu.Lock()
		defer runsMu.Unlock()
		if runs != nil && time.Since(runsAt) < max(every, 30*time.Second) {
			return runs, nil
		}
		r, err := view.Runs(ctx)
		if err != nil {
			return nil, err
		}
		runs, runsAt = r, time.Now()
		return runs, nil
	}
	// One read of the fleet at a time, whatever the viewers, and its
	// answer shared for a second: each read is bounded, but many at once
	// would not be.
	var statusMu sync.Mutex
	var last struct {
		st  *frontier.Status
		dls []frontier.DeadLetter
		at  time.Time
	}
	status := func(ctx context.Context) (*frontier.Status, []frontier.DeadLetter, error) {
		statusMu.Lock()
		defer statusMu.Unlock()
		if last.st != nil && time.Since(last.at) < time.Second {
			return last.st, last.dls, nil
		}
		st, dls, err := view.Status(ctx, 5)
		if err != nil {
			return nil, nil, err
		}
		last.st, last.dls, last.at = st, dls, time.Now()
		return st, dls, nil
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status.json", func(w http.ResponseWriter, r *http.Request) {
		rctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		st, dls, err := status(rctx)
		if err != nil {
			unavailable(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"status": st, "dead_letters": dls})
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		rctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		st, dls, err := status(rctx)
		var runs []history.RunView
		if err == nil {
			runs, err = fleetRuns(rctx)
		}
		if err != nil {
			unavailable(w, err)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:")
		d := htmlreport.Data{StateDir: shown, Runs: runs, Thresholds: env.Config.Quality, Generated: time.Now(),
			Live: liveOf(st, dls, time.Now()), Refresh: every}
		if err := htmlreport.Write(w, d); err != nil {
			sayf(cmd.ErrOrStderr(), slog.LevelWarn, "crawl status: the page: %v", err)
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second}
	say(cmd.ErrOrStderr(), slog.LevelInfo, fmt.Sprintf("serving the fleet's status on http://%s (and /status.json); interrupt to stop", ln.Addr()), "addr", ln.Addr().String())
	return serveUntil(ctx, srv, ln, "--serve")
}

// liveOf is the fleet's status as the live page shows it.
func liveOf(st *frontier.Status, dls []frontier.DeadLetter, now time.Time) *htmlreport.Live {
	live := &htmlreport.Live{Title: "Fleet status", Lines: statusHead(st)}
	ago := func(t time.Time) string { return agoOf(now, t) }
	workers := htmlreport.LiveTable{ID: "workers", Caption: "Workers", Empty: "No worker has announced itself in the last hour.",
		Head:    []string{"worker", "state", "host", "pid", "version", "started (UTC)", "last seen", "jobs done", "holds"},
		Numeric: []bool{false, false, false, true, false, false, true, true, true}}
	for _, wi := range st.Workers[:min(len(st.Workers), maxStatusRows)] {
		workers.Rows = append(workers.Rows, []string{wi.ID, wi.State, wi.Host, fmt.Sprint(wi.PID), versionColumn(wi.Version), wi.Started.UTC().Format(time.DateTime),
			ago(wi.LastSeen), fmt.Sprint(wi.Jobs.Done + wi.Jobs.PastEnd), fmt.Sprint(len(wi.Held))})
	}
	if n := len(st.Workers) - maxStatusRows; n > 0 {
		workers.More = fmt.Sprintf("… and %d more workers (/status.json lists them all).", n)
	}
	if st.WorkersNotShown > 0 {
		workers.More += fmt.Sprintf(" %d entries of the workers bucket not shown (not a worker's, or beyond what a read takes).", st.WorkersNotShown)
	}
	inflight := htmlreport.LiveTable{ID: "in-flight", Caption: "Jobs in flight", Empty: "No job is in flight.",
		Head:    []string{"journal", "page", "worker", "worker state", "held for", "delivery", "last heartbeat"},
		Numeric: []bool{true, true, false, false, true, true, true}}
	for _, h := range st.InFlightJobs[:min(len(st.InFlightJobs), maxStatusRows)] {
		inflight.Rows = append(inflight.Rows, []string{fmt.Sprint(h.Journal), fmt.Sprint(h.Page), h.Worker, h.WorkerState,
			now.Sub(h.Since).Round(time.Second).String(), fmt.Sprint(h.Delivery), ago(h.Heartbeat)})
	}
	if n := len(st.InFlightJobs) - maxStatusRows; n > 0 {
		inflight.More = fmt.Sprintf("… and %d more jobs in flight (/status.json lists them all).", n)
	}
	journals := htmlreport.LiveTable{ID: "journals", Caption: "Journals", Empty: "No journal has jobs.",
		Head: []string{"journal", "pending", "done", "dead-lettered", "nightly walk"}, Numeric: []bool{true, true, true, true, false}}
	for _, j := range st.Journals[:min(len(st.Journals), maxStatusRows)] {
		journals.Rows = append(journals.Rows, []string{fmt.Sprint(j.Journal), fmt.Sprint(j.Pending), fmt.Sprint(j.Done), fmt.Sprint(j.Dead), map[bool]string{true: "under way", false: "-"}[j.Walking]})
	}
	if n := len(st.Journals) - maxStatusRows + st.JournalsNotShown; n > 0 {
		journals.More = fmt.Sprintf("… and %d more journals (/status.json lists up to %d).", n, frontier.MaxStatusJournals)
	}
	dead := htmlreport.LiveTable{ID: "dead-letters", Caption: "Last dead letters", Empty: "No job was dead-lettered.",
		Head: []string{"journal", "page", "tries", "when (UTC)", "error"}, Numeric: []bool{true, true, true, false, false}}
	for _, d := range dls {
		dead.Rows = append(dead.Rows, []string{fmt.Sprint(d.Job.Journal), fmt.Sprint(d.Job.Page), fmt.Sprint(d.Deliveries), d.At.UTC().Format(time.DateTime), d.Error})
	}
	audit := htmlreport.LiveTable{ID: "audit", Caption: "Audit coverage", Empty: "No nightly walk has audited a journal yet.",
		Head: []string{"journal", "next page", "listing pages", "every page re-read"}, Numeric: []bool{true, true, true, false}}
	if a := st.Audit; a != nil {
		for _, r := range a.Rows {
			cov := fmt.Sprintf("pages from %d on never re-read yet", r.Next)
			if r.Round > 0 {
				cov = engine.Within(now.Sub(time.Unix(r.Round, 0)))
			}
			audit.Rows = append(audit.Rows, []string{fmt.Sprint(r.Journal), fmt.Sprint(r.Next), fmt.Sprint(r.Pages), cov})
		}
	}
	live.Tables = []htmlreport.LiveTable{workers, inflight, journals, audit, dead}
	return live
}

// versionColumn is a worker's version as the status shows it: its first
// word ("v1.4.0", "devel-0123abcd4567"), or "unknown" (a build that
// recorded none, or the sentence of a worker of the version before).
func versionColumn(v string) string {
	v, _, _ = strings.Cut(strings.TrimSpace(v), " ")
	if v == "" || strings.HasPrefix(v, "(") {
		return "unknown"
	}
	return textsafe.Line(shorten(v, 32))
}

// agoOf is how long before now t was ("3s ago"), or "never" for no time
// (an entry that gave none, or one from the future).
func agoOf(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return now.Sub(t).Round(time.Second).String() + " ago"
}
