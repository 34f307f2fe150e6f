package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/testsite"
)

// coreRecords reads a JSONL file into id → the record without the fields
// that say when and by which run it was fetched.
func coreRecords(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		src := r["source"].(map[string]any)
		delete(src, "fetched_at")
		delete(src, "run_id")
		b, _ := json.Marshal(r)
		out[r["id"].(string)] = string(b)
	}
	return out
}

// A live crawl with --archive, then the site goes away: crawl replay gives
// the same records, and so does an --offline crawl.
func TestArchiveReplayAndOffline(t *testing.T) {
	site, srv := fixtureSite(t)
	site.Inject(testsite.PagePath(501422, 2), testsite.Fault{Kind: testsite.Status, Status: 503})
	site.Inject(testsite.PagePath(501422, 3), testsite.Fault{Kind: testsite.SoftBlock})
	dir := t.TempDir()
	warcs := filepath.Join(dir, "warc")
	live := filepath.Join(dir, "live.jsonl")
	common := []string{"--journal", "501422", "--pages", "1-", "--base-url", srv.URL, "--delay", "0", "--concurrency", "1"}
	code, _, errs := crawl(t, append([]string{"backfill", "--state-dir", filepath.Join(dir, "s1"), "--sink", "jsonl:" + live, "--archive", warcs}, common...)...)
	if code != exitcode.OK {
		t.Fatalf("live: exit %d: %s", code, errs)
	}
	srv.Close() // nothing is fetched from here on

	replayed := filepath.Join(dir, "replayed.jsonl")
	code, _, errs = crawl(t, "replay", "--archive", warcs, "--sink", "jsonl:"+replayed)
	if code != exitcode.OK || !strings.Contains(errs, "4 listing pages, 20 papers") {
		t.Fatalf("replay: exit %d: %s", code, errs)
	}
	offline := filepath.Join(dir, "offline.jsonl")
	code, _, errs = crawl(t, append([]string{"backfill", "--state-dir", filepath.Join(dir, "s2"), "--sink", "jsonl:" + offline, "--offline", warcs}, common...)...)
	if code != exitcode.OK {
		t.Fatalf("offline: exit %d: %s", code, errs)
	}
	want := coreRecords(t, live)
	if len(want) != 20 {
		t.Fatalf("live run: %d papers", len(want))
	}
	for name, path := range map[string]string{"replay": replayed, "offline": offline} {
		got := coreRecords(t, path)
		if len(got) != len(want) {
			t.Errorf("%s: %d papers, live %d", name, len(got), len(want))
		}
		for id, w := range want {
			if got[id] != w {
				t.Errorf("%s: record %s differs:\n got %s\nwant %s", name, id, got[id], w)
				break
			}
		}
	}
	// Offline, a page the archive lacks is a permanent failure, not a hang
	// and not "the end".
	code, _, errs = crawl(t, "backfill", "--journal", "501422", "--pages", "9", "--base-url", srv.URL, "--delay", "0",
		"--state-dir", filepath.Join(dir, "s3"), "--sink", "jsonl:"+filepath.Join(dir, "x.jsonl"), "--offline", warcs)
	if code != exitcode.Incomplete || !strings.Contains(errs, "not in the archive") {
		t.Errorf("missing page offline: exit %d: %s", code, errs)
	}
	code, _, errs = crawl(t, append([]string{"backfill", "--archive", warcs, "--offline", warcs}, common...)...)
	if code != exitcode.Usage {
		t.Errorf("--archive with --offline: exit %d: %s", code, errs)
	}
}
