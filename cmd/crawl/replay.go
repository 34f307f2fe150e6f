package main

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/litcrawl/litcrawl/internal/app"
	"github.com/litcrawl/litcrawl/internal/exitcode"
)

func newReplayCmd() *cobra.Command {
	var dir string
	var sinks sinkFlags
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
			env, err := newEnv(cmd)
			if err != nil {
				return err
			}
			urls, err := sinks.resolve(cmd, env.Config.Sinks)
			if err != nil {
				return err
			}
			perJournal, err := sinks.journalSinks(cmd, env.Config)
			if err != nil {
				return err
			}
			ctx, cancel := stopOnSignal(cmd.Context(), 0)
			defer cancel()
			res, err := env.Replay(ctx, app.Replay{Archive: dir, Sinks: urls, JournalSinks: perJournal})
			if err != nil {
				return err
			}
			say(cmd.ErrOrStderr(), slog.LevelInfo, fmt.Sprintf("crawl replay %s: %d listing pages, %d papers delivered", res.RunID, res.Pages, res.Papers),
				"run_id", res.RunID, "pages", res.Pages, "papers", res.Papers)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "archive", "", "directory of WARC files to replay")
	sinks.register(cmd.Flags(), true)
	return cmd
}
