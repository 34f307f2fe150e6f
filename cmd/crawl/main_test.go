package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/internal/exitcode"
)

// repoRoot is the repository root, resolved before any test changes
// directory.
var repoRoot = func() string {
	wd, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	return filepath.Join(wd, "..", "..")
}()

// crawl runs the CLI in-process from the repository root.
func crawl(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return crawlIn(t, newSession(nil), args...)
}

// crawlIn runs the command line in the session sess (its metrics).
func crawlIn(t *testing.T, sess *session, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.WithValue(context.Background(), sessionKey{}, sess), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// golden is a golden file's records as a run delivers them: the parser's
// records, each numbered revision 1.
func golden(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("fixtures", "golden", rel+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return firstRevision.ReplaceAllString(string(b), `$1"revision":1,`)
}

// firstRevision finds where a delivered record's revision goes: after its
// id, the first string field of a line.
var firstRevision = regexp.MustCompile(`(?m)^(\{"schema_version":\d+,"id":"(?:[^"\\]|\\.)*",)`)

func TestParseSeedsMatchesGoldensInOrder(t *testing.T) {
	t.Chdir(repoRoot) // paths relative to the repository, as the goldens hold them
	code, out, errs := crawl(t, "parse", "--concurrency", "2", "fixtures/seeds")
	if code != exitcode.OK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want := golden(t, "seeds/000_92928c0d02c94ff5.txt") + golden(t, "seeds/001_04a786490eff8f10.txt")
	if out != want {
		t.Errorf("stdout is not the two seed goldens in input order")
	}
	if strings.Contains(out, `\u003c`) || strings.Contains(out, `\u0026`) {
		t.Error("output must not HTML-escape (& and < stay as they are)")
	}
}

func TestParseWalksOnlyPageFiles(t *testing.T) {
	t.Chdir(repoRoot) // paths relative to the repository, as the goldens hold them
	code, out, errs := crawl(t, "parse", "fixtures")
	if code != exitcode.OK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	seen := map[string]bool{}
	for _, l := range lines {
		var r struct {
			Source struct{ Capture string } `json:"source"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("invalid JSON line %q: %v", l, err)
		}
		seen[r.Source.Capture] = true
	}
	for c := range seen {
		if strings.Contains(c, "/golden/") || !(strings.HasSuffix(c, ".htm") || strings.HasSuffix(c, ".txt")) {
			t.Errorf("parsed a file that is not a page: %s", c)
		}
	}
	if len(lines) < 60 {
		t.Errorf("only %d records from the fixtures", len(lines))
	}
	for _, empty := range []string{"fixtures/edge/captcha.htm", "fixtures/edge/noise-only.htm"} {
		if !strings.Contains(errs, empty+": no records") {
			t.Errorf("stderr does not report %s as yielding no record:\n%s", empty, errs)
		}
	}
	if !strings.Contains(errs, "not a listing page") {
		t.Errorf("the captcha page must be reported as not a listing page:\n%s", errs)
	}
}

func TestParseExitCodes(t *testing.T) {
	t.Chdir(repoRoot) // paths relative to the repository, as the goldens hold them
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no path", []string{"parse"}, exitcode.Usage, "expected at least 1 argument"},
		{"unknown flag", []string{"parse", "--nope", "fixtures"}, exitcode.Usage, "unknown flag: --nope"},
		{"mistyped flag", []string{"parse", "--sumary", "fixtures"}, exitcode.Usage, "unknown flag: --sumary; did you mean --summary?"},
		{"mistyped global flag", []string{"parse", "--log-fromat", "json", "fixtures"}, exitcode.Usage, "did you mean --log-format?"},
		{"bad format", []string{"parse", "--format", "pdf", "fixtures"}, exitcode.Usage, `format "pdf": expected auto, html or text`},
		{"bad charset", []string{"parse", "--charset", "klingon", "fixtures"}, exitcode.Usage, `unknown charset "klingon"`},
		{"bad concurrency", []string{"parse", "--concurrency", "0", "fixtures"}, exitcode.Usage, "--concurrency 0"},
		{"url not http", []string{"parse", "--url", "ftp://h/literature_d1.htm", "fixtures/seeds/000_92928c0d02c94ff5.txt"}, exitcode.Usage, "expected the http(s) URL"},
		{"url with many files", []string{"parse", "--url", "https://m.booksci.cn/literature_d1.htm", "fixtures/seeds", "fixtures/edge"}, exitcode.Usage, "--url"},
		{"missing path", []string{"parse", "fixtures/seeds", "no/such/page.htm"}, exitcode.Fatal, "no/such/page.htm"},
		{"strict with empty pages", []string{"parse", "--strict", "fixtures/edge/captcha.htm"}, exitcode.Incomplete, "strict: 1 of 1 files yielded no record"},
		{"strict with warnings", []string{"parse", "--strict", "fixtures/seeds/000_92928c0d02c94ff5.txt"}, exitcode.Incomplete, "2 records have warnings"},
		{"strict and clean", []string{"parse", "--strict", "fixtures/seeds/001_04a786490eff8f10.txt"}, exitcode.OK, ""},
		{"strict and misread", []string{"parse", "--strict", "cmd/crawl/testdata/misread.txt"}, exitcode.Quality, `paper 1: authors "Straggling workers`},
		{"misread, not strict", []string{"parse", "cmd/crawl/testdata/misread.txt"}, exitcode.OK, `abstract "Ada Novak, Peter Lindqvist, Chen Hao" is shorter than its title`},
		{"explain two files", []string{"parse", "--explain", "fixtures/seeds", "fixtures/edge"}, exitcode.Usage, "--explain reads one page file"},
		{"explain a directory", []string{"parse", "--explain", "fixtures/seeds"}, exitcode.Usage, "is a directory"},
		{"explain with a sink", []string{"parse", "--explain", "-o", "out.jsonl", "fixtures/edge/furniture.txt"}, exitcode.Usage, "delivers nothing: drop --sink, -o and --append"},
		{"explain strict misread", []string{"parse", "--explain", "--strict", "cmd/crawl/testdata/misread.txt"}, exitcode.Quality, "strict: 4 findings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := crawl(t, tt.args...)
			if code != tt.code || !strings.Contains(errs, tt.stderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and stderr containing %q", code, errs, tt.code, tt.stderr)
			}
			if tt.code == exitcode.Fatal && out != "" {
				t.Errorf("a missing path must fail before any output, got %d bytes", len(out))
			}
		})
	}
}

// --explain says what each line was taken for: furniture above and below
// the list, each paper's title, names and date/DOI line.
func TestParseExplain(t *testing.T) {
	t.Chdir(repoRoot) // paths relative to the repository, as the goldens hold them
	code, out, errs := crawl(t, "parse", "--explain", "fixtures/edge/furniture.txt")
	if code != exitcode.OK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"4 papers", "furniture      navigation, filter", "Book学术 搜索 登录", "1      title          title, title_cn",
		"1      text           authors", "1      date/DOI line  date, DOI", "furniture      footer", "no findings"} {
		if !strings.Contains(out, want) {
			t.Errorf("--explain output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, `"schema_version"`) {
		t.Error("--explain delivered records")
	}
}

func TestParseSummaryAndURL(t *testing.T) {
	t.Chdir(repoRoot) // paths relative to the repository, as the goldens hold them
	// User information in --url never reaches a record.
	code, out, errs := crawl(t, "parse", "--summary", "--url", "https://ann:hunter2@m.booksci.cn/literature_d501422_9.htm", "fixtures/seeds/000_92928c0d02c94ff5.txt")
	if code != exitcode.OK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "fixtures/seeds/000_92928c0d02c94ff5.txt: 10 records, 0 blocks dropped; record warnings: no-json=2") {
		t.Errorf("summary line missing:\n%s", errs)
	}
	if !strings.Contains(out, `"source":{"url":"https://m.booksci.cn/literature_d501422_9.htm","page":9,"position":1,"capture":"fixtures/seeds/000_92928c0d02c94ff5.txt"}`) {
		t.Errorf("--url must set source.url and the page number from it:\n%.400s", out)
	}
	if strings.Contains(out, "hunter2") || strings.Contains(out, "ann@") || strings.Contains(out, "ann:") {
		t.Errorf("--url's user information reached the records:\n%.400s", out)
	}
}

func TestHelpOnEveryCommand(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--help"}, {"parse", "--help"}} {
		code, out, _ := crawl(t, args...)
		if code != exitcode.OK || !strings.Contains(out, "Usage:") || !strings.Contains(out, "Flags:") {
			t.Errorf("crawl %v: exit %d, output %.200q", args, code, out)
		}
	}
}

func TestParseToSinks(t *testing.T) {
	t.Chdir(repoRoot) // paths relative to the repository, as the goldens hold them
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "day-{date}.jsonl")
	code, out, errs := crawl(t, "parse", "fixtures/seeds", "--sink", "jsonl:"+a, "--sink", "jsonl:"+b)
	if code != exitcode.OK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if out != "" {
		t.Errorf("with --sink nothing goes to stdout, got %d bytes", len(out))
	}
	want := golden(t, "seeds/000_92928c0d02c94ff5.txt") + golden(t, "seeds/001_04a786490eff8f10.txt")
	got, err := os.ReadFile(a)
	if err != nil || string(got) != want {
		t.Errorf("jsonl sink file differs from the goldens (err %v)", err)
	}
	dated, _ := filepath.Glob(filepath.Join(dir, "day-????-??-??.jsonl"))
	if len(dated) != 1 {
		t.Fatalf("dated files: %v", dated)
	}
	if got, _ := os.ReadFile(dated[0]); string(got) != want {
		t.Errorf("fan-out: the second sink's file differs")
	}
	// Explicit stdout sink.
	code, out, _ = crawl(t, "parse", "fixtures/seeds/001_04a786490eff8f10.txt", "--sink", "-")
	if code != exitcode.OK || out != golden(t, "seeds/001_04a786490eff8f10.txt") {
		t.Errorf("--sink - : exit %d, %d bytes", code, len(out))
	}
}

