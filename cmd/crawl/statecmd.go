package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"

	"github.com/litcrawl/litcrawl/internal/app"
	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/internal/state"
)

func newStateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "state",
		Short: "Check, rebuild or search the crawl state",
		Long: `state checks the crawl state file (crawl state check), builds a new
one from delivered JSONL (crawl state rebuild) for a state file that was
damaged (a disk fault, a copy cut short), or tells whether a paper was
delivered and by which run (crawl state find).`,
		Args: noArgs("state"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitcode.UsageError(errors.New("state: give a subcommand: check, rebuild or find"))
		},
	}
	cmd.AddCommand(newStateCheckCmd(), newStateRebuildCmd(), newStateFindCmd())
	return cmd
}

// checkResult is what a check found, as the checking process reports it.
type checkResult struct {
	File     string       `json:"file"`
	Counts   state.Counts `json:"counts"`
	Problems []string     `json:"problems,omitempty"`
	Error    string       `json:"error,omitempty"`
}

func newStateCheckCmd() *cobra.Command {
	var dir string
	var here bool
	cmd := &cobra.Command{
		Use:   "check [--state-dir DIR]",
		Short: "Run bbolt's full consistency check of the state file",
		Long: `check reads every page of the state file (read-only) and runs bbolt's
full consistency check. The check runs in a process of its own, so a badly
damaged page cannot take this one down with it. A crawl holding the state
makes check wait 2 s, then say so.

Exit codes: 0 sound, 1 damaged or unreadable, 2 usage.`,
		Example: `  crawl state check --state-dir crawl-state`,
		Args:    noArgs("state check"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				cfg, err := loadConfig(cmd)
				if err != nil {
					return err
				}
				dir = cfg.StateDir
			}
			if here {
				return checkHere(cmd, dir)
			}
			return checkInChild(cmd, dir)
		},
	}
	stateDirVar(cmd.Flags(), &dir)
	cmd.Flags().BoolVar(&here, "in-process", false, "check in this process (what the checking process runs)")
	cmd.Flags().MarkHidden("in-process")
	return readOnlyCmd(cmd)
}

// checkHere checks in this process and prints the result as JSON.
func checkHere(cmd *cobra.Command, dir string) error {
	res := checkResult{File: dir + "/" + state.FileName}
	if err := state.Stat(dir); err != nil {
		return fmt.Errorf("state check: %w", err)
	}
	counts, problems, err := state.Check(dir)
	res.Counts = counts
	for _, p := range problems {
		res.Problems = append(res.Problems, p.Error())
	}
	if err != nil {
		res.Error = err.Error()
	}
	return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
}

// checkInChild runs the check in a process of its own and reports it.
func checkInChild(cmd *cobra.Command, dir string) error {
	file := dir + "/" + state.FileName
	if err := state.Stat(dir); err != nil {
		var d *state.DamagedError
		if errors.As(err, &d) {
			return err
		}
		return fmt.Errorf("state check: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("state check: %w", err)
	}
	ctx, cancel := stopOnSignal(cmd.Context(), 0) // the first signal stops the check
	defer cancel()
	child := exec.CommandContext(ctx, self, "state", "check", "--in-process", "--state-dir", dir)
	var out, errb bytes.Buffer
	child.Stdout, child.Stderr = &out, &errb
	runErr := child.Run()
	var res checkResult
	if jerr := json.Unmarshal(out.Bytes(), &res); jerr != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// The check died: bbolt tripped over a damaged page where no one
		// can catch it.
		first, _, _ := bytes.Cut(bytes.TrimSpace(errb.Bytes()), []byte("\n"))
		return fmt.Errorf("state %s is damaged: the check crashed reading it (%s; %v). %s", file, first, runErr, rebuildHint)
	}
	w := cmd.OutOrStdout()
	switch {
	case res.Error != "":
		return fmt.Errorf("state check: %s", res.Error)
	case len(res.Problems) > 0:
		for _, p := range res.Problems {
			fmt.Fprintf(w, "%s: %s\n", file, p)
		}
		return fmt.Errorf("state %s is damaged: %d problem(s) above. %s", file, len(res.Problems), rebuildHint)
	}
	c := res.Counts
	if c.Format == 1 {
		fmt.Fprintf(w, "%s: sound, format 1 (the next crawl migrates it to format %d): %d papers, %d DOIs, %d pages, %d runs, sink token %v\n",
			file, state.Format, c.Papers, c.DOIs, c.Pages, c.Runs, c.SinkToken)
		return nil
	}
	fmt.Fprintf(w, "%s: sound, format %d: %d papers (%d ids and DOIs), %d pages, %d runs, sink token %v\n", file, c.Format, c.Papers, c.Keys, c.Pages, c.Runs, c.SinkToken)
	return nil
}

