package main

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/testsite"
)

func fixtureSite(t *testing.T) (*testsite.Site, *httptest.Server) {
	t.Helper()
	site := testsite.New()
	for page, rel := range map[int]string{1: "html/li-classes/literature_d501422.htm", 2: "html/flat-p/literature_d501422_2.htm",
		3: "html/script-json/literature_d501422_4.htm", 4: "html/table-br/literature_d501422_5.htm"} {
		b, err := os.ReadFile(filepath.Join(repoRoot, "fixtures", rel))
		if err != nil {
			t.Fatal(err)
		}
		site.SetPage(501422, page, b, "")
	}
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)
	return site, srv
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, _ := os.ReadFile(path)
	return strings.Count(string(b), "\n")
}

func TestBackfillCommand(t *testing.T) {
	t.Parallel()
	_, srv := fixtureSite(t)
	dir := t.TempDir()
	out, rep := filepath.Join(dir, "papers.jsonl"), filepath.Join(dir, "report.json")
	args := []string{"backfill", "--journal", "501422", "--pages", "1-", "--base-url", srv.URL, "--delay", "0",
		"--state-dir", filepath.Join(dir, "state"), "--sink", "jsonl:" + out, "--report", rep}
	code, stdout, errs := crawl(t, args...)
	if code != exitcode.OK || stdout != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// 20 papers, and 5 of them again as their revision 2: page 4's
	// capture, of a later day than page 2's, shows their impact factor.
	if n := countLines(t, out); n != 25 {
		t.Errorf("%d records delivered, want 25", n)
	}
	if !strings.Contains(errs, "pages: 4 ok, 0 failed") || !strings.Contains(errs, "papers: 20 new, 5 updated, 13 known") {
		t.Errorf("summary: %s", errs)
	}
	var r struct {
		Pages  map[string]int `json:"pages"`
		Papers map[string]int `json:"papers"`
	}
	if b, err := os.ReadFile(rep); err != nil || json.Unmarshal(b, &r) != nil || r.Pages["done"] != 4 || r.Papers["new"] != 20 {
		t.Errorf("report: %+v (%v)", r, err)
	}
	// Rerun: every page was done before.
	code, _, errs = crawl(t, args...)
	if code != exitcode.OK || !strings.Contains(errs, "4 skipped") || countLines(t, out) != 25 ||
		!strings.Contains(errs, "skipped: 4 pages done by earlier runs were not fetched again; --no-resume re-reads them") {
		t.Errorf("resume: exit %d: %s", code, errs)
	}
}

func TestBackfillFailedPagesExit3(t *testing.T) {
	t.Parallel()
	site, srv := fixtureSite(t)
	site.Inject(testsite.PagePath(501422, 2), testsite.Fault{Kind: testsite.Status, Status: 403})
	dir, repDir := t.TempDir(), t.TempDir()
	rep := filepath.Join(repDir, "run.json")
	code, _, errs := crawl(t, "backfill", "--journal", "501422", "--pages", "1-3", "--base-url", srv.URL, "--delay", "0",
		"--state-dir", filepath.Join(dir, "state"), "--sink", "jsonl:"+filepath.Join(dir, "p.jsonl"), "--report", rep)
	if code != exitcode.Incomplete || !strings.Contains(errs, "failed: journal 501422 page 2") || !strings.Contains(errs, "HTTP 403") {
		t.Errorf("exit %d: %s", code, errs)
	}
	// The report's page log has a line for every page, the failed one with
	// its error, and the spool it was written through is gone.
	var r struct {
		PageLog []struct {
			Page    int
			Result  string
			Records int
			Error   string
		} `json:"page_log"`
	}
	if b, err := os.ReadFile(rep); err != nil || json.Unmarshal(b, &r) != nil {
		t.Fatalf("report: %v\n%s", err, b)
	}
	results := map[int]string{}
	for _, p := range r.PageLog {
		results[p.Page] = p.Result
		if (p.Result == "failed") != strings.Contains(p.Error, "HTTP 403") || (p.Result == "done") != (p.Records > 0) {
			t.Errorf("page log line %+v", p)
		}
	}
	if len(r.PageLog) != 3 || results[1] != "done" || results[2] != "failed" || results[3] != "done" {
		t.Errorf("page log: %+v", r.PageLog)
	}
	if ents, _ := os.ReadDir(repDir); len(ents) != 1 {
		t.Errorf("report dir holds %d files, want only the report: %v", len(ents), ents)
	}
	// A report that cannot be written is a usage error, before the run
	// opens its state or fetches.
	code, _, errs = crawl(t, "backfill", "--journal", "501422", "--pages", "1-3", "--base-url", srv.URL, "--delay", "0",
		"--state-dir", filepath.Join(dir, "state"), "--sink", "jsonl:"+filepath.Join(dir, "p.jsonl"), "--report", filepath.Join(dir, "p.jsonl", "r.json"))
	if code != exitcode.Usage || !strings.Contains(errs, "--report "+filepath.Join(dir, "p.jsonl", "r.json")) {
		t.Errorf("unwritable report: exit %d: %s", code, errs)
	}
	// So does a report that names a directory.
	hits := site.Hits(testsite.PagePath(501422, 1))
	code, _, errs = crawl(t, "backfill", "--journal", "501422", "--pages", "1-3", "--no-resume", "--base-url", srv.URL, "--delay", "0",
		"--state-dir", filepath.Join(dir, "state"), "--sink", "jsonl:"+filepath.Join(dir, "p.jsonl"), "--report", repDir)
	if code != exitcode.Usage || !strings.Contains(errs, "is a directory") || site.Hits(testsite.PagePath(501422, 1)) != hits {
		t.Errorf("report naming a directory: exit %d: %s", code, errs)
	}
}