func TestParseSinkErrors(t *testing.T) {
	t.Chdir(repoRoot) // paths relative to the repository, as the goldens hold them
	code, _, errs := crawl(t, "parse", "fixtures/seeds", "--sink", "ftp://user:pw@host/x")
	if code != exitcode.Usage || !strings.Contains(errs, "jsonl:PATH") || strings.Contains(errs, ":pw@") {
		t.Errorf("bad sink URL: exit %d, stderr %q", code, errs)
	}
	code, _, errs = crawl(t, "parse", "fixtures/seeds", "--sink", "jsonl:/dev/null/x/out.jsonl")
	if code != exitcode.Fatal || !strings.Contains(errs, "/dev/null/x") {
		t.Errorf("unwritable sink path: exit %d, stderr %q", code, errs)
	}
}

func TestParseWritesStandardOutputNotTheConfigsSinks(t *testing.T) {
	t.Chdir(repoRoot) // paths relative to the repository, as the goldens hold them
	dir := t.TempDir()
	out := filepath.Join(dir, "from-config.jsonl")
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte("sinks:\n  - jsonl:"+out+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// parse prints to standard output whatever the configuration's sinks:
	// those are where a crawl delivers.
	code, stdout, errs := crawl(t, "parse", "--config", cfg, "fixtures/seeds/001_04a786490eff8f10.txt")
	if code != exitcode.OK || stdout != golden(t, "seeds/001_04a786490eff8f10.txt") {
		t.Fatalf("exit %d, %d bytes on stdout: %s", code, len(stdout), errs)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("parse wrote to the configuration's sink")
	}
	// --sink delivers.
	if code, _, errs := crawl(t, "parse", "--config", cfg, "--sink", "jsonl:"+out, "fixtures/seeds/001_04a786490eff8f10.txt"); code != exitcode.OK {
		t.Fatalf("--sink: exit %d: %s", code, errs)
	}
	if got, _ := os.ReadFile(out); string(got) != golden(t, "seeds/001_04a786490eff8f10.txt") {
		t.Error("--sink did not get the records")
	}
}

// The shipped config.yaml loads, with every sink it names (the atom
// sink's too), and keeps what a crawl writes under data/.
func TestShippedConfig(t *testing.T) {
	code, out, errs := crawl(t, "--config", filepath.Join(repoRoot, "config.yaml"), "config", "show")
	if code != exitcode.OK || !strings.Contains(out, "jsonl:data/papers.jsonl, atom:data/feeds?base=http://127.0.0.1:8000") {
		t.Errorf("config show of the shipped config: exit %d: %s%s", code, out, errs)
	}
}

func TestParseConfigErrors(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("sinks:\n  - jsonl:ok.jsonl\n  - nats://h:1/s\n"), 0o644)
	code, _, errs := crawl(t, "parse", "--config", bad, "fixtures/seeds")
	if code != exitcode.Fatal || !strings.Contains(errs, "sinks[1]") || !strings.Contains(errs, "stream=NAME") {
		t.Errorf("bad config: exit %d, stderr %q", code, errs)
	}
	code, _, errs = crawl(t, "parse", "--config", "no/such/config.yaml", "fixtures/seeds")
	if code != exitcode.Fatal || !strings.Contains(errs, "no/such/config.yaml") {
		t.Errorf("missing explicit config: exit %d, stderr %q", code, errs)
	}
}

