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
	var dir, stateDir string
	var updates bool
	var sinks sinkFlags
	cmd := &cobra.Command{
		Use:   "replay --archive DIR [--updates [--state-dir DIR]] [--sink URL …]",
		Short: "Re-parse archived listing pages offline and deliver their records",
		Long: `replay reads the WARC files of --archive (written by --archive on a
crawl), parses every archived listing page that came back whole (HTTP 200,
a genuine listing page) with this build's parser, and delivers the
records to the sinks: each paper once, where it first appears, as a live
run delivers them. Records keep the page URL and the archive's fetch
time; source.run_id names the replay. Nothing is fetched. Use it after a
parser fix to re-derive records from what was fetched.

With --updates the replay delivers against the crawl state (--state-dir,
else state_dir from the config) into the crawl's sinks: the papers its
runs never delivered, and, as their next revision, the papers they
delivered whose records today's parser reads differently from the
archived pages (a parser fix reaching what was delivered). The sinks are
rolled back to the state's last commit first, and each page is committed
to the state with its records, as a crawl's: killed and run again, it
delivers each revision once. See docs/revisions.md.`,
		Example: `  crawl replay --archive out/warc --sink jsonl:out/replayed.jsonl
  crawl replay --archive data/warc --updates --state-dir data/state --sink jsonl:data/papers.jsonl`,
		Args: noArgs("replay"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return exitcode.UsageError(errors.New("--archive DIR is required"))
			}
			if stateDir != "" && !updates {
				return exitcode.Usagef("--state-dir %s: a replay delivers against a crawl state only with --updates (without it, every paper of the archive once)", stateDir)
			}
			if err := noEmptyValues(cmd); err != nil {
				return err
			}
			env, err := newEnv(cmd)
			if err != nil {
				return err
			}
			// Against a state, the sinks are a crawl's: rolled back to
			// the state's token, a JSONL file holding records is theirs.
			sinks.stateless = !updates
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
			r := app.Replay{Archive: dir, Sinks: urls, JournalSinks: perJournal}
			if updates {
				r.StateDir = stateDir
				if r.StateDir == "" {
					r.StateDir = env.Config.StateDir
				}
			}
			res, err := env.Replay(ctx, r)
			if err != nil && exitcode.Of(err) != exitcode.Quality {
				return err
			}
			msg := fmt.Sprintf("crawl replay %s: %d listing pages; papers: %d new, %d updated", res.RunID, res.Pages, res.New, res.Updated)
			if res.Held > 0 {
				msg += fmt.Sprintf(", %d held back", res.Held)
			}
			if res.Waiting > 0 {
				msg += fmt.Sprintf("; %d reads of changed papers poorer than what was delivered (not delivered: docs/revisions.md)", res.Waiting)
			}
			say(cmd.ErrOrStderr(), slog.LevelInfo, msg, "run_id", res.RunID, "pages", res.Pages, "papers_new", res.New, "papers_updated", res.Updated, "held", res.Held)
			return err
		},
	}
	cmd.Flags().StringVar(&dir, "archive", "", "directory of WARC files to replay")
	cmd.Flags().BoolVar(&updates, "updates", false, "deliver against the crawl state: papers never delivered, and changed ones as their next revision")
	stateDirVar(cmd.Flags(), &stateDir)
	sinks.register(cmd.Flags(), true, "replaces the config's sinks (default: the config's, else standard output; with --updates, not standard output)")
	return cmd
}
