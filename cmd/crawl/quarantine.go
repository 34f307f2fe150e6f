package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/litcrawl/litcrawl/internal/app"
	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/redact"
	"github.com/litcrawl/litcrawl/internal/state"
	"github.com/litcrawl/litcrawl/internal/textsafe"
	"github.com/litcrawl/litcrawl/sink"
	"github.com/litcrawl/litcrawl/sink/quarantine"
)

func newQuarantineCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "quarantine",
		Short: "Show or deliver again the records a sink refused or the quality gate held back",
		Long: `A record a sink refuses for its content (PostgreSQL refusing a NUL, a
record over a broker's message size or the JSONL line limit) never blocks
the crawl: it goes to the quarantine, a JSON-lines file beside the crawl
state (quarantine.jsonl: the sink, the reason, when, and the record), the
rest of the page is delivered and committed, and the run exits 3 naming
the file. crawl quarantine list shows what it holds; crawl quarantine
retry delivers it again (after the sink or the record was fixed).

A record the parser has a finding on (a field that does not look like
what it is) is held there too, with its page's bytes, and delivered
nowhere (quality.hold; the run exits 4): crawl quarantine retry --reparse
parses its page again after a parser fix and delivers it to every sink
once it reads right. A held record whose paper a later crawl delivered
(the site fixed it) leaves the quarantine at the next run.`,
		Args: noArgs("quarantine"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitcode.UsageError(errors.New("quarantine: give a subcommand: list or retry"))
		},
	}
	cmd.AddCommand(newQuarantineListCmd(), newQuarantineRetryCmd())
	return cmd
}

func newQuarantineListCmd() *cobra.Command {
	var dir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--state-dir DIR] [--json]",
		Short: "List the records a sink refused",
		Long: `list prints each quarantined record, oldest first: when it was refused,
by which sink, its id, DOI and title, how many times, and why. --json
prints the entries as JSON lines, as the file holds them.

Exit codes: 0 listed (an empty quarantine included), 1 unreadable, 2 usage.`,
		Example: `  crawl quarantine list --state-dir crawl-state
  crawl quarantine list --json | jq -r .record.id`,
		Args: noArgs("quarantine list"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, _, err := stateDirOf(cmd, dir)
			if err != nil {
				return err
			}
			if err := quarantineDirExists(dir); err != nil {
				return err
			}
			path := filepath.Join(dir, quarantine.Name)
			c, err := quarantine.Read(path)
			if err != nil {
				return err
			}
			rs, bad := c.Entries, len(c.Bad)
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetEscapeHTML(false)
				for _, r := range rs {
					if err := enc.Encode(r); err != nil {
						return err
					}
				}
			} else {
				if len(rs) == 0 {
					fmt.Fprintf(out, "the quarantine %s is empty\n", path)
				} else {
					fmt.Fprintf(out, "%d records in the quarantine %s:\n", len(rs), path)
				}
				for _, r := range rs {
					sinkName := cmp.Or(textsafe.Cut(redact.URL(r.Sink), 200), "-")
					reason := redact.Text(r.Reason, r.Sink)
					// The driver's error names the sink again: once is enough.
					for _, name := range []string{r.Sink, redact.URL(r.Sink)} {
						if i := strings.Index(reason, name+": "); i >= 0 && i < 16 {
							reason = reason[i+len(name)+2:]
							break
						}
					}
					what := fmt.Sprintf("refused %d× by %s", max(r.Tries, 0), sinkName)
					if r.Sink == sink.HeldBy {
						what = fmt.Sprintf("held back (quality.hold, read %d×)", max(r.Tries, 0))
					}
					fmt.Fprintf(out, "%s  %s  doi %s  %s  %s: %s\n", r.At.Format(time.RFC3339), cmp.Or(textsafe.Cut(r.Record.ID, 80), "-"),
						cmp.Or(textsafe.Cut(r.Record.DOI, 80), "-"), cmp.Or(textsafe.Cut(r.Record.Title, 60), "-"), what, cmp.Or(textsafe.Cut(reason, 300), "-"))
				}
			}
			if bad > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "%d lines of %s are no entry (torn by a crash or edited): kept in the file, not shown\n", bad, path)
			}
			return nil
		},
	}
	stateDirVar(cmd.Flags(), &dir)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the entries as JSON lines")
	return readOnlyCmd(cmd)
}