const rebuildHint = "Rebuild the known papers from what was delivered: crawl state rebuild --state-dir NEWDIR --from jsonl:FILE…, then crawl with --state-dir NEWDIR"

func newStateRebuildCmd() *cobra.Command {
	var dir string
	var from []string
	cmd := &cobra.Command{
		Use:   "rebuild --state-dir NEWDIR --from jsonl:FILE [--from jsonl:FILE …]",
		Short: "Build a new state from delivered JSONL records",
		Long: `rebuild builds a new state in NEWDIR from the JSONL files the crawler
delivered: every record's paper (id and DOI) becomes known again, first
delivered by the run its source.run_id names. No page is marked done: a
backfill fetches the pages again and delivers only papers not in these
files. NEWDIR must not hold a state; lines that are not records are
counted and skipped.

Exit codes: 0 built, 1 an input could not be read, 2 usage.`,
		Example: `  crawl state rebuild --state-dir crawl-state.new --from jsonl:out/papers.jsonl
  crawl state rebuild --state-dir crawl-state.new --from jsonl:out/papers-2026-12-01.jsonl --from jsonl:out/papers-2026-12-02.jsonl`,
		Args: noArgs("state rebuild"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return exitcode.UsageError(errors.New("--state-dir NEWDIR is required (a new directory)"))
			}
			got, err := app.Rebuild(cmd.Context(), dir, from)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %d known papers from %d lines of %d files (%d lines skipped)\n",
				dir, got.Papers, got.Lines, got.Files, got.Skipped)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "state-dir", "", "the new state directory (must not hold a state)")
	cmd.Flags().StringArrayVar(&from, "from", nil, "a JSONL file of delivered records, as jsonl:FILE (repeatable)")
	return cmd
}

func newStateFindCmd() *cobra.Command {
	var dir, id, doi string
	cmd := &cobra.Command{
		Use:   "find [--state-dir DIR] --id ID | --doi DOI",
		Short: "Tell whether a paper was delivered, and by which run",
		Long: `find looks a paper up in the crawl state, read-only, by its record id,
its DOI, or both (as a crawl does: by either, the earlier run when both
are known), and prints whether it is known and the run that first
delivered it. The state keeps hashes of ids and DOIs, not the strings:
see docs/state.md.

It reads a state not yet migrated (format 1) as it is. A crawl holding
the state makes find wait 2 s, then say so.

Exit codes: 0 known, 3 not known, 1 the state could not be read, 2 usage.`,
		Example: `  crawl state find --id 142263551
  crawl state find --doi 10.1016/j.jdcs.2024.103290 --state-dir crawl-state`,
		Args: noArgs("state find"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			id, doi = strings.TrimSpace(id), strings.TrimSpace(doi)
			if id == "" && doi == "" {
				return exitcode.UsageError(errors.New("state find: give --id ID, --doi DOI or both"))
			}
			if dir == "" {
				cfg, err := loadConfig(cmd)
				if err != nil {
					return err
				}
				dir = cfg.StateDir
			}
			st, err := state.OpenReadOnly(dir)
			if err != nil {
				return fmt.Errorf("state find: %w", err)
			}
			defer st.Close()
			run, known, err := st.FirstRun(cmd.Context(), ledger.Paper{ID: id, DOI: doi})
			if err != nil {
				return fmt.Errorf("state find: %w", err)
			}
			w := cmd.OutOrStdout()
			if !known {
				fmt.Fprintf(w, "not known: never delivered with the state in %s\n", dir)
				return exitcode.Quiet(exitcode.Incomplete)
			}
			if run == "" {
				run = "(a run this state did not keep)"
			}
			rev := "no revision kept (delivered before this version: the next read of it records one)"
			if id == "" {
				rev = "its last revision is kept with its id (--id)"
			}
			if seen, err := st.Lookup(cmd.Context(), []ledger.Paper{{ID: id, DOI: doi}}, ""); err == nil && engine.Revision(seen[0].Print) > 0 {
				rev = fmt.Sprintf("delivered last as revision %d", engine.Revision(seen[0].Print))
			}
			fmt.Fprintf(w, "known: first delivered by run %s; %s\n", run, rev)
			return nil
		},
	}
	stateDirVar(cmd.Flags(), &dir)
	cmd.Flags().StringVar(&id, "id", "", "the paper's record id (\"doi:…\" for one seen without its JSON)")
	cmd.Flags().StringVar(&doi, "doi", "", "the paper's DOI (any case)")
	return readOnlyCmd(cmd)
}