func TestBackfillUsage(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"backfill", "--journal", "1"}, "--pages is required"},
		{[]string{"backfill", "--journal", "1", "--pages", "5-3"}, `--pages "5-3"`},
		{[]string{"backfill", "--journal", "1", "--pages", "x"}, `--pages "x"`},
		{[]string{"backfill", "--journal", "1", "--pages", "25-0"}, `--pages "25-0"`},
		{[]string{"backfill", "--journal", "1", "--pages", "1", "--offline", ""}, `--offline "": expected a value`},
		{[]string{"backfill", "--journal", "1", "--pages", "1", "--state-dir", ""}, `--state-dir "": expected a value`},
		{[]string{"backfill", "--journal", "1", "--pages", "+2-+3"}, `--pages "+2-+3"`},
		{[]string{"backfill", "--journal", "1", "--pages", "1", "--base-url", "ftp://h"}, "--base-url"},
		{[]string{"backfill", "--journal", "1", "--pages", "1", "--log-format", "xml"}, "--log-format"},
		{[]string{"backfill", "--journal", "-4", "--pages", "1"}, "--journal -4"},
		{[]string{"backfill", "extra", "--pages", "1"}, "takes no arguments"},
		{[]string{"backfill", "--journal", "1", "--pages", "1", "--concurrency", "100000"}, "--concurrency 100000: expected 1 to 64"},
		{[]string{"backfill", "--journal", "1", "--pages", "1", "--base-url", "http://u:pw@127.0.0.1:99999"}, `"http://u:REDACTED@127.0.0.1:99999": expected a port`},
		{[]string{"backfill", "--journal", "1", "--pages", "1", "--delay", "100h"}, "fetch.delay: 100h0m0s: expected a duration from 0 to 1h"},
		{[]string{"backfill", "--journal", "1", "--pages", "9223372036854775807"}, "<= 100000000"},
		{[]string{"backfill", "--journal", "1", "--pages", "1-2000000"}, "at most backfill.max_pages (100000)"},
		{[]string{"backfill", "--journal", "1", "--pages", "1", "--sink", "foo:bar"}, "--sink foo:bar: expected atom:DIR"},
		{[]string{"backfill", "--journal", "1", "--pages", "1", "--sink", "nats://u:hunter2@h:1/s"}, "--sink nats://u:REDACTED@h:1/s: "},
		{[]string{"backfill", "--journal", "1", "--pages", "1", "--metrics-addr", "nonsense"}, "--metrics-addr nonsense: expected HOST:PORT"},
	} {
		code, _, errs := crawl(t, tt.args...)
		if code != exitcode.Usage || !strings.Contains(errs, tt.want) {
			t.Errorf("%v: exit %d, stderr %q", tt.args, code, errs)
		}
	}
}

