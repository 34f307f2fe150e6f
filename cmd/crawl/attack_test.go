package main

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/state"
	"github.com/litcrawl/litcrawl/internal/testsite"
)

// attackConfig is a configuration with the default limits, tightened to
// keep the test short: two tries a page, a 2 s timeout, short cool-downs,
// and a 4 MiB body cap (the huge page and the gzip bomb reach it sooner
// than the 2 s timeout, even on a loaded machine under -race).
const attackConfig = `fetch:
  max_body_bytes: 4194304
  delay: 0s
  jitter: 0s
  timeout: 2s
  attempts: 2
  backoff_base: 10ms
  backoff_max: 50ms
  max_crawl_delay: 10ms
  breaker_threshold: 2
  breaker_cooldown: 300ms
  breaker_max_opens: 2
backfill:
  stop_after_repeat_pages: 5
quality:
  min_papers_per_page: 1
`

// The attack profile of the test site, crawled end to end with a password
// in the base URL: every case ends as a careful operator expects, the run
// ends (exit 3: the hostile pages failed, for the next run to retry), every
// real paper is delivered once and no trap is, and the password is in no
// record, log line, report or state file.
func TestAttackSiteEndToEnd(t *testing.T) {
	t.Parallel()
	site, _, err := buildSite("", "", nil, "attack", 1) // as crawl serve --faults attack makes it
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(site)
	defer srv.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	os.WriteFile(cfg, []byte(attackConfig), 0o644)
	base := strings.Replace(srv.URL, "http://", "http://ann:s3cret-pw@", 1)
	args := []string{"backfill", "--config", cfg, "--pages", "1-", "--base-url", base, "--state-dir", filepath.Join(dir, "s"),
		"--sink", "jsonl:" + filepath.Join(dir, "p.jsonl"), "--report", filepath.Join(dir, "report.json")}
	for _, j := range testsite.AttackJournals {
		args = append(args, "--journal", fmt.Sprint(j))
	}
	start := time.Now()
	code, stdout, errs := crawl(t, args...)
	if took := time.Since(start); took > 60*time.Second {
		t.Errorf("the attack crawl took %v", took)
	}
	if code != exitcode.Incomplete {
		t.Fatalf("exit %d, want 3 (some pages failed): %s", code, errs)
	}

	// Delivered: the control journal's 15 papers, the repeat journal's 5,
	// the hostile-JSON page's 2; once each, no trap.
	ids := papersIn(t, filepath.Join(dir, "p.jsonl"))
	want := []string{"R1", "R2", "R3", "R4", "R5", "ATK-0001", "ATK-0002"}
	for p := 1; p <= 3; p++ {
		for i := range 5 {
			want = append(want, testsite.SynthID(testsite.AttackControl, p, i))
		}
	}
	for _, id := range want {
		if _, ok := ids[id]; !ok {
			t.Errorf("paper %s was not delivered", id)
		}
	}
	if len(ids) != len(want) {
		t.Errorf("%d papers delivered, want %d: %v", len(ids), len(want), ids)
	}
	if n := site.Hits(testsite.PagePath(testsite.AttackRepeat, 20)); n != 0 {
		t.Errorf("the repeating journal was walked to page 20")
	}

	// Each case failed its pages as it should, in the report.
	var data []byte
	var rep struct {
		Failures []struct {
			Journal int64  `json:"journal"`
			Page    int    `json:"page"`
			Error   string `json:"error"`
		} `json:"failures"`
	}
	data, err = os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	failed := map[string]string{}
	for _, f := range rep.Failures {
		failed[fmt.Sprintf("%d/%d", f.Journal, f.Page)] = f.Error
	}
	for page, cause := range map[string]string{
		"9004/1": "exceeds the size cap",             // gzip bomb
		"9005/1": "exceeds the size cap",             // 10,000 papers
		"9006/1": "not an allowed host: 127.0.0.1:1", // another port
		"9006/2": "not an allowed host: elsewhere.example",
		"9007/1": "timeout after 2s",             // slowloris
		"9008/1": "beyond fetch.max_retry_after", // Retry-After: 86400
		"9009/3": "host is down",                 // 503 for ever
	} {
		if !strings.Contains(failed[page], cause) {
			t.Errorf("page %s: failure %q, want %q", page, failed[page], cause)
		}
	}
	for _, note := range []string{"Crawl-delay is beyond fetch.max_crawl_delay: clamped", "stopping the open-ended walk", "host is down"} {
		if !strings.Contains(errs, note) {
			t.Errorf("stderr does not say %q", note)
		}
	}

	// The password is nowhere: not in records, logs, the report, the state.
	db, _ := os.ReadFile(filepath.Join(dir, "s", state.FileName))
	records, _ := os.ReadFile(filepath.Join(dir, "p.jsonl"))
	for what, b := range map[string]string{"stdout": stdout, "stderr": errs, "report": string(data), "state": string(db), "records": string(records)} {
		if strings.Contains(b, "s3cret-pw") || strings.Contains(b, "ann:") {
			t.Errorf("the base URL's password is in the %s", what)
		}
	}
}

// A JSONL sink's commit token is bound to its file: backfilling into P,
// then (with the same state) into Q, leaves P as its owner left it; Q
// moved away does not stop the next run into Q: it starts clean, with a
// warning.
func TestJSONLTokenIsBoundToItsFile(t *testing.T) {
	t.Parallel()
	site := testsite.New()
	site.SynthJournal(1001, 6, 5)
	srv := httptest.NewServer(site)
	defer srv.Close()
	dir := t.TempDir()
	p, q, st := filepath.Join(dir, "P.jsonl"), filepath.Join(dir, "Q.jsonl"), filepath.Join(dir, "s")
	backfill := func(out, pages string) (int, string) {
		code, _, errs := crawl(t, "backfill", "--journal", "1001", "--pages", pages, "--base-url", srv.URL, "--delay", "0",
			"--state-dir", st, "--sink", "jsonl:"+out)
		return code, errs
	}
	if code, errs := backfill(p, "1-2"); code != exitcode.OK {
		t.Fatalf("into P: exit %d: %s", code, errs)
	}
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"id":"a line of my own"}` + "\n")
	f.Close()
	if code, errs := backfill(q, "3-4"); code != exitcode.OK {
		t.Fatalf("into Q: exit %d: %s", code, errs)
	}
	if n := countLines(t, p); n != 11 {
		t.Errorf("P has %d lines after a run into Q, want its 11 untouched", n)
	}
	os.Rename(q, q+".moved")
	if code, errs := backfill(q, "5-6"); code != exitcode.OK || !strings.Contains(errs, "gone") {
		t.Errorf("into Q after it was moved away: exit %d: %s; want a warning and success", code, errs)
	}
	if n := countLines(t, q); n != 10 {
		t.Errorf("the new Q has %d lines, want 10", n)
	}
}
