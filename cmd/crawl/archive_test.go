package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/testsite"
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
		// The paper's last content, whichever revision and page brought
		// it: a replay reads the archive in the order the pages were
		// fetched (a retried page last), a crawl delivers in page order,
		// so a paper shown with more on a later page may reach it in one
		// revision or in two.
		delete(r, "source")
		delete(r, "revision")
		delete(r, "changed")
		b, _ := json.Marshal(r)
		out[r["id"].(string)] = string(b)
	}
	return out
}

// A live crawl with --archive, then the site goes away: crawl replay gives
// the same papers, each as the site last showed it, and so does an
// --offline crawl.
func TestArchiveReplayAndOffline(t *testing.T) {
	t.Parallel()
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
	if code != exitcode.OK || !strings.Contains(errs, "4 listing pages; papers: 20 new, 5 updated") {
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

// maskRun blanks what says which run fetched a record and when (a replay
// and a crawl differ there by design), leaving every other byte.
var maskRun = regexp.MustCompile(`"(run_id|fetched_at)":"[^"]*"`)

// TestReplayAndOfflineDeliverAlike: an archive whose pages repeat a paper
// (the same id on two pages) and a DOI (under another id) is replayed and
// crawled offline: both deliver through the engine's one delivery step, so
// both deliver the same records, in the same order, byte for byte but for
// the run and the fetch time.
func TestReplayAndOfflineDeliverAlike(t *testing.T) {
	t.Parallel()
	const j = 8686
	site := testsite.New()
	ids := []string{"a1", "a2", "a3", "a4", "a5", "a6", "a7", "a1", "a8", "a9", "b1", "b2", "b3", "b4", "b5"}
	site.SetListing(j, ids, 5)
	rec := httptest.NewRecorder()
	site.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, testsite.PagePath(j, 3), nil))
	// b3 is a2 under another id: its DOI is a2's.
	site.SetPage(j, 3, bytes.ReplaceAll(rec.Body.Bytes(), []byte("10.9999/synth.b3"), []byte("10.9999/synth.a2")), "")
	srv := httptest.NewServer(site)
	dir := t.TempDir()
	warcs := filepath.Join(dir, "warc")
	common := []string{"--journal", fmt.Sprint(j), "--pages", "1-", "--base-url", srv.URL, "--delay", "0", "--concurrency", "1"}
	if code, _, errs := crawl(t, append([]string{"backfill", "--state-dir", filepath.Join(dir, "s1"), "-o", filepath.Join(dir, "live.jsonl"), "--archive", warcs}, common...)...); code != exitcode.OK {
		t.Fatalf("live: exit %d: %s", code, errs)
	}
	srv.Close()
	replayed, offline := filepath.Join(dir, "replayed.jsonl"), filepath.Join(dir, "offline.jsonl")
	if code, _, errs := crawl(t, "replay", "--archive", warcs, "-o", replayed); code != exitcode.OK {
		t.Fatalf("replay: exit %d: %s", code, errs)
	}
	if code, _, errs := crawl(t, append([]string{"backfill", "--state-dir", filepath.Join(dir, "s2"), "-o", offline, "--offline", warcs}, common...)...); code != exitcode.OK {
		t.Fatalf("offline: exit %d: %s", code, errs)
	}
	read := func(path string) []string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(maskRun.ReplaceAllString(strings.TrimSpace(string(b)), `"$1":""`), "\n")
	}
	a, b := read(replayed), read(offline)
	if len(a) != 13 { // 15 listed, a1 twice, b3 is a2
		t.Errorf("replay delivered %d records, want 13 (each paper once, by id and by DOI)", len(a))
	}
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) || a[i] != b[i] {
			t.Fatalf("record %d differs (replay %d records, offline %d):\nreplay  %s\noffline %s", i, len(a), len(b), at(a, i), at(b, i))
		}
	}
}

func at(ls []string, i int) string {
	if i < len(ls) {
		return ls[i]
	}
	return "(none)"
}
