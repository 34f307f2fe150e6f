package main

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/litcrawl/litcrawl/internal/app"
	"github.com/litcrawl/litcrawl/internal/atomicfile"
	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/history"
	"github.com/litcrawl/litcrawl/internal/redact"
	htmlreport "github.com/litcrawl/litcrawl/internal/report"
	"github.com/litcrawl/litcrawl/internal/state"
)

func newReportCmd() *cobra.Command {
	var dir, out, frontierURL string
	cmd := &cobra.Command{
		Use:   "report -o FILE [--state-dir DIR] [--frontier URL] [REPORT.json …]",
		Short: "Write an HTML report of the run history, with charts",
		Long: `report writes one self-contained HTML file (no script, font or style from
elsewhere: it opens from disk with no network) from the run history in the
crawl state and any --report JSON files given: new papers per run and per
journal over time, pages per second, retries by cause, the distribution of
page fetch times, the quality of the parsed papers against their
thresholds, the nightly walks stopped by nightly.max_pages, the failed
pages with their errors, and the runs.

A --report file adds its run when the history lacks it (a state that is
gone), and its page log gives the fetch times of runs recorded before they
were. With --frontier, the fleet's worker runs (kind "worker") are drawn
beside the local runs. While a crawl holds the state, report does not
wait for it: it shows the history as it was when that crawl started.`,
		Example: `  crawl report --state-dir crawl-state -o report.html
  crawl report --state-dir crawl-state -o report.html reports/*.json`,
		RunE: func(cmd *cobra.Command, files []string) error {
			if out == "" {
				return exitcode.UsageError(errors.New("-o/--out FILE is required: where to write the HTML report"))
			}
			dir, env, err := stateDirOf(cmd, dir)
			if err != nil {
				return err
			}
			if err := app.PrepareOutputFile(out, dir); err != nil {
				return exitcode.UsageError(fmt.Errorf("-o %s: %w", out, err))
			}
			d := htmlreport.Data{StateDir: dir, Thresholds: env.Config.Quality, Generated: time.Now(),
				PageLogs: map[string]history.PageLogSummary{}}
			h, err := readHistory(cmd, dir, env)
			switch {
			case err == nil:
				d.Runs, d.HeldBy = h.Runs, h.HeldBy
			case errors.Is(err, state.ErrNoState) && (len(files) > 0 || frontierURL != ""):
				sayf(cmd.ErrOrStderr(), slog.LevelWarn, "crawl: %v: the report shows the fleet's runs and the --report files alone", err)
			default:
				return err
			}
			if d.Runs, err = withFleetRuns(cmd, env, frontierURL, d.Runs); err != nil {
				return err
			}
			if frontierURL != "" {
				d.Sources = append(d.Sources, "the frontier's runs ("+redact.URL(frontierURL)+")")
			}
			for _, f := range files {
				rf, err := history.ReadSummaryFile(f)
				if err != nil {
					return fmt.Errorf("report: %w", err)
				}
				d.Sources = append(d.Sources, f)
				d.PageLogs[rf.RunID] = rf.PageLog
				if !slices.ContainsFunc(d.Runs, func(v history.RunView) bool { return v.ID == rf.RunID }) {
					d.Runs = append(d.Runs, history.FromReport(rf.RunSummary, env.Config.Quality))
				}
			}
			// Newest first, as the history is.
			slices.SortStableFunc(d.Runs, app.NewestFirst)
			size, err := writeReport(out, d)
			if err != nil {
				return err
			}
			sayf(cmd.ErrOrStderr(), slog.LevelInfo, "report: %s (%s, %s): open it in a browser", out, humanBytes(size), plural(len(d.Runs), "run"))
			return nil
		},
	}
	stateDirVar(cmd.Flags(), &dir)
	cmd.Flags().StringVarP(&out, "out", "o", "", "the HTML file to write (replaced atomically)")
	frontierVar(cmd, &frontierURL, "draw the fleet's worker runs kept in this frontier beside the local runs")
	return readOnlyCmd(cmd)
}

// writeReport writes the report atomically: a reader never sees half a
// report.
func writeReport(path string, d htmlreport.Data) (int64, error) {
	if err := atomicfile.Write(path, func(w *bufio.Writer) error { return htmlreport.Write(w, d) }); err != nil {
		return 0, fmt.Errorf("-o %s: %w", path, err)
	}
	info, err := os.Stat(path)
	if err != nil {
		return 0, fmt.Errorf("-o %s: %w", path, err)
	}
	return info.Size(), nil
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
