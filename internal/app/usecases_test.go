package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/internal/app"
	"github.com/litcrawl/litcrawl/internal/config"
	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/history"
	"github.com/litcrawl/litcrawl/internal/testsite"
	"github.com/litcrawl/litcrawl/parser"
	_ "github.com/litcrawl/litcrawl/sink/jsonl"
)

// env is the application over the test site at base: no delay, quick
// retries, state and output in dir.
func env(t *testing.T, base string) *app.Env {
	t.Helper()
	cfg := config.Default()
	cfg.Site.BaseURL, cfg.Site.AllowedHosts = base, []string{"127.0.0.1"}
	cfg.Fetch.Delay, cfg.Fetch.Jitter, cfg.Fetch.BackoffBase, cfg.Fetch.BackoffMax = 0, 0, config.Duration(1e6), config.Duration(5e6)
	cfg.StateDir = filepath.Join(t.TempDir(), "state")
	cfg.Quality.MinDOIShare = 0
	if err := cfg.Prepare(); err != nil {
		t.Fatal(err)
	}
	return &app.Env{Config: cfg, Stdout: io.Discard, Stderr: io.Discard}
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// A backfill delivers every paper once and records its run; a nightly
// after new papers arrived delivers those alone; the history shows both
// runs with their counts and exit codes.
func TestCrawlBackfillThenNightly(t *testing.T) {
	site := testsite.New()
	site.SynthJournal(77, 3, 10)
	srv := httptest.NewServer(site)
	defer srv.Close()
	e := env(t, srv.URL)
	out := filepath.Join(t.TempDir(), "papers.jsonl")
	crawl := app.Crawl{Journals: []int64{77}, Sinks: []string{"jsonl:" + out}, StateDir: e.Config.StateDir}
	bf := crawl
	bf.Kind, bf.From = "backfill", 1
	if sum, err := e.Crawl(context.Background(), bf); err != nil || sum.PapersNew.Load() != 30 {
		t.Fatalf("backfill: %v (%v)", sum, err)
	}
	var ids []string
	for p := 1; p <= 3; p++ {
		for i := range 10 {
			ids = append(ids, testsite.SynthID(77, p, i))
		}
	}
	site.SetListing(77, append([]string{"n1", "n2"}, ids...), 10)
	nt := crawl
	nt.Kind = "nightly"
	if sum, err := e.Crawl(context.Background(), nt); err != nil || sum.PapersNew.Load() != 2 {
		t.Fatalf("nightly: %v (%v)", sum, err)
	}
	if got := lines(t, out); len(got) != 32 {
		t.Fatalf("%d records, want 32", len(got))
	}
	h, err := history.Read(e.Config.StateDir, e.Config.Quality)
	if err != nil || len(h.Runs) != 2 {
		t.Fatalf("history: %+v (%v)", h, err)
	}
	if v := h.Runs[0]; v.Kind != "nightly" || v.Outcome() != "0" {
		t.Errorf("newest run: %+v", v)
	}
	if fresh, _ := h.Runs[1].Papers(); fresh != 30 {
		t.Errorf("the backfill's new papers in the history: %d", fresh)
	}
}

// A run whose page fails ends with ErrPagesFailed, exit 3, and says so in
// the history.
func TestCrawlWithAFailedPageExits3(t *testing.T) {
	site := testsite.New()
	site.SynthJournal(78, 2, 5)
	site.Inject(testsite.PagePath(78, 2), testsite.Fault{Kind: testsite.Status, Status: 403})
	srv := httptest.NewServer(site)
	defer srv.Close()
	e := env(t, srv.URL)
	_, err := e.Crawl(context.Background(), app.Crawl{Kind: "backfill", Journals: []int64{78}, From: 1, To: 2,
		Sinks: []string{"jsonl:" + filepath.Join(t.TempDir(), "p.jsonl")}, StateDir: e.Config.StateDir})
	if !errors.Is(err, app.ErrPagesFailed) || exitcode.Of(err) != exitcode.Incomplete {
		t.Fatalf("error %v (exit %d)", err, exitcode.Of(err))
	}
	h, _ := history.Read(e.Config.StateDir, e.Config.Quality)
	if len(h.Runs) != 1 || h.Runs[0].Outcome() != "3" {
		t.Fatalf("history: %+v", h.Runs)
	}
}

// What no single value says is checked before anything starts: a journal,
// backfill.max_pages, a report that is not the records' file, a last page
// for a distributed backfill. Each is a usage error naming what to give.
func TestUseCasesRefuseWhatCannotRun(t *testing.T) {
	e := env(t, "http://127.0.0.1:1")
	report := filepath.Join(t.TempDir(), "r.json")
	for _, tt := range []struct {
		c    app.Crawl
		want string
	}{
		{app.Crawl{Kind: "nightly"}, "no journal"},
		{app.Crawl{Kind: "backfill", Journals: []int64{1}, From: 1, To: 200_000}, "at most backfill.max_pages"},
		{app.Crawl{Kind: "nightly", Journals: []int64{1}, Report: report, Sinks: []string{"jsonl:" + report}}, "is the records' JSONL file too"},
	} {
		_, err := e.Crawl(context.Background(), tt.c)
		if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v", tt.c, err)
		}
	}
	for _, tt := range []struct {
		o    app.Enqueue
		want string
	}{
		{app.Enqueue{}, "no journal"},
		{app.Enqueue{Journals: []int64{1}, From: 3}, "needs its last page"},
		{app.Enqueue{Journals: []int64{1}, Nightly: true}, "--frontier"},
	} {
		_, _, err := e.Enqueue(context.Background(), tt.o)
		if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v", tt.o, err)
		}
	}
	if _, err := os.Stat(e.Config.StateDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused run touched the state: %v", err)
	}
}

// Parse delivers each paper once across files, in input order, and tells
// of every file; a path that does not exist stops it before anything is
// written.
func TestParseDeliversEachPaperOnce(t *testing.T) {
	dir := t.TempDir()
	site := testsite.New()
	site.SetListing(5, []string{"a", "b", "c", "c", "d"}, 3) // c on both pages
	for p := 1; p <= 2; p++ {
		rec := httptest.NewRecorder()
		site.ServeHTTP(rec, httptest.NewRequest("GET", testsite.PagePath(5, p), nil))
		os.WriteFile(filepath.Join(dir, filepath.Base(testsite.PagePath(5, p))), rec.Body.Bytes(), 0o644)
	}
	var stdout bytes.Buffer
	e := env(t, "http://127.0.0.1:1")
	e.Stdout = &stdout
	var seen []string
	err := e.Parse(context.Background(), app.Parse{Paths: []string{dir}, MaxInput: 1 << 20, Concurrency: 2},
		func(path string, page *parser.Page, err error) { seen = append(seen, filepath.Base(path)) })
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var r struct{ ID string }
		json.Unmarshal([]byte(l), &r)
		got = append(got, r.ID)
	}
	if strings.Join(got, " ") != "a b c d" || len(seen) != 2 {
		t.Fatalf("records %v from files %v", got, seen)
	}
	stdout.Reset()
	err = e.Parse(context.Background(), app.Parse{Paths: []string{dir, filepath.Join(dir, "nope.htm")}, MaxInput: 1 << 20}, func(string, *parser.Page, error) {})
	if err == nil || stdout.Len() != 0 {
		t.Fatalf("a missing path: %v, %d bytes written", err, stdout.Len())
	}
}