func TestNightlyCommand(t *testing.T) {
	t.Parallel()
	site := testsite.New()
	site.SynthJournal(77, 5, 20)
	srv := httptest.NewServer(site)
	defer srv.Close()
	dir := t.TempDir()
	out := filepath.Join(dir, "papers.jsonl")
	args := []string{"nightly", "--journal", "77", "--base-url", srv.URL, "--delay", "0",
		"--state-dir", filepath.Join(dir, "state"), "--sink", "jsonl:" + out}
	code, _, errs := crawl(t, args...)
	if code != exitcode.OK || countLines(t, out) != 100 {
		t.Fatalf("first night: exit %d, %d papers: %s", code, countLines(t, out), errs)
	}
	// A nightly on a state that holds nothing says it is a first crawl,
	// and how history is fetched, in the log and in the run's notes.
	if n := strings.Count(errs, "first crawl: the state holds no papers yet"); n != 2 || !strings.Contains(errs, "crawl backfill --pages 1-") {
		t.Errorf("a first nightly said %d times that it is a first crawl: %s", n, errs)
	}
	if code, outs, _ := crawl(t, "runs", "--state-dir", filepath.Join(dir, "state")); code != 0 || !strings.Contains(outs, "1 walk note") {
		t.Errorf("crawl runs does not note the first crawl: %s", outs)
	}
	// Nothing new: page 1 shows the listing's first papers as last
	// night, and the walk stops there; the audit re-reads one page more.
	code, _, errs = crawl(t, args...)
	if code != exitcode.OK || !strings.Contains(errs, "pages: 2 ok") || !strings.Contains(errs, "papers: 0 new, 0 updated, 40 known") ||
		!strings.Contains(errs, "audit: 1 page re-read") || strings.Contains(errs, "first crawl") {
		t.Errorf("second night: exit %d: %s", code, errs)
	}
}