// quarantineDirExists refuses a state directory that holds neither a
// state nor a quarantine (a mistyped --state-dir is no empty quarantine).
func quarantineDirExists(dir string) error {
	err := state.Stat(dir)
	if !errors.Is(err, state.ErrNoState) {
		return nil
	}
	if _, qerr := os.Lstat(filepath.Join(dir, quarantine.Name)); qerr == nil {
		return nil // a fleet worker's quarantine: no state beside it
	}
	return err
}

func newQuarantineRetryCmd() *cobra.Command {
	var dir string
	var sinks []string
	var reparse bool
	cmd := &cobra.Command{
		Use:   "retry [--reparse] [--state-dir DIR] [--sink URL …]",
		Short: "Deliver the quarantined records again",
		Long: `retry delivers each quarantined record to the sink that refused it — one
of the configured sinks (or --sink), known by its URL with secrets
redacted — as a crawl delivers: holding the crawl state, its sinks
restored to the state's last commit and their new position committed.
Records delivered leave the quarantine; records refused again stay, their
tries counted; records whose sink is not given stay as they are. A crash
at any point leaves each record delivered once or still quarantined.

Records the quality gate held back (quality.hold: a field that does not
look like what it is) were delivered nowhere: --reparse parses their
pages, kept with them, again with this build's parser (after a parser
fix) and delivers those that now read right to every sink (the config's,
or --sink), as a crawl would; those the parser still has a finding on
stay. See docs/operations.md, "Exit 4".

Exit codes: 0 the quarantine is empty, 1 a sink or the state failed, 2
usage, 3 records remain in the quarantine.`,
		Example: `  crawl quarantine retry --state-dir crawl-state
  crawl quarantine retry --sink 'postgres://crawler@db/papers?table=papers'
  crawl quarantine retry --reparse --state-dir crawl-state`,
		Args: noArgs("quarantine retry"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, env, err := stateDirOf(cmd, dir)
			if err != nil {
				return err
			}
			if err := quarantineDirExists(dir); err != nil {
				return err
			}
			if reparse {
				var perJournal map[int64][]string
				if len(sinks) == 0 {
					perJournal = env.Config.JournalSinks()
				}
				res, err := env.RetryHeld(cmd.Context(), app.QuarantineRetry{StateDir: dir, Sinks: sinks, JournalSinks: perJournal})
				if err != nil {
					return err
				}
				left := res.Held + res.NoPage
				fmt.Fprintf(cmd.ErrOrStderr(), "quarantine %s: %d held records delivered (read right now), %d delivered since they were held (removed), %d held still (the parser still has a finding on them), %d without their page; %d held left\n",
					res.Path, res.Delivered, res.Since, res.Held, res.NoPage, left)
				if left > 0 {
					return exitcode.Quiet(exitcode.Incomplete)
				}
				return nil
			}
			res, err := env.RetryQuarantine(cmd.Context(), app.QuarantineRetry{StateDir: dir, Sinks: sinks})
			if err != nil {
				return err
			}
			left := res.Refused + res.Unmatched + res.Held
			msg := fmt.Sprintf("quarantine %s: %d delivered, %d refused again, %d for sinks not given; %d left", res.Path, res.Delivered, res.Refused, res.Unmatched, left)
			if res.Held > 0 {
				msg += fmt.Sprintf(" (%d held back by the quality gate: crawl quarantine retry --reparse)", res.Held)
			}
			if len(res.UnmatchedSinks) > 0 {
				// (as the quarantine names them: a password shown as
				// xxxxx is to be given as the sink takes it)
				hint := make([]string, len(res.UnmatchedSinks))
				for i, u := range res.UnmatchedSinks {
					hint[i] = "--sink '" + textsafe.Line(u) + "'"
				}
				msg += fmt.Sprintf("; to deliver the records of sinks not given, retry with %s (their secrets, masked here, as the sinks take them)", strings.Join(hint, " "))
			}
			fmt.Fprintln(cmd.ErrOrStderr(), msg)
			if left > 0 {
				return exitcode.Quiet(exitcode.Incomplete)
			}
			return nil
		},
	}
	stateDirVar(cmd.Flags(), &dir)
	cmd.Flags().StringArrayVar(&sinks, "sink", nil, "a sink `URL` (repeatable; default: the config's sinks)")
	cmd.Flags().BoolVar(&reparse, "reparse", false, "parse the held records' pages again with this build's parser and deliver those that read right")
	return cmd
}
