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
	"github.com/litcrawl/litcrawl/testsite"
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
func TestPerJournalSettings(t *testing.T) {
	t.Parallel()
	site := testsite.New()
	site.SynthJournal(11, 8, 20)
	site.SynthJournal(12, 8, 20)
	srv := httptest.NewServer(site)
	defer srv.Close()
	dir := t.TempDir()
	all, twelve := filepath.Join(dir, "all.jsonl"), filepath.Join(dir, "twelve.jsonl")
	cfg := filepath.Join(dir, "config.yaml")
	err := os.WriteFile(cfg, fmt.Appendf(nil, `fetch: {delay: 0s, jitter: 0s}
sinks: ["jsonl:%s"]
journals:
  - 11
  - id: 12
    name: Journal Twelve
    nightly: {max_pages: 4}
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
	crawlWith("backfill", "--pages", "1-", "--state-dir", filepath.Join(dir, "b"))
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
	var js []struct {
		ID    int64
		Own   []string
		Sinks []string
	}
	if code, out, _ := crawl(t, "--config", cfg, "config", "show", "--json"); code != 0 || json.Unmarshal([]byte(out), &js) != nil ||
		len(js) != 2 || js[0].ID != 11 || js[0].Own != nil || len(js[1].Own) != 4 || js[1].Sinks[0] != "jsonl:"+twelve {
		t.Errorf("config show --json: %s", out)
	}
}
