package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/redact"
	"github.com/litcrawl/litcrawl/sink"
)

func newSinkCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sink",
		Short: "Check the sinks before a crawl",
		Long: `sink checks the configured sinks (crawl sink check): that each can be
reached and written to, before a crawl depends on it.`,
		Args: noArgs("sink"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitcode.UsageError(errors.New("sink: give a subcommand: check"))
		},
	}
	cmd.AddCommand(newSinkCheckCmd())
	return cmd
}

func newSinkCheckCmd() *cobra.Command {
	var urls []string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "check [--sink URL …]",
		Short: "Open each sink as a crawl would, deliver nothing, and say if it is ready",
		Long: `check opens each sink as a crawl would, then closes it, delivering
nothing: it connects, checks TLS, credentials and privileges, and makes
what the sink needs and does not find (a PostgreSQL table and its indexes,
migrated to this build's version; a NATS stream; a JSONL file's
directory; a feed directory and its lock file, atom:DIR), so a mistyped
path is made too: read the paths it prints. Run it once as a user who may make those, before crawling as
one who may only write. A sink that cannot be reached is not retried.
The sinks are held open together, as a crawl holds them: a destination
given twice, or one directory of feeds named with two option sets, fails
here as it would at a crawl's start.

Exit codes: 0 every sink ready, 1 a sink is not (each is named with why),
2 usage.`,
		Example: `  crawl sink check --sink 'postgres://owner@db.example.com/lit?table=papers'
  crawl sink check --sink 'atom:/srv/feeds?base=https://example.org/feeds' --sink jsonl:out/papers.jsonl
  crawl sink check --config /etc/litcrawl/config.yaml`,
		Args: noArgs("sink check"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("sink") {
				cfg, err := loadConfig(cmd)
				if err != nil {
					return err
				}
				urls = cfg.AllSinks() // the journals' own sinks too
			}
			if len(urls) == 0 {
				return exitcode.UsageError(errors.New("sink check: no sink: give --sink URL, or list sinks in the config"))
			}
			if timeout < time.Second || timeout > time.Hour {
				return exitcode.UsageError(fmt.Errorf("--timeout %v: expected a duration from 1s to 1h", timeout))
			}
			log, err := newLogger(cmd)
			if err != nil {
				return err
			}
			// The sinks are held open together, as a crawl holds them, so
			// that two that cannot be open at once (one directory of feeds
			// named with two option sets) fail here as they would at a
			// crawl's start; then each is closed and said.
			type checked struct {
				s    sink.Sink
				line string
			}
			results := make([]checked, len(urls))
			for i, u := range urls {
				if err := sink.CheckURL(u); err != nil {
					results[i].line = fmt.Sprintf("FAIL  %v", err)
					continue
				}
				if k := slices.IndexFunc(urls[:i], func(o string) bool { return sink.Same(o) == sink.Same(u) }); k >= 0 {
					results[i].line = fmt.Sprintf("FAIL  %s: given twice (the same destination as sink %d): expected each sink once", redact.URL(u), k+1)
					continue
				}
				ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
				s, err := sink.Open(ctx, u, sink.Options{Logger: log, Stdout: cmd.OutOrStdout()})
				cancel()
				if err != nil {
					results[i].line = fmt.Sprintf("FAIL  %v", err)
					continue
				}
				results[i].s = s
			}
			failed := 0
			for i := len(results) - 1; i >= 0; i-- {
				if s := results[i].s; s != nil {
					name := sink.Describe(s)
					results[i].line = "ok    " + name
					if err := s.Close(); err != nil {
						results[i].line = fmt.Sprintf("FAIL  %s: close: %v", name, err)
					}
				}
			}
			for _, r := range results {
				fmt.Fprintln(cmd.OutOrStdout(), r.line)
				if strings.HasPrefix(r.line, "FAIL") {
					failed++
				}
			}
			if failed > 0 {
				return fmt.Errorf("sink check: %d of %d sinks not ready", failed, len(urls))
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&urls, "sink", nil, "a sink `URL` to check (repeatable; default: the config's sinks)")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "how long to wait for each sink to open")
	return cmd
}
