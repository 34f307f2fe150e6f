package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/litcrawl/litcrawl/internal/app"
	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/redact"
	"github.com/litcrawl/litcrawl/internal/textsafe"
	"github.com/litcrawl/litcrawl/parser"
)

type parseFlags struct {
	sinks       sinkFlags
	summary     bool
	strict      bool
	format      string
	charset     string
	concurrency int
	url         string
	maxInput    int64 // --max-input-bytes (parse.max_input_bytes)
	explain     bool  // --explain: say what each line was taken for, deliver nothing
}

// maxParseConcurrency bounds --concurrency of parse (files at once).
const maxParseConcurrency = 256

func newParseCmd() *cobra.Command {
	var f parseFlags
	cmd := &cobra.Command{
		Use:   "parse [flags] PATH...",
		Short: "Parse saved listing pages (HTML or text captures) into JSON lines",
		Long: `parse reads saved listing pages - HTML files, plain-text captures, or
directories of them - and prints one JSON record per paper on stdout, in
page order: each paper once (by id and by DOI), where it first appears, as
a crawl delivers the same pages (the engine's delivery step, with a ledger
in memory). Directories are walked in lexical order for .htm, .html and
.txt files; other files are skipped. A file named on the command line is
parsed whatever its extension.

An input larger than parse.max_input_bytes (64 MiB by default,
--max-input-bytes) fails with an error; a pipe or FIFO is read the same
way, and the first SIGINT/SIGTERM stops a read that waits.

A page that yields no record is reported on stderr, and so is every field
that does not look like what it is (a title that reads as an author list,
an abstract that is a title line, page furniture in a field: the layout
was probably misread). With --strict the exit code is 4 when any such
field was found, else 3 when any input yielded no record, any record
carries warnings, or the paths held no page file at all.`,
		Example: `  crawl parse fixtures/
  crawl parse --summary saved/literature_d501422_7.htm
  crawl parse --format text --charset gbk capture.txt
  crawl parse fixtures/ --sink jsonl:out/papers-{date}.jsonl
  crawl parse --explain saved/literature_d501422_7.htm`,
		Args: argsAtLeast(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			env, p, err := f.options(cmd, args)
			if err != nil {
				return err
			}
			if f.explain {
				if f.sinks.given(cmd) {
					return exitcode.UsageError(fmt.Errorf("--explain prints what each line was taken for and delivers nothing: drop --sink, -o and --append"))
				}
				return runExplain(cmd.Context(), cmd.OutOrStdout(), env, p, f.strict)
			}
			// (standard output unless --sink or -o: the file's sinks are
			// where a crawl delivers, and parse delivers no crawl)
			if p.Sinks, err = f.sinks.resolve(cmd, nil); err != nil {
				return err
			}
			return runParse(cmd, env, p, f)
		},
	}
	fl := cmd.Flags()
	f.sinks.register(fl, true, "default: standard output (the config's sinks are a crawl's, not parse's)")
	fl.BoolVar(&f.summary, "summary", false, "print per-file record counts and warnings on stderr")
	fl.BoolVar(&f.strict, "strict", false, "exit 4 when a field does not look like what it is; else 3 when any input yields no record, any record has warnings, or the paths hold no page file")
	fl.StringVar(&f.format, "format", "auto", "input format: auto (sniff), html or text")
	fl.StringVar(&f.charset, "charset", "", "force the input charset (e.g. gbk), overriding <meta> declarations")
	typedVar(fl, newIntIn(&f.concurrency, min(runtime.GOMAXPROCS(0), maxParseConcurrency), 1, maxParseConcurrency, "files at once"), "concurrency", "files parsed at once (output order is kept)")
	fl.StringVar(&f.url, "url", "", "the URL the page was fetched from (only with a single file): sets source.url (without user information), journal and page")
	fl.BoolVar(&f.explain, "explain", false, "for one page FILE: print each visible line, what it was taken for (paper and field, furniture, or why nothing) and the findings, and deliver nothing; with --strict, exit 4 on a finding")
	fl.Int64Var(&f.maxInput, "max-input-bytes", 0, "largest input read, in bytes (default: parse.max_input_bytes, 64 MiB)")
	return cmd
}

