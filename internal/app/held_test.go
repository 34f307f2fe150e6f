package app

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/internal/config"
	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/history"
	"github.com/litcrawl/litcrawl/internal/testsite"
	"github.com/litcrawl/litcrawl/parser"
	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/sink"
	"github.com/litcrawl/litcrawl/sink/quarantine"
)

// siteEnv is an Env crawling site (served for the test) with no delay,
// its state in a temporary directory; stderr takes what it says.
func siteEnv(t *testing.T, site *testsite.Site, stderr io.Writer) (*Env, *config.Config) {
	t.Helper()
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)
	cfg := config.Default()
	cfg.Site.BaseURL, cfg.Site.AllowedHosts = srv.URL, []string{"127.0.0.1"}
	cfg.Fetch.Delay, cfg.Fetch.Jitter = 0, 0
	cfg.StateDir = filepath.Join(t.TempDir(), "state")
	if err := cfg.Prepare(); err != nil {
		t.Fatal(err)
	}
	return &Env{Config: cfg, Stdout: io.Discard, Stderr: stderr}, cfg
}

// A page with a record the parser has a finding on (a date 70 years
// ahead): the crawl delivers the others, holds that one in the quarantine
// with its page's bytes, and exits 4 naming it; reading the page again
// holds it once. quarantine retry --reparse with the parser as it is keeps
// it; after the rule is fixed (the test swaps it), it delivers it, as
// revision 1, and the quarantine is empty.
func TestHeldRecordDeliveredAfterTheFix(t *testing.T) {
	site := testsite.New()
	site.SynthJournal(78, 1, 5)
	bad := testsite.SynthID(78, 1, 2)
	site.SetVariant(bad, testsite.Variant{Published: "2099-01-02"})
	var stderr strings.Builder
	e, cfg := siteEnv(t, site, &stderr)
	out := filepath.Join(t.TempDir(), "papers.jsonl")
	ctx := context.Background()
	c := Crawl{Kind: history.Backfill, Journals: []int64{78}, From: 1, To: 1, Sinks: []string{"jsonl:" + out}, StateDir: cfg.StateDir, NoResume: true}
	_, err := e.Crawl(ctx, c)
	qpath := filepath.Join(cfg.StateDir, quarantine.Name)
	if exitcode.Of(err) != exitcode.Quality || err == nil || !strings.Contains(err.Error(), "1 record held back") || !strings.Contains(err.Error(), qpath) {
		t.Fatalf("crawl: exit %d: %v", exitcode.Of(err), err)
	}
	ids := func() []string {
		var got []string
		for _, r := range readRecords(t, out) {
			got = append(got, r.ID)
		}
		return got
	}
	if got := ids(); len(got) != 4 || slices.Contains(got, bad) {
		t.Fatalf("delivered %v; want the 4 others", got)
	}
	// Read again: held again, kept once.
	if _, err := e.Crawl(ctx, c); exitcode.Of(err) != exitcode.Quality {
		t.Fatalf("second crawl: %v", err)
	}
	q, err := quarantine.Read(qpath)
	if err != nil || len(q.Entries) != 1 {
		t.Fatalf("quarantine: %d entries, %v", len(q.Entries), err)
	}
	h := q.Entries[0]
	if h.Sink != sink.HeldBy || h.Record.ID != bad || h.Page == nil || len(h.Page.Gzip) == 0 || !strings.Contains(h.Reason, "published") {
		t.Fatalf("held entry: sink %q id %s page %v reason %q", h.Sink, h.Record.ID, h.Page != nil, h.Reason)
	}
	// The parser as it is: still held.
	res, err := e.RetryHeld(ctx, QuarantineRetry{StateDir: cfg.StateDir, Sinks: []string{"jsonl:" + out}})
	if err != nil || res.Delivered != 0 || res.Held != 1 {
		t.Fatalf("retry --reparse before the fix: %+v %v", res, err)
	}
	// The rule fixed: a date ahead is no finding any more.
	fixed := func(p *parser.Page, now time.Time) []parser.Finding {
		return slices.DeleteFunc(p.Findings(now), func(f parser.Finding) bool { return f.Field == "published" })
	}
	res, err = e.RetryHeld(ctx, QuarantineRetry{StateDir: cfg.StateDir, Sinks: []string{"jsonl:" + out}, findings: fixed})
	if err != nil || res.Delivered != 1 || res.Held != 0 {
		t.Fatalf("retry --reparse after the fix: %+v %v", res, err)
	}
	recs := readRecords(t, out)
	if last := recs[len(recs)-1]; len(recs) != 5 || last.ID != bad || last.Revision != 1 || last.Published != "2099-01-02" {
		t.Fatalf("after the retry: %d records, the last %s revision %d published %s", len(recs), last.ID, last.Revision, last.Published)
	}
	if q, err := quarantine.Read(qpath); err != nil || len(q.Entries) != 0 {
		t.Fatalf("quarantine after the retry: %d entries, %v", len(q.Entries), err)
	}
	// A retry again has nothing to do and delivers nothing twice.
	if res, err := e.RetryHeld(ctx, QuarantineRetry{StateDir: cfg.StateDir, Sinks: []string{"jsonl:" + out}, findings: fixed}); err != nil || res.Delivered != 0 {
		t.Fatalf("a second retry: %+v %v", res, err)
	}
	if n := len(readRecords(t, out)); n != 5 {
		t.Fatalf("%d records after a second retry", n)
	}
}

