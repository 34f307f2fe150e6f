package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/litcrawl/litcrawl/internal/app"
	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/history"
	"github.com/litcrawl/litcrawl/internal/state"
	"github.com/litcrawl/litcrawl/internal/textsafe"
)

// stateDirOf is --state-dir, defaulting to the config's state_dir, and
// the command's environment.
func stateDirOf(cmd *cobra.Command, dir string) (string, *app.Env, error) {
	env, err := newEnv(cmd)
	if err != nil {
		return "", nil, err
	}
	if dir == "" {
		dir = env.Config.StateDir
	}
	return dir, env, nil
}

// readHistory reads the history, and says on stderr when a crawl holds the
// state (what is shown then comes from its snapshot).
func readHistory(cmd *cobra.Command, dir string, env *app.Env) (*history.History, error) {
	h, err := history.Read(dir, env.Config.Quality)
	if err != nil {
		return nil, err
	}
	if r := h.HeldBy; r != nil {
		sayf(cmd.ErrOrStderr(), slog.LevelInfo, "crawl: %s run %s (pid %d on %s, started %s) holds the state: showing the history as it was when that run started, and that run as under way",
			textsafe.Line(string(r.Kind)), textsafe.Line(r.ID), r.PID, textsafe.Line(r.Host), r.Started.UTC().Format(time.DateTime+" UTC"))
	}
	return h, nil
}

// withFleetRuns adds the fleet's worker runs (the frontier's runs stream)
// to local runs, newest first; with no frontier it returns the runs as
// they are.
func withFleetRuns(cmd *cobra.Command, env *app.Env, url string, runs []history.RunView) ([]history.RunView, error) {
	if url == "" {
		return runs, nil
	}
	var fleet []history.RunView
	err := readFrontier(cmd, cmd.Context(), func(ctx context.Context) (err error) {
		fleet, err = env.FleetRuns(ctx, app.Fleet{URL: url})
		return err
	})
	if err != nil {
		return nil, err
	}
	runs = append(slices.Clone(runs), fleet...)
	slices.SortStableFunc(runs, app.NewestFirst)
	return runs, nil
}

// allRuns are the local state's runs (none when there is no state but a
// frontier is given) and the fleet's, newest first.
func allRuns(cmd *cobra.Command, dir, frontierURL string) ([]history.RunView, string, error) {
	dir, env, err := stateDirOf(cmd, dir)
	if err != nil {
		return nil, "", err
	}
	var runs []history.RunView
	switch h, err := readHistory(cmd, dir, env); {
	case err == nil:
		runs = h.Runs
	case !(errors.Is(err, state.ErrNoState) && frontierURL != ""):
		return nil, dir, err
	}
	runs, err = withFleetRuns(cmd, env, frontierURL, runs)
	return runs, dir, err
}

// frontierVar registers --frontier for the commands that read the fleet's
// history.
func frontierVar(cmd *cobra.Command, url *string, what string) {
	cmd.Flags().StringVar(url, "frontier", "", what+": nats://[user:pass@]host:port[,host:port…]")
}

