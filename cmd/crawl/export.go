package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/litcrawl/litcrawl/internal/app"
	"github.com/litcrawl/litcrawl/internal/atomicfile"
	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/export"
	"github.com/litcrawl/litcrawl/internal/fskind"
)

func newExportCmd() *cobra.Command {
	var format, out string
	var f export.Filter
	cmd := &cobra.Command{
		Use:   "export --format bibtex|ris|csl-json [--journal J] [--since DAY] [--until DAY] [--fetched-since DAY] [-o FILE] FILE.jsonl…",
		Short: "Turn delivered records (JSONL files) into BibTeX, RIS or CSL-JSON for a reference manager",
		Long: `export reads the JSONL files the jsonl sink wrote ("-": standard input)
and writes their papers in a format reference managers import: BibTeX
(Zotero, JabRef, pandoc, LaTeX), RIS (Zotero, EndNote, Mendeley) or
CSL-JSON (pandoc, Zotero). Of each paper the last revision is written,
once: a record that replaces an earlier id stands for that paper.

Each paper gets a citation key that stays the same in every export
(first author, year, first title word, site id: lee2024adaptive-8801).
Authors are family and given names where the name tells them apart, and
a literal otherwise (a Chinese name is kept whole). The Chinese title is
written as the format's other-version title (BibTeX origtitle, RIS OP,
CSL-JSON original-title), which the readers keep beside the title.

The output goes to standard output, or with -o to FILE, replaced
atomically (its directory is created). A line that is not a record
stops the export, naming the file and the line.`,
		Example: `  crawl export --format bibtex data/papers.jsonl > papers.bib
  crawl export --format ris --fetched-since 2026-12-01 -o data/new.ris data/papers.jsonl
  crawl export --format csl-json --journal 501422 data/papers-*.jsonl`,
		Args: argsAtLeast(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, ok := export.Formats[format]; !ok {
				return exitcode.Usagef("--format %q: expected %s", format, export.FormatNames)
			}
			for _, d := range []struct {
				name string
				v    *string
			}{{"since", &f.Since}, {"until", &f.Until}, {"fetched-since", &f.FetchedSince}} {
				if *d.v == "" {
					continue
				}
				day, ok := export.ParseDay(*d.v)
				if !ok {
					return exitcode.Usagef("--%s %q: expected a day, YYYY-MM-DD", d.name, *d.v)
				}
				*d.v = day
			}
			if f.Since != "" && f.Until != "" && f.Since > f.Until {
				return exitcode.Usagef("--since %s is after --until %s", f.Since, f.Until)
			}
			if out != "" {
				// Not over an input, the crawl state or a sink's file:
				// each would be lost.
				for _, in := range args {
					if in != "-" && app.SamePath(in, out) {
						return exitcode.Usagef("-o %s: is an input too: write the export to a file of its own", out)
					}
				}
				var sinks []string
				if cfg, err := loadConfig(cmd); err == nil {
					sinks = slices.Concat(append([][]string{cfg.Sinks}, slices.Collect(maps.Values(cfg.JournalSinks()))...)...)
				}
				if err := app.NotASinksFile(out, sinks); err != nil {
					return exitcode.UsageError(fmt.Errorf("-o %s: %w", out, err))
				}
				if app.InCrawlState(out) {
					return exitcode.Usagef("-o %s: is in a crawl state directory (it holds crawl.db): write the export elsewhere", out)
				}
				if err := app.PrepareOutputFile(out, stateDirFor(cmd)); err != nil {
					return exitcode.UsageError(fmt.Errorf("-o %s: %w", out, err))
				}
				if err := export.Replaceable(out, format); err != nil {
					return exitcode.UsageError(fmt.Errorf("-o %s: %w", out, err))
				}
			}
			var ps export.Papers
			for _, path := range args {
				if err := readRecords(cmd.InOrStdin(), path, &ps); err != nil {
					return err
				}
			}
			recs := ps.Latest(f)
			write := func(w io.Writer) error { return export.Write(w, format, recs) }
			where := "standard output"
			if out == "" {
				if err := write(cmd.OutOrStdout()); err != nil {
					return err
				}
			} else {
				if err := atomicfile.Write(out, func(w *bufio.Writer) error { return write(w) }); err != nil {
					return fmt.Errorf("-o %s: %w", out, err)
				}
				where = out
			}
			sayf(cmd.ErrOrStderr(), slog.LevelInfo, "crawl export: %d papers (%s) to %s, of %d in the input", len(recs), format, where, ps.Len())
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "", "the format: "+export.FormatNames+" (required)")
	cmd.Flags().StringVar(&f.Journal, "journal", "", "only this journal's papers: its id (PeriodicalId) or its name")
	cmd.Flags().StringVar(&f.Since, "since", "", "only papers published on or after this `DAY` (YYYY-MM-DD)")
	cmd.Flags().StringVar(&f.Until, "until", "", "only papers published on or before this `DAY` (YYYY-MM-DD)")
	cmd.Flags().StringVar(&f.FetchedSince, "fetched-since", "", "only papers the crawl fetched on or after this `DAY` (YYYY-MM-DD, UTC; source.fetched_at): those that came since, whatever their date")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to this `FILE` (replaced atomically; its directory is created) instead of standard output")
	return cmd
}

// readRecords reads one input of export: a JSONL file, or "-" for
// standard input.
func readRecords(stdin io.Reader, path string, ps *export.Papers) error {
	if path == "-" {
		return export.Read(stdin, "standard input", ps)
	}
	fh, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return exitcode.Usagef("%s: no such file (give the JSONL files a jsonl sink wrote)", path)
		}
		return err
	}
	defer fh.Close()
	if info, err := fh.Stat(); err == nil && !info.Mode().IsRegular() && info.Mode()&os.ModeNamedPipe == 0 {
		return exitcode.Usagef("%s: is not a regular file (%s): give the JSONL files a jsonl sink wrote", path, fskind.Of(info.Mode()))
	}
	return export.Read(fh, path, ps)
}