func readRecords(t *testing.T, path string) []record.Record {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []record.Record
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r record.Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// A held record whose paper a later crawl delivered (the site fixed it)
// leaves the quarantine at the next run; a retry --reparse with no sink
// to deliver to (none configured, none given) refuses rather than send
// the records to standard output.
func TestHeldRecordLeavesWhenTheSiteFixesIt(t *testing.T) {
	site := testsite.New()
	site.SynthJournal(79, 1, 5)
	bad := testsite.SynthID(79, 1, 1)
	site.SetVariant(bad, testsite.Variant{Published: "2099-01-02"})
	srv := httptest.NewServer(site)
	defer srv.Close()
	cfg := config.Default()
	cfg.Site.BaseURL, cfg.Site.AllowedHosts = srv.URL, []string{"127.0.0.1"}
	cfg.Fetch.Delay, cfg.Fetch.Jitter = 0, 0
	cfg.StateDir = filepath.Join(t.TempDir(), "state")
	if err := cfg.Prepare(); err != nil {
		t.Fatal(err)
	}
	e := &Env{Config: cfg, Stdout: io.Discard, Stderr: io.Discard}
	out := filepath.Join(t.TempDir(), "papers.jsonl")
	ctx := context.Background()
	c := Crawl{Kind: history.Backfill, Journals: []int64{79}, From: 1, To: 1, Sinks: []string{"jsonl:" + out}, StateDir: cfg.StateDir, NoResume: true}
	if _, err := e.Crawl(ctx, c); exitcode.Of(err) != exitcode.Quality {
		t.Fatalf("crawl: %v", err)
	}
	if _, err := e.RetryHeld(ctx, QuarantineRetry{StateDir: cfg.StateDir}); err == nil || !strings.Contains(err.Error(), "standard output") {
		t.Fatalf("retry --reparse with no sink: %v", err)
	}
	site.SetVariant(bad, testsite.Variant{}) // the site fixes it
	if _, err := e.Crawl(ctx, c); err != nil {
		t.Fatalf("crawl of the fixed site: %v", err)
	}
	if _, err := e.Crawl(ctx, c); err != nil {
		t.Fatalf("the next crawl: %v", err)
	}
	q, err := quarantine.Read(filepath.Join(cfg.StateDir, quarantine.Name))
	if err != nil || len(q.Entries) != 0 {
		t.Fatalf("the quarantine still holds %d entries (%v)", len(q.Entries), err)
	}
	if n := len(readRecords(t, out)); n != 5 {
		t.Fatalf("%d records delivered, want 5", n)
	}
}
