package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/testsite"
)

// journalsOf reads a JSONL file: papers by journal id.
func journalsOf(t *testing.T, path string) map[int64]int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r struct{ Journal struct{ ID int64 } }
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out[r.Journal.ID]++
	}
	return out
}

// A journal with its own settings is crawled by them: its records go to
// its own sinks (the others' to the file's), its walks stop at its own
// max_pages; crawl config show prints them; --sink replaces every sink.
// twoJournals serves journals 11 and 12, of pages of 20 papers each, for
// the test; and gives it a directory.
func twoJournals(t *testing.T, pages int) (*httptest.Server, string) {
	site := testsite.New()
	site.SynthJournal(11, pages, 20)
	site.SynthJournal(12, pages, 20)
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)
	return srv, t.TempDir()
}

func TestPerJournalSettings(t *testing.T) {
	t.Parallel()
	srv, dir := twoJournals(t, 8)
	all, twelve := filepath.Join(dir, "all.jsonl"), filepath.Join(dir, "twelve.jsonl")
	cfg := filepath.Join(dir, "config.yaml")
	err := os.WriteFile(cfg, fmt.Appendf(nil, `fetch: {delay: 0s, jitter: 0s}
sinks: ["jsonl:%s"]
journals:
  - 11
  - id: 12
    name: Journal Twelve
    nightly: {max_pages: 4, audit_pages: 0}
    backfill: {max_pages: 3}
    sinks: ["jsonl:%s"]
    fetch: {delay: 10ms}
`, all, twelve), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	crawlWith := func(args ...string) string {
		t.Helper()
		code, _, errs := crawl(t, append([]string{"--config", cfg, "--base-url", srv.URL}, args...)...)
		if code != exitcode.OK {
			t.Fatalf("crawl %v: exit %d: %s", args, code, errs)
		}
		return errs
	}

	// A backfill: journal 11 to its last page, 12 to its own max_pages.
	berrs := crawlWith("backfill", "--pages", "1-", "--state-dir", filepath.Join(dir, "b"))
	if !strings.Contains(berrs, "incomplete: journal 12: the open-ended backfill stopped at page 3 (backfill.max_pages) before the listing's end; crawl backfill --journal 12 --pages 4- goes on from there") ||
		strings.Contains(berrs, "incomplete: journal 11") {
		t.Errorf("the backfill's summary does not name journal 12's walk cut at backfill.max_pages, and only it:\n%s", berrs)
	}
	if got := journalsOf(t, all); len(got) != 1 || got[11] != 160 {
		t.Errorf("the file's sink holds %v papers by journal, want 160 of journal 11 only", got)
	}
	if got := journalsOf(t, twelve); len(got) != 1 || got[12] != 60 {
		t.Errorf("journal 12's sink holds %v, want its 3 pages (backfill.max_pages 3): 60 papers of journal 12 only", got)
	}

	// A nightly from a fresh state: journal 12's walk is cut at its own
	// nightly.max_pages (4 pages), 11's goes on to the end.
	os.Remove(all)
	os.Remove(twelve)
	errs := crawlWith("nightly", "--state-dir", filepath.Join(dir, "n"))
	if got := journalsOf(t, twelve); got[12] != 80 {
		t.Errorf("nightly: journal 12's sink holds %v, want 80 papers (nightly.max_pages 4)", got)
	}
	if got := journalsOf(t, all); got[11] != 160 || got[12] != 0 {
		t.Errorf("nightly: the file's sink holds %v", got)
	}
	if !strings.Contains(errs, "journal 12: the walk stopped at page 4") {
		t.Errorf("nightly: the cut walk is not reported:\n%s", errs)
	}

	// --sink replaces every sink, a journal's too.
	one := filepath.Join(dir, "one.jsonl")
	crawlWith("backfill", "--pages", "1-2", "--state-dir", filepath.Join(dir, "s"), "--sink", "jsonl:"+one)
	if got := journalsOf(t, one); got[11] != 40 || got[12] != 40 {
		t.Errorf("--sink: %v, want both journals' 40 papers", got)
	}

	// --delay sets every journal's delay: journal 12's own 10ms (5s
	// here) is lifted too.
	slow := filepath.Join(dir, "slow.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(slow, bytes.Replace(b, []byte("delay: 10ms"), []byte("delay: 5s"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if code, _, errs := crawl(t, "--config", slow, "--base-url", srv.URL, "backfill", "--pages", "1-3", "--delay", "0",
		"--state-dir", filepath.Join(dir, "d"), "--sink", "jsonl:"+filepath.Join(dir, "d.jsonl")); code != exitcode.OK {
		t.Fatalf("backfill --delay 0: exit %d: %s", code, errs)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("backfill --delay 0 took %v: journal 12's own delay of 5s still paced it", took)
	}

	// config show: the settings in effect, and where each comes from.
	code, out, errs := crawl(t, "--config", cfg, "config", "show", "--journal", "12")
	if code != exitcode.OK {
		t.Fatalf("config show: exit %d: %s", code, errs)
	}
	for _, want := range []string{"journal 12 (Journal Twelve)", "nightly.max_pages                 4 ", "backfill.max_pages                3 ",
		"nightly.stop_after_known_pages    1 ", "jsonl:" + twelve, "fetch.delay                       10ms"} {
		if !strings.Contains(out, want) {
			t.Errorf("config show lacks %q:\n%s", want, out)
		}
	}
	// Where each comes from: the journal's own section, the file (a
	// value not the default), or the default.
	from := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) >= 3 {
			from[f[0]] = f[len(f)-1]
		}
	}
	for key, want := range map[string]string{"nightly.max_pages": "journal", "fetch.delay": "journal", "sinks": "journal",
		"nightly.stop_after_known_pages": "default", "backfill.stop_after_repeat_pages": "default"} {
		if from[key] != want {
			t.Errorf("config show: %s from %q, want %q:\n%s", key, from[key], want, out)
		}
	}
	if code, out, _ := crawl(t, "--config", cfg, "config", "show", "--journal", "11"); code != 0 ||
		!regexp.MustCompile(`fetch\.delay\s+0s\s+file`).MatchString(out) {
		t.Errorf("config show --journal 11: the file's fetch.delay of 0s is not labelled file:\n%s", out)
	}
	var js []struct {
		ID    int64
		Own   []string
		Sinks []string
	}
	if code, out, _ := crawl(t, "--config", cfg, "config", "show", "--json"); code != 0 || json.Unmarshal([]byte(out), &js) != nil ||
		len(js) != 2 || js[0].ID != 11 || js[0].Own != nil || len(js[1].Own) != 5 || js[1].Sinks[0] != "jsonl:"+twelve {
		t.Errorf("config show --json: %s", out)
	}
}