// parseStats is what runParse saw, for the exit code.
type parseStats struct {
	files, empty, warned, records, failed int
	implausible                           int            // findings (parser.Page.Findings)
	firstFinding                          parser.Finding // the first of them, for the message
}

// options are the flags as the application's Parse, each checked.
func (f *parseFlags) options(cmd *cobra.Command, paths []string) (*app.Env, app.Parse, error) {
	env, err := newEnv(cmd)
	if err != nil {
		return nil, app.Parse{}, err
	}
	cfg := env.Config
	if cmd.Flags().Changed("max-input-bytes") {
		cfg.Parse.MaxInputBytes = f.maxInput
		if err := cfg.Prepare(); err != nil {
			return nil, app.Parse{}, exitcode.UsageError(fmt.Errorf("--max-input-bytes: %w", err))
		}
	}
	p := app.Parse{Paths: paths, URL: f.url, Charset: f.charset, MaxInput: cfg.Parse.MaxInputBytes, Concurrency: f.concurrency}
	if p.Format, err = parser.ParseFormat(f.format); err != nil {
		return nil, p, exitcode.UsageError(fmt.Errorf("--format: %w", err))
	}
	if f.url != "" && len(paths) != 1 {
		return nil, p, exitcode.UsageError(fmt.Errorf("--url names the URL of one page, but %d paths were given", len(paths)))
	}
	if f.url != "" {
		u, err := url.Parse(f.url)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, p, exitcode.Usagef("--url %q: expected the http(s) URL the page was fetched from", redact.URL(f.url))
		}
		u.User = nil // a record never carries credentials
		p.URL = u.String()
	}
	if f.charset != "" {
		if err := parser.CheckCharset(f.charset); err != nil {
			return nil, p, exitcode.UsageError(fmt.Errorf("--charset: %w", err))
		}
	}
	return env, p, nil
}

// runParse parses and delivers, notes each file on stderr, and says how it
// went (--strict: exit 3 or 4).
func runParse(cmd *cobra.Command, env *app.Env, p app.Parse, f parseFlags) error {
	stderr := cmd.ErrOrStderr()
	ctx, cancel := stopOnSignal(cmd.Context(), 0) // a signal stops parsing at once
	defer cancel()
	var st parseStats
	err := env.Parse(ctx, p, func(path string, page *parser.Page, err error) {
		st.files++
		if err != nil {
			st.failed++
			sayf(stderr, slog.LevelError, "crawl parse: %v", err)
			return
		}
		report(stderr, path, page, f.summary, &st)
	})
	switch {
	case err != nil:
		return err
	case st.failed > 0:
		return fmt.Errorf("%d of %d files could not be read", st.failed, st.files)
	case st.files == 0 && f.strict:
		return exitcode.IncompleteError(fmt.Errorf("strict: no page file (.htm, .html, .txt) in %s", strings.Join(p.Paths, ", ")))
	case st.files == 0:
		sayf(stderr, slog.LevelWarn, "crawl parse: no page file (.htm, .html, .txt) in %s", strings.Join(p.Paths, ", "))
	case f.strict && st.implausible > 0:
		ff := st.firstFinding
		return exitcode.QualityError(fmt.Errorf("strict: %d fields do not look like what they are (the layout was misread?); the first: %s, paper %d: %s %q %s",
			st.implausible, ff.Capture, ff.Position, ff.Field, ff.Value, ff.Why))
	case f.strict && (st.empty > 0 || st.warned > 0):
		return exitcode.IncompleteError(fmt.Errorf("strict: %d of %d files yielded no record, %d records have warnings", st.empty, st.files, st.warned))
	}
	return nil
}