func newRunsCmd() *cobra.Command {
	var dir, frontierURL string
	var asJSON bool
	var limit int
	cmd := &cobra.Command{
		Use:   "runs [--state-dir DIR] [--json] [--limit N]",
		Short: "List the runs in the crawl state's history, newest first",
		Long: `runs lists the backfills and nightly runs recorded in the crawl state,
newest first: id, kind, journals, start, duration, pages ok/failed/skipped/
past the end, papers new/known, retries, exit code and the quality verdict. A run
with no end recorded was killed (kill -9, power loss) before its end; its
counts are recovered from the state (the pages it committed, the papers it
delivered first), noted "counts recovered"; its retries, skipped and
past-the-end pages are not known ("-").
Runs recorded by older versions show what they recorded ("-" for the
rest). 'crawl runs show ID' prints one run in full.

With --frontier, the fleet's worker runs (kept by each worker in the
frontier's runs stream) are listed beside the local runs (if the state
exists), kind "worker": a worker that is still at work is running, one
that vanished before its end is killed and shows its last counts.

While a crawl holds the state, runs does not wait for it: it shows the
history as it was when that crawl started (from runs.json, which the crawl
writes then), with that crawl as running.`,
		Example: `  crawl runs --state-dir crawl-state
  crawl runs --json --limit 0 | jq '.[] | select(.exit_code != 0)'
  crawl runs show latest`,
		Args: noArgs("runs"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 0 {
				return exitcode.UsageError(fmt.Errorf("--limit %d: expected 0 (all) or more", limit))
			}
			runs, dir, err := allRuns(cmd, dir, frontierURL)
			if err != nil {
				return err
			}
			total := len(runs)
			if limit > 0 && len(runs) > limit {
				sayf(cmd.ErrOrStderr(), slog.LevelInfo, "crawl: showing the newest %d of %d runs (--limit 0 shows all)", limit, len(runs))
				runs = runs[:limit]
			}
			if asJSON {
				if runs == nil {
					runs = []history.RunView{} // [] rather than null
				}
				return writeJSON(cmd.OutOrStdout(), runs)
			}
			if len(runs) == 0 {
				sayf(cmd.ErrOrStderr(), slog.LevelInfo, "crawl: no run recorded in %s yet", dir)
				return nil
			}
			return printRuns(cmd.OutOrStdout(), runs, total)
		},
	}
	stateDirVar(cmd.Flags(), &dir)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the runs as a JSON array (with each run's summary)")
	cmd.Flags().IntVar(&limit, "limit", 20, "show the newest N runs (0: all)")
	frontierVar(cmd, &frontierURL, "also list the fleet's worker runs kept in this frontier")
	cmd.AddCommand(newRunsShowCmd())
	return readOnlyCmd(cmd)
}

func newRunsShowCmd() *cobra.Command {
	var dir, frontierURL string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show ID [--state-dir DIR] [--frontier URL] [--json]",
		Short: "Print one run of the history: its counts, per journal, and its failed pages",
		Long: `show prints one run of the crawl state's history: when and where it ran,
how it ended (exit code), its pages, papers and retries, the quality of
the parsed papers against their thresholds, the distribution of page
fetch times, the counts per journal, nightly walks that stopped at
nightly.max_pages, and the pages that failed with their errors.

ID is a run id, a unique prefix of one, the run's number in the # column
crawl runs prints (3 or #3; 1 is the oldest), or "latest"; with
--frontier, the fleet's worker runs are among them.`,
		Example: `  crawl runs show latest
  crawl runs show 3
  crawl runs show 20261203T0300 --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return exitcode.UsageError(fmt.Errorf("runs show: needs one run id (a # number, or \"latest\"), got %d arguments", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			runs, dir, err := allRuns(cmd, dir, frontierURL)
			if err != nil {
				return err
			}
			if len(runs) == 0 {
				return fmt.Errorf("no run recorded in %s yet", dir)
			}
			v, err := (&history.History{Runs: runs}).Find(args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), v)
			}
			return printRun(cmd.OutOrStdout(), v)
		},
	}
	stateDirVar(cmd.Flags(), &dir)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run as JSON")
	frontierVar(cmd, &frontierURL, "also look among the fleet's worker runs kept in this frontier")
	return readOnlyCmd(cmd)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func orDash[T comparable](v T, show func(T) string) string {
	var zero T
	if v == zero {
		return "-"
	}
	return show(v)
}

func journalList(js []int64, most int) string {
	if len(js) == 0 {
		return "-"
	}
	var parts []string
	for i, j := range js {
		if i == most {
			parts = append(parts, fmt.Sprintf("+%d", len(js)-most))
			break
		}
		parts = append(parts, strconv.FormatInt(j, 10))
	}
	return strings.Join(parts, ",")
}

func duration(v history.RunView) string {
	d := time.Duration(v.DurationSeconds * float64(time.Second))
	switch {
	case v.DurationSeconds == 0:
		return "-"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

func exitText(v history.RunView) string { return cmp.Or(v.Outcome(), "-") }

// printRuns prints runs, newest first, numbered as the report numbers
// them: 1 the oldest of all total runs.
func printRuns(w io.Writer, runs []history.RunView, total int) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tRUN\tKIND\tJOURNALS\tSTARTED (UTC)\tDURATION\tPAGES OK/FAILED/SKIPPED/PAST END\tPAPERS NEW/UPDATED/KNOWN\tRETRIES\tEXIT\tQUALITY\tNOTES")
	for i, v := range runs {
		pages, papers, retries := "-", "-", "-"
		if v.Summary != nil {
			ok, failed, past := v.Pages()
			fresh, known := v.Papers()
			pages = fmt.Sprintf("%d/%d/%d/%d", ok, failed, v.Summary.Pages["skipped"], past)
			if v.Recovered {
				pages = fmt.Sprintf("%d/%d/-/-", ok, failed) // skips and the end are not in the state
			}
			updated, _ := v.Revised()
			papers = fmt.Sprintf("%d/%d/%d", fresh, updated, known)
			retries = strconv.Itoa(v.Retries())
		}
		var note []string
		if v.Summary != nil && len(v.Summary.IncompleteWalks) > 0 {
			note = append(note, plural(len(v.Summary.IncompleteWalks), "walk")+" cut short")
		}
		if v.Summary != nil {
			if n := len(v.Summary.WalkNotes) + v.Summary.WalkNotesOmitted; n > 0 {
				note = append(note, plural(n, "walk note"))
			}
			if a := v.Summary.Audit; a != nil {
				note = append(note, auditNote(*a, v.Started))
			}
		}
		if v.Recovered {
			note = append(note, "counts recovered")
			retries = "-"
		}
		if v.Summary != nil && v.Summary.Quarantined > 0 {
			note = append(note, fmt.Sprintf("%d quarantined", v.Summary.Quarantined))
		}
		notes := "-"
		if len(note) > 0 {
			notes = strings.Join(note, ", ")
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", total-i, textsafe.Line(v.ID), textsafe.Line(string(v.Kind)), journalList(v.Journals, 3),
			v.Started.UTC().Format(time.DateTime), duration(v), pages, papers, retries, exitText(v), v.Quality, notes)
	}
	return tw.Flush()
}

// auditNote is a run's audit coverage in a few words, for the NOTES
// column: how stale the least recently re-read page was.
func auditNote(a engine.AuditSummary, at time.Time) string {
	if a.Unaudited > 0 {
		return fmt.Sprintf("audit: %s not yet whole", plural(a.Unaudited, "journal"))
	}
	if a.Round > 0 {
		if d := engine.Days(at.Sub(time.Unix(a.Round, 0))); d != "<1d" {
			return "audit ≤" + d
		}
		return "audit <1d"
	}
	return "audit"
}

// auditRow is one journal's audit coverage.
func auditRow(r engine.AuditCoverage, at time.Time) string {
	read := "no page re-read"
	switch {
	case r.From > 0 && r.From == r.To:
		read = fmt.Sprintf("re-read page %d", r.From)
	case r.From > 0:
		read = fmt.Sprintf("re-read pages %d-%d", r.From, r.To)
	}
	if r.Round == 0 {
		return fmt.Sprintf("journal %d: %s; pages from %d on never re-read yet", r.Journal, read, r.Next)
	}
	return fmt.Sprintf("journal %d: %s; next page %d (%d pages at the last round's end); every page re-read %s", r.Journal, read, r.Next, r.Pages, engine.Within(at.Sub(time.Unix(r.Round, 0))))
}

func pct(n, of int) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(n)/float64(of))
}

// runStatus says how a run ended, or that it did not.
func runStatus(v history.RunView) string {
	switch {
	case v.ExitCode != nil:
		return fmt.Sprintf("%s, exit %d (%s)", v.Status, *v.ExitCode, exitcode.Meaning(*v.ExitCode))
	case v.Status == history.StatusKilled && v.Kind == history.Worker:
		return "gone before its end (killed or cut off; the counts are its last); the jobs it held went to other workers after the ack wait"
	case v.Status == history.StatusKilled && v.Recovered:
		return "killed before its end (no end recorded); a later run resumes where it stopped. Its counts are recovered: what it committed, read back from the state"
	case v.Status == history.StatusKilled:
		return "killed before its end (no end recorded); a later run resumes where it stopped"
	}
	return v.Status
}

// retriesLine is a run's retries, by cause.
func retriesLine(v history.RunView) string {
	var causes []string
	for _, k := range slices.Sorted(maps.Keys(v.Summary.Retries)) {
		causes = append(causes, fmt.Sprintf("%s=%d", k, v.Summary.Retries[k]))
	}
	switch {
	case v.Recovered:
		return "not known (the run kept no summary)"
	case len(causes) == 0:
		return "none"
	}
	return fmt.Sprintf("%d (%s)", v.Retries(), strings.Join(causes, " "))
}

// qualityLine is what a run's parsed papers held, against the thresholds
// it was held to.
func qualityLine(v history.RunView) string {
	q := v.Summary.Quality
	if q.Pages == 0 {
		return v.Quality
	}
	line := fmt.Sprintf("%s: %d papers on %d pages; with title %s, DOI %s, authors %s, date %s", v.Quality, q.Records, q.Pages,
		pct(q.WithTitle, q.Records), pct(q.WithDOI, q.Records), pct(q.WithAuthor, q.Records), pct(q.WithDate, q.Records))
	if t := v.Summary.QualityThresholds; t != nil {
		line += fmt.Sprintf(" (minimum %.0f%%, %.0f%%, %.0f%%, %.0f%%)", 100*t.MinTitleShare, 100*t.MinDOIShare, 100*t.MinAuthorsShare, 100*t.MinPublishedShare)
	}
	return line
}

// fetchTimesLine is a run's histogram of fetch times ("" when it has
// none).
func fetchTimesLine(h *engine.Histogram) string {
	if h == nil {
		return ""
	}
	var parts []string
	for i, c := range h.Counts {
		if c == 0 {
			continue
		}
		if i < len(h.LE) {
			parts = append(parts, fmt.Sprintf("≤%s: %d", history.SecondsLabel(h.LE[i]), c))
		} else {
			parts = append(parts, fmt.Sprintf(">%s: %d", history.SecondsLabel(h.LE[len(h.LE)-1]), c))
		}
	}
	return strings.Join(parts, ", ")
}

func printRun(w io.Writer, v history.RunView) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, format string, a ...any) {
		fmt.Fprintf(tw, "%s\t%s\n", k, textsafe.Line(fmt.Sprintf(format, a...)))
	}
	row("run", "%s", v.ID)
	row("kind", "%s", v.Kind)
	row("status", "%s", runStatus(v))
	row("journals", "%s", journalList(v.Journals, 1000))
	where := ""
	if v.PID != 0 {
		where = fmt.Sprintf(" (pid %d on %s)", v.PID, orDash(v.Host, func(s string) string { return s }))
	}
	row("started", "%s%s", v.Started.UTC().Format(time.DateTime+" UTC"), where)
	if !v.Finished.IsZero() {
		row("finished", "%s (%s)", v.Finished.UTC().Format(time.DateTime+" UTC"), duration(v))
	}
	s := v.Summary
	if s == nil {
		fmt.Fprintln(tw, "summary\tnone: the run did not end")
		return tw.Flush()
	}
	if s.Error != "" {
		row("error", "%s", s.Error)
	}
	ok, failed, past := v.Pages()
	if v.Recovered {
		row("pages", "%d ok, %d failed; skipped and past the end not known (the run kept no summary)", ok, failed)
	} else {
		row("pages", "%d ok, %d failed, %d skipped (done before), %d past the end", ok, failed, s.Pages["skipped"], past)
	}
	fresh, known := v.Papers()
	updated, held := v.Revised()
	papers := fmt.Sprintf("%d new, %d updated, %d known", fresh, updated, known)
	if held > 0 {
		papers += fmt.Sprintf("; %d held back (quality.hold: crawl quarantine list)", held)
	}
	row("papers", "%s", papers)
	row("retries", "%s", retriesLine(v))
	row("quality", "%s", qualityLine(v))
	if v.QualityAlarm != "" {
		row("", "%s", v.QualityAlarm)
	}
	if line := fetchTimesLine(s.FetchSeconds); line != "" {
		row("fetch times", "%s", line)
	}
	for _, iw := range s.IncompleteWalks {
		row("incomplete", "%s", history.IncompleteText(iw))
	}
	for _, n := range s.WalkNotes {
		row("note", "%s", history.NoteText(n))
	}
	if s.WalkNotesOmitted > 0 {
		row("note", "… and %d more (the run's log has every one)", s.WalkNotesOmitted)
	}
	if a := s.Audit; a != nil {
		row("audit", "%s", a.Text(v.Started))
		for _, r := range a.Rows {
			row("", "%s", auditRow(r, v.Started))
		}
	}
	if s.Quarantined > 0 {
		row("quarantined", "%d records refused by a sink, kept in %s (crawl quarantine list)", s.Quarantined, orDash(s.Quarantine, func(s string) string { return s }))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(s.PerJournal) > 0 {
		fmt.Fprintln(w, "\nper journal:")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "JOURNAL\tPAGES OK\tFAILED\tSKIPPED\tPAST END\tPAPERS NEW\tUPDATED\tKNOWN\t")
		keys := slices.SortedFunc(maps.Keys(s.PerJournal), func(a, b string) int {
			x, _ := strconv.ParseInt(a, 10, 64)
			y, _ := strconv.ParseInt(b, 10, 64)
			return cmp.Or(cmp.Compare(x, y), strings.Compare(a, b))
		})
		for _, k := range keys {
			c := s.PerJournal[k]
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", textsafe.Line(k), c.PagesDone, c.PagesFailed, c.PagesSkipped, c.PagesPastEnd, c.PapersNew, c.PapersUpdated, c.PapersKnown)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(s.Failures) > 0 {
		fmt.Fprintf(w, "\nfailed pages (%d):\n", len(s.Failures)+s.FailuresOmitted)
		for _, g := range history.GroupFailures(s.Failures) {
			fmt.Fprintf(w, "  %s\n", textsafe.Line(g.String()))
		}
		if s.FailuresOmitted > 0 {
			fmt.Fprintf(w, "  … and %d more (the run's --report page log lists every page)\n", s.FailuresOmitted)
		}
	}
	return nil
}