// A nightly that reaches nightly.max_pages says so in its log and summary,
// and the run history and the report show it; the next nightly carries on
// to the last page.
func TestNightlyMaxPagesSaysSo(t *testing.T) {
	t.Parallel()
	site := testsite.New()
	site.SynthJournal(78, 5, 20)
	srv := httptest.NewServer(site)
	defer srv.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("nightly:\n  max_pages: 4\n  audit_pages: 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stateDir, out := filepath.Join(dir, "state"), filepath.Join(dir, "papers.jsonl")
	args := []string{"nightly", "--config", cfg, "--journal", "78", "--base-url", srv.URL, "--delay", "0", "--state-dir", stateDir, "-o", out}
	code, _, errs := crawl(t, args...)
	if code != exitcode.OK || countLines(t, out) != 80 {
		t.Fatalf("first night: exit %d, %d papers: %s", code, countLines(t, out), errs)
	}
	// Exit 0, as the help says.
	if _, help, _ := crawl(t, "nightly", "--help"); !strings.Contains(strings.Join(strings.Fields(help), " "), "0 every walk finished, or was cut short at nightly.max_pages") {
		t.Errorf("nightly --help does not say a walk cut short exits 0:\n%s", help)
	}
	for _, want := range []string{"nightly walk stopped short, with gaps not closed", "why=nightly.max_pages", "incomplete: journal 78: the walk stopped at page 4 (nightly.max_pages) with gaps not closed; the next nightly carries on from page 4"} {
		if !strings.Contains(errs, want) {
			t.Errorf("the first night does not say %q: %s", want, errs)
		}
	}
	if _, stdout, _ := crawl(t, "runs", "show", "latest", "--state-dir", stateDir); !strings.Contains(stdout, "journal 78: the walk stopped at page 4") {
		t.Errorf("runs show: %s", stdout)
	}
	rep := filepath.Join(dir, "report.html")
	if code, _, errs := crawl(t, "report", "--state-dir", stateDir, "-o", rep); code != exitcode.OK {
		t.Fatalf("report: exit %d: %s", code, errs)
	}
	if b, _ := os.ReadFile(rep); !strings.Contains(string(b), "<td class=\"n\">78</td><td class=\"n\">4</td>") {
		t.Error("the report does not list the incomplete walk")
	}
	// Night 2, nothing new: page 1 is all known, but the walk jumps to
	// page 3 (a page before the mark's), finds the mark on page 4 and goes
	// on to the last page: the walk is complete.
	code, _, errs = crawl(t, args...)
	if code != exitcode.OK || countLines(t, out) != 100 || strings.Contains(errs, "incomplete:") {
		t.Errorf("second night: exit %d, %d papers: %s", code, countLines(t, out), errs)
	}
}

// Layout drift: the pages are still listing pages, but their blocks lost
// their meta lines and JSON. The run delivers what it parsed and exits 4,
// naming the field that dropped.
func TestQualityAlarm(t *testing.T) {
	t.Parallel()
	code, errs, rep := backfillOnePage(t, 55, driftedPage())
	if code != exitcode.Quality || !strings.Contains(errs, "have a DOI (quality.min_doi_share 0.50)") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r struct {
		Quality struct {
			Records   int `json:"records"`
			WithTitle int `json:"with_title"`
			WithDOI   int `json:"with_doi"`
		}
		PageLog []struct {
			Page    int
			Result  string
			Records int
			Tries   int
		} `json:"page_log"`
	}
	data, _ := os.ReadFile(rep)
	if err := json.Unmarshal(data, &r); err != nil || r.Quality.Records != 20 || r.Quality.WithDOI != 0 ||
		len(r.PageLog) != 1 || r.PageLog[0].Result != "done" || r.PageLog[0].Records != 20 || r.PageLog[0].Tries != 1 {
		t.Errorf("report: %+v (%v)", r, err)
	}
}

// Layout drift that keeps every field present: the names line moved
// above the title, so a reading by place takes the abstract for the
// names and the next paper's names for the abstract. Presence shares stay
// at 100%; the plausibility gate exits 4 naming the field and a value.
func TestPlausibilityAlarm(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("<html><body><h1>Drifted Journal最新文献</h1>")
	for i := range 20 {
		fmt.Fprintf(&b, "<div>Ann Lee%d, Bo Chen</div><div>Drifted Paper Number %d on Crawling</div><div>Drifted Journal Pub Date : 2024-09-02 DOI: 10.5555/drift.%d</div>"+
			"<div>We study drifted layouts in paper %d. Our results hold on every page we tried, and the method is simple.</div>", i, i, i, i)
	}
	b.WriteString("<p>京ICP备2023020795号-1</p></body></html>")
	code, errs, rep := backfillOnePage(t, 56, b.String())
	if code != exitcode.Quality || !strings.Contains(errs, "have a field that does not look like one (quality.max_implausible_share 0.00)") ||
		!strings.Contains(errs, `authors in 20: "We study drifted layouts in paper 0.`) {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r struct {
		Quality struct {
			Records     int            `json:"records"`
			WithAuthor  int            `json:"with_authors"`
			Implausible int            `json:"implausible"`
			Fields      map[string]int `json:"implausible_fields"`
		}
	}
	data, _ := os.ReadFile(rep)
	if err := json.Unmarshal(data, &r); err != nil || r.Quality.Records != 20 || r.Quality.WithAuthor != 20 || r.Quality.Implausible != 20 || r.Quality.Fields["authors"] != 20 {
		t.Errorf("report: %+v (%v)", r, err)
	}
}

// backfillOnePage backfills page 1 of journal, served with body, into a
// fresh state and JSONL file, and returns the exit code, stderr and the
// path of the run report.
// driftedPage is a listing page whose 20 blocks lost their meta lines and
// JSON: titles alone, no DOI.
func driftedPage() string {
	var b strings.Builder
	b.WriteString("<html><body><h1>Drifted Journal最新文献</h1>")
	for i := range 20 {
		fmt.Fprintf(&b, "<div>Drifted Paper Number %d on Crawling 漂移论文</div><div>引用次数: %d</div>", i, i)
	}
	b.WriteString("<p>京ICP备2023020795号-1</p></body></html>")
	return b.String()
}

func backfillOnePage(t *testing.T, journal int64, body string) (code int, stderr, report string) {
	t.Helper()
	site := testsite.New()
	site.SetPage(journal, 1, []byte(body), "")
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	report = filepath.Join(dir, "r.json")
	code, _, stderr = crawl(t, "backfill", "--journal", fmt.Sprint(journal), "--pages", "1", "--base-url", srv.URL, "--delay", "0",
		"--state-dir", filepath.Join(dir, "s"), "--sink", "jsonl:"+filepath.Join(dir, "p.jsonl"), "--report", report)
	return code, stderr, report
}

// A journal given twice (--journal 77 --journal 77, or 77,77) is crawled
// once: each page fetched once, each paper delivered once.
func TestBackfillJournalGivenTwice(t *testing.T) {
	t.Parallel()
	site, srv := synthSite(t, map[int64]int{77: 2})
	dir := t.TempDir()
	out := filepath.Join(dir, "papers.jsonl")
	code, _, errs := crawl(t, "backfill", "--journal", "77", "--journal", "77,77", "--pages", "1-2", "--base-url", srv.URL, "--delay", "0",
		"--state-dir", filepath.Join(dir, "state"), "--sink", "jsonl:"+out)
	if code != exitcode.OK || countLines(t, out) != 40 || site.Hits(testsite.PagePath(77, 1)) != 1 {
		t.Fatalf("exit %d, %d papers, page 1 fetched %d times: %s", code, countLines(t, out), site.Hits(testsite.PagePath(77, 1)), errs)
	}
}

// A run that fails before it fetches (a sink that cannot be opened) still
// writes its --report: a monitor reading the file sees the failure, not
// the previous run's success.
func TestReportOfARunThatFailsAtStart(t *testing.T) {
	t.Parallel()
	_, srv := synthSite(t, map[int64]int{77: 1})
	dir := t.TempDir()
	rep := filepath.Join(dir, "last-run.json")
	args := []string{"backfill", "--journal", "77", "--pages", "1", "--base-url", srv.URL, "--delay", "0",
		"--state-dir", filepath.Join(dir, "state"), "--report", rep}
	if code, _, errs := crawl(t, append(args, "-o", filepath.Join(dir, "ok.jsonl"))...); code != exitcode.OK {
		t.Fatalf("first run: exit %d: %s", code, errs)
	}
	blocker := filepath.Join(dir, "file")
	os.WriteFile(blocker, nil, 0o600)
	code, _, errs := crawl(t, append(args, "-o", filepath.Join(blocker, "x.jsonl"))...) // a directory that is a file
	if code != exitcode.Fatal {
		t.Fatalf("second run: exit %d, want %d: %s", code, exitcode.Fatal, errs)
	}
	var got struct {
		ExitCode *int   `json:"exit_code"`
		Error    string `json:"error"`
	}
	data, err := os.ReadFile(rep)
	if err != nil || json.Unmarshal(data, &got) != nil {
		t.Fatalf("report: %v: %s", err, data)
	}
	if got.ExitCode == nil || *got.ExitCode != exitcode.Fatal || got.Error == "" {
		t.Errorf("report after the failed run: exit_code %v, error %q; want %d and the error", got.ExitCode, got.Error, exitcode.Fatal)
	}
}

// A crawl whose records go to standard output while that is no terminal
// (here: the test's buffer, as a log or a pipe would be) says so once on
// stderr; one with a file sink says nothing of it.
func TestRecordsToStdoutThatIsNoTerminalSaySo(t *testing.T) {
	t.Parallel()
	_, srv := fixtureSite(t)
	dir := t.TempDir()
	const notice = "the records go to standard output, which is not a terminal here"
	code, out, errs := crawl(t, "backfill", "--journal", "501422", "--pages", "1-2", "--base-url", srv.URL, "--delay", "0", "--state-dir", filepath.Join(dir, "a"))
	if code != exitcode.OK || !strings.Contains(out, `"id"`) || strings.Count(errs, notice) != 1 || !strings.Contains(errs, "--sink jsonl:FILE") {
		t.Errorf("to standard output: exit %d, stderr:\n%s", code, errs)
	}
	code, _, errs = crawl(t, "backfill", "--journal", "501422", "--pages", "1-2", "--base-url", srv.URL, "--delay", "0", "--state-dir", filepath.Join(dir, "b"),
		"--sink", "jsonl:"+filepath.Join(dir, "p.jsonl"))
	if code != exitcode.OK || strings.Contains(errs, notice) {
		t.Errorf("to a file: exit %d, stderr:\n%s", code, errs)
	}
}