// A journal's own sinks never lose or repeat a paper: a file named two
// ways is one sink; a run of some journals keeps the positions of the
// sinks it does not open, so that the next run that opens them rolls back
// what was written after their last commit.
func TestJournalSinksNeverLoseOrRepeat(t *testing.T) {
	t.Parallel()
	srv, dir := twoJournals(t, 4)
	config := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("fetch: {delay: 0s, jitter: 0s}\n"+text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	crawlWith := func(cfg string, args ...string) {
		t.Helper()
		if code, _, errs := crawl(t, append([]string{"--config", cfg, "--base-url", srv.URL}, args...)...); code != exitcode.OK {
			t.Fatalf("crawl %v: exit %d: %s", args, code, errs)
		}
	}

	// One file, named two ways: every paper of both journals, once.
	one := filepath.Join(dir, "one", "p.jsonl")
	cfg := config("one.yaml", fmt.Sprintf("sinks: [\"jsonl:%s\"]\njournals: [11, {id: 12, sinks: [\"jsonl:%s\"]}]\n", one, filepath.Join(dir, "one", ".", "p.jsonl")))
	crawlWith(cfg, "backfill", "--pages", "1-", "--state-dir", filepath.Join(dir, "s1"))
	if got := papersIn(t, one); len(got) != 160 {
		t.Errorf("one file named two ways holds %d papers, want both journals' 160", len(got))
	}

	// Journal 12's file has a tail written after its last commit (a crash
	// between a write and its commit); a run of journal 11 alone, then a
	// run of both: the tail is rolled back, nothing is there twice.
	all, twelve := filepath.Join(dir, "all.jsonl"), filepath.Join(dir, "twelve.jsonl")
	cfg = config("two.yaml", fmt.Sprintf("sinks: [\"jsonl:%s\"]\njournals: [11, {id: 12, sinks: [\"jsonl:%s\"]}]\n", all, twelve))
	st := filepath.Join(dir, "s2")
	crawlWith(cfg, "backfill", "--pages", "1-2", "--state-dir", st)
	f, err := os.OpenFile(twelve, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "{\"schema_version\":3,\"id\":\"%s\",\"source\":{\"position\":1}}\n", testsite.SynthID(12, 3, 0))
	f.Close()
	crawlWith(cfg, "backfill", "--journal", "11", "--pages", "1-4", "--state-dir", st)
	crawlWith(cfg, "backfill", "--pages", "1-4", "--state-dir", st)
	if got := papersIn(t, twelve); len(got) != 80 { // papersIn fails on a paper twice
		t.Errorf("journal 12's file holds %d papers, want 80", len(got))
	}
	if got := papersIn(t, all); len(got) != 80 {
		t.Errorf("the file's sink holds %d papers, want journal 11's 80", len(got))
	}
}
