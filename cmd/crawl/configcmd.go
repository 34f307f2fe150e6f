package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/litcrawl/litcrawl/internal/config"
	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/redact"
	"github.com/litcrawl/litcrawl/internal/textsafe"
)

func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show the settings in effect",
		Long: `config shows the configuration as the commands read it (crawl config
show): the settings in effect for each journal, the file's with the
journal's own overrides.`,
		Args: noArgs("config"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitcode.UsageError(errors.New("config: give a subcommand: show"))
		},
	}
	cmd.AddCommand(newConfigShowCmd())
	return cmd
}

func newConfigShowCmd() *cobra.Command {
	var journals []int64
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show [--journal J …] [--json]",
		Short: "Print the settings in effect for each journal",
		Long: `show loads the configuration (checked as a crawl checks it: a bad
value exits 1, naming its key) and prints, for each configured journal
(or each --journal), the settings a crawl of it uses: nightly.*,
backfill.*, sinks and fetch.delay. A value the journal sets itself is
marked "journal"; the others come from the file's sections ("file"),
or are the defaults ("default", whether the file states them or not). Sink URLs are shown with their passwords redacted.

A journal's fetch.delay spaces the requests for its pages; the host's
fetch.delay still holds between any two requests to the host, so the
delay in effect is the longer of the two. --sink on a crawl replaces
every sink, a journal's too.`,
		Example: `  crawl config show
  crawl config show --journal 501423 --json`,
		Args: noArgs("config show"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			ids := journals
			if len(ids) == 0 {
				ids = cfg.JournalIDs()
			}
			settings := make([]config.JournalSettings, len(ids))
			for i, j := range ids {
				s := cfg.For(j)
				s.Sinks = redactAll(s.Sinks)
				settings[i] = s
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), settings)
			}
			if len(settings) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no journal configured (journals: in the config, or --journal J)")
				return nil
			}
			return printSettings(cmd.OutOrStdout(), settings)
		},
	}
	journalsVar(cmd.Flags(), &journals, "show the settings of journal `J` (repeatable; default: the configured journals)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the settings as JSON")
	return readOnlyCmd(cmd)
}

func redactAll(urls []string) []string {
	out := make([]string, len(urls))
	for i, u := range urls {
		out[i] = redact.URL(u)
	}
	return out
}

// printSettings prints each journal's settings, one key a line, with
// where each comes from.
func printSettings(w io.Writer, settings []config.JournalSettings) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	defaults := settingRows(config.Default().For(0))
	for i, s := range settings {
		if i > 0 {
			fmt.Fprintln(tw)
		}
		title := "journal " + strconv.FormatInt(s.ID, 10)
		if s.Name != "" {
			title += " (" + textsafe.Line(s.Name) + ")"
		}
		fmt.Fprintln(tw, title)
		for k, row := range settingRows(s) {
			// Where it comes from: the journal's own section, else the
			// file (a value other than the default), else the default
			// (whether the file states it or not).
			from := "default"
			switch {
			case slices.Contains(s.Own, row.key):
				from = "journal"
			case row.value != defaults[k].value:
				from = "file"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", row.key, row.value, from)
		}
	}
	return tw.Flush()
}

// settingRows are a journal's settings as config show prints them.
func settingRows(s config.JournalSettings) []struct{ key, value string } {
	sinks := "standard output"
	if len(s.Sinks) > 0 {
		sinks = strings.Join(s.Sinks, ", ")
	}
	return []struct{ key, value string }{
		{"nightly.stop_after_known_pages", strconv.Itoa(s.Nightly.StopAfterKnownPages)},
		{"nightly.max_pages", strconv.Itoa(s.Nightly.MaxPages)},
		{"nightly.audit_pages", strconv.Itoa(s.Nightly.AuditPages)},
		{"backfill.stop_after_repeat_pages", strconv.Itoa(s.Backfill.StopAfterRepeatPages)},
		{"backfill.max_pages", strconv.Itoa(s.Backfill.MaxPages)},
		{"sinks", textsafe.Line(sinks)},
		{"fetch.delay", s.Fetch.Delay.D().String()},
	}
}