// runExplain prints what each visible line of one page was taken for.
func runExplain(ctx context.Context, stdout io.Writer, env *app.Env, o app.Parse, strict bool) error {
	paths := o.Paths
	if len(paths) != 1 {
		return exitcode.UsageError(fmt.Errorf("--explain reads one page file, but %d paths were given", len(paths)))
	}
	if info, err := os.Stat(paths[0]); err != nil {
		return fmt.Errorf("parse: %w", err)
	} else if info.IsDir() {
		return exitcode.UsageError(fmt.Errorf("--explain reads one page file; %s is a directory", paths[0]))
	}
	data, opts, err := env.ReadPage(ctx, o, paths[0])
	if err != nil {
		return err
	}
	ex, err := parser.Explain(data, opts)
	if err != nil {
		return fmt.Errorf("%s: %w", paths[0], err)
	}
	p := ex.Page
	// The page's text reaches a terminal: every line of it is made safe
	// (no control character, C1 ones included, and no mark that reorders
	// what follows), as every message is.
	fmt.Fprintf(stdout, "%s: %d papers, %d blocks, %d dropped%s%s%s (LINE: the page's visible lines, counted from 1)\n", textsafe.Line(paths[0]), len(p.Records), p.BlocksFound, p.BlocksDropped,
		map[bool]string{true: "; listing heading seen"}[p.HeadingSeen], map[bool]string{true: "; footer seen"}[p.FooterSeen], textsafe.Line(formatList(" page warnings: ", p.Warnings)))
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LINE\tPAPER\tKIND\tTAKEN FOR\tTEXT")
	for _, l := range ex.Lines {
		paper := "-"
		if l.Paper > 0 {
			paper = strconv.Itoa(l.Paper)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", l.Line, paper, textsafe.Line(l.Kind), textsafe.Line(l.Taken), textsafe.Line(shorten(l.Text, 70)))
	}
	tw.Flush()
	for _, fd := range ex.Findings {
		where := fmt.Sprintf("paper %d", fd.Position)
		if fd.Position == 0 {
			where = "page"
		}
		fmt.Fprintf(stdout, "finding: %s: %s %s %s\n", where, textsafe.Line(fd.Field), textsafe.Line(strconv.Quote(fd.Value)), textsafe.Line(fd.Why))
	}
	if len(ex.Findings) == 0 {
		fmt.Fprintln(stdout, "no findings: every field looks like what it is")
	} else if strict {
		return exitcode.QualityError(fmt.Errorf("strict: %d findings on %s", len(ex.Findings), paths[0]))
	}
	return nil
}

// shorten cuts s to n runes with an ellipsis.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// report prints the per-file notes on stderr and counts for --strict.
func report(w io.Writer, path string, page *parser.Page, summary bool, st *parseStats) {
	counts := map[string]int{}
	warned := 0
	for _, r := range page.Records {
		if len(r.Warnings) > 0 {
			warned++
		}
		for _, c := range r.Warnings {
			counts[c]++
		}
	}
	st.records += len(page.Records)
	st.warned += warned
	for _, fd := range page.Findings(time.Now()) {
		if st.implausible == 0 {
			st.firstFinding = fd
		}
		st.implausible++
		where := fmt.Sprintf("paper %d", fd.Position)
		if fd.Position == 0 {
			where = "the page"
		}
		say(w, slog.LevelWarn, fmt.Sprintf("crawl parse: %s: %s: %s %q %s", path, where, fd.Field, fd.Value, fd.Why),
			"file", path, "position", fd.Position, "field", fd.Field, "value", fd.Value, "why", fd.Why)
	}
	if len(page.Records) == 0 {
		st.empty++
		say(w, slog.LevelWarn, fmt.Sprintf("crawl parse: %s: no records (%s)", path, describePage(page)), "file", path, "records", 0)
		return
	}
	if !summary {
		return
	}
	say(w, slog.LevelInfo, fmt.Sprintf("%s: %d records, %d blocks dropped%s%s", path, len(page.Records), page.BlocksDropped,
		formatCounts(" record warnings: ", counts), formatList(" page warnings: ", page.Warnings)),
		"file", path, "records", len(page.Records), "blocks_dropped", page.BlocksDropped, "record_warnings", counts, "page_warnings", page.Warnings)
}

func describePage(p *parser.Page) string {
	var parts []string
	if p.HeadingSeen {
		parts = append(parts, "listing heading seen")
	}
	if p.FooterSeen {
		parts = append(parts, "footer seen")
	}
	if !p.IsListing() {
		parts = append(parts, "not a listing page")
	}
	parts = append(parts, fmt.Sprintf("%d blocks, %d dropped", p.BlocksFound, p.BlocksDropped))
	return strings.Join(parts, ", ")
}

func formatCounts(prefix string, m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		keys[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return ";" + prefix + strings.Join(keys, " ")
}

func formatList(prefix string, l []string) string {
	if len(l) == 0 {
		return ""
	}
	return ";" + prefix + strings.Join(l, " ")
}