// crawl sink check holds the sinks open together, as a crawl does: a
// destination given twice, and one directory of feeds named with two
// option sets (a crawl refuses both at start), fail the check, each
// line naming the sink.
func TestSinkCheckSaysWhatACrawlWouldRefuse(t *testing.T) {
	dir := t.TempDir()
	feeds, file := filepath.Join(dir, "feeds"), filepath.Join(dir, "a.jsonl")
	code, out, _ := crawl(t, "sink", "check", "--sink", "atom:"+feeds, "--sink", "jsonl:"+file)
	if code != exitcode.OK || strings.Count(out, "ok    ") != 2 {
		t.Fatalf("two sinks: exit %d\n%s", code, out)
	}
	code, out, errs := crawl(t, "sink", "check", "--sink", "atom:"+feeds, "--sink", "atom:"+feeds+"?keep=3",
		"--sink", "jsonl:"+file, "--sink", "jsonl:"+filepath.Join(dir, ".", "a.jsonl"))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitcode.Fatal || len(lines) != 4 || !strings.HasPrefix(lines[0], "ok    atom:") ||
		!strings.Contains(lines[1], "FAIL  atom "+feeds+": another writer") || !strings.HasPrefix(lines[2], "ok    jsonl:") ||
		!strings.Contains(lines[3], "given twice (the same destination as sink 3)") || !strings.Contains(errs, "2 of 4 sinks not ready") {
		t.Fatalf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, exitcode.Fatal, out, errs)
	}
}
