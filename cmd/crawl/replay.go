package main

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/litcrawl/litcrawl/app"
	"github.com/litcrawl/litcrawl/archive"
	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/parser"
	"github.com/litcrawl/litcrawl/record"
)

func newReplayCmd() *cobra.Command {
	var dir string
	var sinks []string
	var appendOK bool
	var out string
	cmd := &cobra.Command{
		Use:   "replay --archive DIR [--sink URL …]",
		Short: "Re-parse archived listing pages offline and deliver their records",
		Long: `replay reads the WARC files of --archive (written by --archive on a
crawl), parses every archived listing page that came back whole (HTTP 200,
a genuine listing page) with this build's parser, and delivers the
records to the sinks: each paper once, where it first appears, as a live
run delivers them. Records keep the page URL and the archive's fetch
time; source.run_id names the replay. Nothing is fetched. Use it after a
parser fix to re-derive records from what was fetched.`,
		Example: `  crawl replay --archive out/warc --sink jsonl:out/replayed.jsonl`,
		Args:    noArgs("replay"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return exitcode.UsageError(errors.New("--archive DIR is required"))
			}
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("sink") && out == "" {
				sinks = cfg.Sinks
			}
			sinks = withOutput(sinks, out)
			scheme := cfg.Site.Scheme()
			ctx, cancel := stopOnSignal(cmd.Context(), 0)
			defer cancel()
			log, err := newLogger(cmd)
			if err != nil {
				return err
			}
			if err := refuseAppend(sinks, appendOK); err != nil {
				return err
			}
			out, err := app.OpenSinks(ctx, sinks, app.SinkOptions{Stdout: cmd.OutOrStdout(), Log: log, Metrics: appMetrics})
			if err != nil {
				return err
			}
			runID := "replay-" + app.NewRunID(time.Now())
			seen := map[string]bool{}
			pages, records := 0, 0
			err = archive.Responses(dir, func(r archive.Response) error {
				if err := ctx.Err(); err != nil {
					return err
				}
				journal, pageNo, listing := scheme.ParseURL(r.URL)
				if r.Status != 200 || !listing {
					return nil
				}
				page, err := parser.Parse(r.Body, parser.Options{URL: r.URL, Journal: journal, Page: pageNo, ContentType: r.Header.Get("Content-Type"), FetchedAt: r.Date, RunID: runID})
				if err != nil || !page.IsListing() {
					return nil // a soft block or an error page, as the live run saw it
				}
				var fresh []record.Record
				for _, rec := range page.Records {
					if !seen[rec.ID] {
						seen[rec.ID] = true
						fresh = append(fresh, rec)
					}
				}
				pages++
				records += len(fresh)
				if len(fresh) == 0 {
					return nil
				}
				return out.Write(ctx, fresh)
			})
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("replay: %w", err)
			}
			say(cmd.ErrOrStderr(), slog.LevelInfo, fmt.Sprintf("crawl replay %s: %d listing pages, %d papers delivered", runID, pages, records),
				"run_id", runID, "pages", pages, "papers", records)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "archive", "", "directory of WARC files to replay")
	cmd.Flags().StringArrayVar(&sinks, "sink", nil, "a sink `URL` (repeatable; replaces the configured sinks; default: standard output)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the records to the JSONL file `FILE` (short for --sink jsonl:FILE)")
	cmd.Flags().BoolVar(&appendOK, "append", false, "add to a JSONL sink file that already holds records (refused otherwise)")
	return cmd
}
