package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/internal/ledger"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/litcrawl/litcrawl/crawler"
	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/state"
	"github.com/litcrawl/litcrawl/internal/testsite"
	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/sink"
	_ "github.com/litcrawl/litcrawl/sink/jsonl"
)

func fixture(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "fixtures", rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newSite serves journal 501422 pages 1-4 from the fixture markups (the
// same papers recur across them, as on the live site when papers shift).
func newSite(t *testing.T) (*testsite.Site, *httptest.Server) {
	t.Helper()
	site := testsite.New()
	site.SetPage(501422, 1, fixture(t, "html/li-classes/literature_d501422.htm"), "")
	site.SetPage(501422, 2, fixture(t, "html/flat-p/literature_d501422_2.htm"), "")
	site.SetPage(501422, 3, fixture(t, "html/script-json/literature_d501422_4.htm"), "")
	site.SetPage(501422, 4, fixture(t, "html/table-br/literature_d501422_5.htm"), "")
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)
	return site, srv
}

func config(srv *httptest.Server) crawler.Config {
	return crawler.Config{
		BaseURL:     srv.URL,
		Concurrency: 2, Timeout: 5 * time.Second, MaxBodyBytes: 4 << 20,
		Retry:            crawler.RetryPolicy{MaxAttempts: 6, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond, MaxRetryAfter: time.Second},
		BreakerThreshold: 20, BreakerCooldown: 10 * time.Millisecond, SlowdownMax: 5 * time.Millisecond,
		// No keep-alive: net/http silently retries a GET whose reused
		// connection was reset, which would hide the resets from the crawler.
		UserAgent: "litcrawl-test", Robots: true, Transport: &http.Transport{DisableKeepAlives: true},
	}
}

type run struct {
	store *state.Store
	out   sink.Sink
	r     *engine.Run
}

// start makes a run over a fetcher for cfg, the state in stateDir and a
// JSONL sink, as the application does (without its sink restore: these
// runs do not crash).
func start(t *testing.T, cfg crawler.Config, stateDir, jsonl, runID string) *run {
	t.Helper()
	return startWith(t, cfg, stateDir, jsonl, runID, nil)
}

func startWith(t *testing.T, cfg crawler.Config, stateDir, jsonl, runID string, m *engine.Metrics) *run {
	t.Helper()
	st, err := state.Open(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := sink.Open(context.Background(), "jsonl:"+jsonl, sink.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := crawler.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := engine.Start(engine.Options{ID: runID, Fetcher: f, Ledger: st, Sink: out, Concurrency: cfg.Concurrency, Metrics: m})
	return &run{store: st, out: out, r: r}
}

func (r *run) close() { r.r.Close(); r.out.Close(); r.store.Close() }

func readIDs(t *testing.T, path string) map[string]int {
	t.Helper()
	data, _ := os.ReadFile(path)
	ids := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if l == "" {
			continue
		}
		var r record.Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("bad line %q: %v", l, err)
		}
		ids[r.ID]++
	}
	return ids
}

// readRevisions reads a JSONL file of records: the revisions of each id,
// in file order.
func readRevisions(t *testing.T, path string) map[string][]int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r record.Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("bad line %q: %v", l, err)
		}
		out[r.ID] = append(out[r.ID], r.Revision)
	}
	return out
}

// A backfill of a flaky site ends with every paper exactly once (each
// revision of it).
func TestBackfillFlakySiteEveryPaperOnce(t *testing.T) {
	site, srv := newSite(t)
	site.Inject(testsite.PagePath(501422, 1), testsite.Fault{Kind: testsite.Reset}, testsite.Fault{Kind: testsite.Reset})
	site.Inject(testsite.PagePath(501422, 2), testsite.Fault{Kind: testsite.Status, Status: 503}, testsite.Fault{Kind: testsite.Status, Status: 502},
		testsite.Fault{Kind: testsite.TooMany, RetryAfter: "0"})
	site.Inject(testsite.PagePath(501422, 3), testsite.Fault{Kind: testsite.Truncate})
	site.Inject(testsite.PagePath(501422, 4), testsite.Fault{Kind: testsite.SoftBlock}, testsite.Fault{Kind: testsite.SoftBlock})
	dir := t.TempDir()
	out := filepath.Join(dir, "papers.jsonl")
	cfg := config(srv)
	reg := prometheus.NewRegistry()
	cfg.Metrics = crawler.NewMetrics(reg)
	em := engine.NewMetrics(reg)
	r := startWith(t, cfg, filepath.Join(dir, "state"), out, "run-1", em)
	err := r.r.Backfill(context.Background(), engine.BackfillOptions{Journals: []int64{501422}, From: 1})
	sum := r.r.Summary()
	r.close()
	if err != nil {
		t.Fatal(err)
	}
	if sum.Done.Load() != 4 || sum.Failed.Load() != 0 || sum.Ended.Load() < 1 {
		t.Fatalf("summary: %s", sum)
	}
	m := cfg.Metrics
	if testutil.ToFloat64(em.Pages.WithLabelValues("done")) != 4 || testutil.ToFloat64(m.Fetches.WithLabelValues("5xx")) != 2 ||
		testutil.ToFloat64(em.Retries.WithLabelValues("soft-block")) != 2 || testutil.ToFloat64(m.Fetches.WithLabelValues("error")) < 2 {
		t.Errorf("metrics: pages done %v, 5xx %v, soft-block retries %v, fetch errors %v",
			testutil.ToFloat64(em.Pages.WithLabelValues("done")), testutil.ToFloat64(m.Fetches.WithLabelValues("5xx")),
			testutil.ToFloat64(em.Retries.WithLabelValues("soft-block")), testutil.ToFloat64(m.Fetches.WithLabelValues("error")))
	}
	retries := sum.Retries()
	for _, c := range []string{"network", "http-5xx", "http-429", "truncated", "soft-block"} {
		if retries[c] == 0 {
			t.Errorf("no retry counted for %s: %v", c, retries)
		}
	}
	// The fixtures behind pages 2 and 5 are captures of different days:
	// five papers on both show an impact factor on the later page only,
	// and are delivered again as their revision 2.
	revs := readRevisions(t, out)
	if len(revs) != 20 {
		t.Errorf("%d distinct papers, want 20", len(revs))
	}
	updated := 0
	for id, rs := range revs {
		if !slices.Equal(rs, []int{1}) && !slices.Equal(rs, []int{1, 2}) {
			t.Errorf("paper %s delivered as revisions %v; want each revision once, from 1", id, rs)
		}
		updated += len(rs) - 1
	}
	if sum.PapersNew.Load() != 20 || sum.PapersKnown.Load() != 13 || sum.PapersUpdated.Load() != int64(updated) || updated != 5 {
		t.Errorf("papers new/known/updated = %d/%d/%d (%d revisions 2 in the file), want 20/13/5",
			sum.PapersNew.Load(), sum.PapersKnown.Load(), sum.PapersUpdated.Load(), updated)
	}
	// Records say where and when they were fetched, and by which run.
	data, _ := os.ReadFile(out)
	var first record.Record
	json.Unmarshal([]byte(strings.SplitN(string(data), "\n", 2)[0]), &first)
	if first.Source.RunID != "run-1" || first.Source.FetchedAt == "" || !strings.HasPrefix(first.Source.URL, srv.URL+"/literature_d501422") ||
		first.Source.Page == 0 || first.Journal == nil || first.Journal.ID != 501422 {
		t.Errorf("source of a fetched record: %+v journal %+v", first.Source, first.Journal)
	}

	// A second run skips the committed pages and delivers nothing.
	hits := site.Hits(testsite.PagePath(501422, 2))
	r = start(t, config(srv), filepath.Join(dir, "state"), out, "run-2")
	err = r.r.Backfill(context.Background(), engine.BackfillOptions{Journals: []int64{501422}, From: 1, To: 4})
	sum = r.r.Summary()
	r.close()
	if err != nil || sum.Skipped.Load() != 4 || sum.Done.Load() != 0 || site.Hits(testsite.PagePath(501422, 2)) != hits {
		t.Fatalf("resume: %s (err %v)", sum, err)
	}
	if n := len(readIDs(t, out)); n != 20 {
		t.Errorf("after resume %d papers", n)
	}
}

// Permanent failures are recorded and retried by the next run; a 404 past
// page 1 ends the listing; the charset from the HTTP header is decoded once.
func TestBackfillFailuresEndsAndCharset(t *testing.T) {
	site, srv := newSite(t)
	gbk := fixture(t, "edge/gbk.htm")
	site.SetPage(7788, 1, gbk, "text/html; charset=GBK")
	site.SetRobots("User-agent: *\nDisallow: /literature_d501422_3\n")
	site.Inject(testsite.PagePath(501422, 2), testsite.Fault{Kind: testsite.RedirectAway, Location: "https://elsewhere.example/x"})
	dir := t.TempDir()
	out := filepath.Join(dir, "papers.jsonl")
	r := start(t, config(srv), filepath.Join(dir, "state"), out, "run-1")
	err := r.r.Backfill(context.Background(), engine.BackfillOptions{Journals: []int64{501422, 7788}, From: 1, To: 6})
	sum := r.r.Summary()
	if err != nil {
		t.Fatal(err)
	}
	failed, _ := r.store.FailedPages()
	r.close()
	if sum.Failed.Load() != 2 || len(failed) != 2 {
		t.Fatalf("want pages 2 (redirected away) and 3 (robots) failed: %s; %v", sum, sum.Failures())
	}
	for _, f := range sum.Failures() {
		if !strings.Contains(f.Error, "allowed host") && !strings.Contains(f.Error, "robots.txt") {
			t.Errorf("failure %+v", f)
		}
	}
	if site.Hits(testsite.PagePath(501422, 3)) != 0 {
		t.Error("a page robots.txt disallows was fetched")
	}
	// 7788 has one page: page 2 is a 404, so pages 3-6 are not fetched.
	if site.Hits(testsite.PagePath(7788, 4)) != 0 && site.Hits(testsite.PagePath(7788, 6)) != 0 {
		t.Error("the walk went on past the end of the listing")
	}
	data, _ := os.ReadFile(out)
	if !strings.Contains(string(data), `"title_cn":"基于学习流行度的边缘缓存"`) {
		t.Errorf("the GBK page (charset in the header) was not decoded right:\n%.300s", data)
	}

	// The next run retries the failed pages (the redirect is gone now).
	site.SetRobots("")
	r = start(t, config(srv), filepath.Join(dir, "state"), out, "run-2")
	err = r.r.Backfill(context.Background(), engine.BackfillOptions{Journals: []int64{501422}, From: 1, To: 4})
	sum = r.r.Summary()
	failed, _ = r.store.FailedPages()
	r.close()
	if err != nil || sum.Done.Load() != 2 || len(failed) != 0 {
		t.Fatalf("rerun: %s, still failed %v (err %v)", sum, failed, err)
	}
}

// deliveredOnce checks that the JSONL at out holds every paper of listing,
// and each paper once.
func deliveredOnce(t *testing.T, out string, listing []string) {
	t.Helper()
	onceEach(t, readIDs(t, out), listing)
}

// onceEach: every paper of the listing was delivered, each once.
func onceEach(t *testing.T, got map[string]int, listing []string) {
	t.Helper()
	for id, n := range got {
		if n != 1 {
			t.Errorf("paper %s delivered %d times", id, n)
		}
	}
	missing := 0
	for _, id := range listing {
		if got[id] == 0 {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d papers never delivered", missing, len(listing))
	}
}

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%03d", prefix, i)
	}
	return out
}

// Nightly runs over a site that gains papers at page 1 between runs and
// during one: the walk stops at known papers, is not stopped early by
// papers pushed down during the run, and over all nights every paper is
// delivered exactly once.
func TestNightlyShiftingListing(t *testing.T) {
	site := testsite.New()
	srv := httptest.NewServer(site)
	defer srv.Close()
	const j = 4242
	listing := ids("9000", 200) // 10 pages of 20
	site.SetListing(j, listing, 20)
	dir := t.TempDir()
	out := filepath.Join(dir, "papers.jsonl")
	night := func(runID string) *engine.Summary {
		t.Helper()
		r := start(t, config(srv), filepath.Join(dir, "state"), out, runID)
		defer r.close()
		if err := r.r.Nightly(context.Background(), engine.NightlyOptions{Journals: []int64{j}, StopAfterKnownPages: 1, MaxPages: 50}); err != nil {
			t.Fatal(err)
		}
		return r.r.Summary()
	}

	// Night 1: everything is new; the walk goes to the last page, which
	// its pager names (page 11 is never asked for).
	if s := night("n1"); s.PapersNew.Load() != 200 || s.Done.Load() != 10 || site.Hits(testsite.PagePath(j, 11)) != 0 {
		t.Fatalf("night 1: %s", s)
	}
	// Night 2: 15 new papers at the top; page 1 shows last night's first
	// papers below them, in their order: the proof the top part ends
	// there, and the walk stops after one page.
	listing = append(ids("9100", 15), listing...)
	site.SetListing(j, listing, 20)
	hits2 := site.Hits(testsite.PagePath(j, 2))
	if s := night("n2"); s.PapersNew.Load() != 15 || s.Done.Load() != 1 {
		t.Fatalf("night 2: %s", s)
	}
	if site.Hits(testsite.PagePath(j, 2)) != hits2 {
		t.Error("night 2 walked past the page that proved the top part closed")
	}
	// Night 3: 10 new papers; while page 1 is being read, 20 more arrive
	// and push page 1's papers down to page 2. Page 1 showed the head,
	// so the walk ends there: the 20 are the next night's.
	listing = append(ids("9200", 10), listing...)
	site.SetListing(j, listing, 20)
	site.AfterServe(testsite.PagePath(j, 1), func() {
		listing = append(ids("9300", 20), listing...)
		site.SetListing(j, listing, 20)
	})
	if s := night("n3"); s.PapersNew.Load() != 10 || s.Done.Load() != 1 {
		t.Fatalf("night 3: %s (want 10 new from page 1)", s)
	}
	// Night 4: the 20 papers that arrived during night 3.
	if s := night("n4"); s.PapersNew.Load() != 20 {
		t.Fatalf("night 4: %s", s)
	}
	deliveredOnce(t, out, listing)
}

// A nightly that reaches max_pages before known papers leaves a mark; the
// next nightly, after the night's new papers, jumps to the mark's page and
// carries on past it instead of stopping at the known papers: over two
// nights no page is lost, nothing is delivered twice, and each night walks
// at most max_pages pages.
func TestNightlyCarriesOnPastMaxPages(t *testing.T) {
	site := testsite.New()
	srv := httptest.NewServer(site)
	defer srv.Close()
	const j = 4343
	listing := ids("8000", 110) // 6 pages of 20, the last with 10
	site.SetListing(j, listing, 20)
	dir := t.TempDir()
	out := filepath.Join(dir, "papers.jsonl")
	night := func(runID string) (*engine.Summary, []ledger.WalkMark, int) {
		t.Helper()
		before := 0
		for p := 1; p <= 8; p++ {
			before += site.Hits(testsite.PagePath(j, p))
		}
		r := start(t, config(srv), filepath.Join(dir, "state"), out, runID)
		defer r.close()
		if err := r.r.Nightly(context.Background(), engine.NightlyOptions{Journals: []int64{j}, StopAfterKnownPages: 1, MaxPages: 5}); err != nil {
			t.Fatal(err)
		}
		ws, err := r.store.WalkState(context.Background(), j)
		if err != nil {
			t.Fatal(err)
		}
		marks := ws.Marks
		after := 0
		for p := 1; p <= 8; p++ {
			after += site.Hits(testsite.PagePath(j, p))
		}
		return r.r.Summary(), marks, after - before
	}

	// Night 1: pages 1-5 are new; max_pages (5) stops the walk with 10
	// papers beyond it: the walk is incomplete, and its last page is the
	// mark.
	s, marks, fetched := night("n1")
	if s.PapersNew.Load() != 100 || fetched != 5 {
		t.Fatalf("night 1: %s, %d pages fetched", s, fetched)
	}
	if iw := s.IncompleteWalks(); len(iw) != 1 || iw[0] != (engine.IncompleteWalk{Journal: j, Page: 5, Why: engine.WhyMaxPages, From: 5}) {
		t.Errorf("night 1's incomplete walks: %+v", iw)
	}
	if len(marks) != 1 || marks[0].Page != 5 || !slices.Contains(marks[0].Papers, "8000099") || slices.Contains(marks[0].Papers, "8000080") {
		t.Errorf("night 1's marks: %+v", marks)
	}

	// Night 2: 10 new papers at the top. Page 1 shows last night's head
	// below them (the top part is closed); the mark's papers were 100
	// papers below the head, so now at 101-110, on page 6: the walk jumps
	// there, finds them, delivers the gap below them and meets the end.
	listing = append(ids("8100", 10), listing...)
	site.SetListing(j, listing, 20)
	var hits [7]int
	for p := range hits {
		hits[p] = site.Hits(testsite.PagePath(j, p+1))
	}
	s, marks, fetched = night("n2")
	if s.PapersNew.Load() != 20 || fetched != 2 {
		t.Fatalf("night 2: %s, %d pages fetched; want 20 new papers from pages 1 and 6", s, fetched)
	}
	for p := 2; p <= 5; p++ {
		if site.Hits(testsite.PagePath(j, p)) != hits[p-1] {
			t.Errorf("night 2 walked page %d instead of jumping to the mark", p)
		}
	}
	if iw := s.IncompleteWalks(); len(iw) != 0 || len(marks) != 0 {
		t.Errorf("night 2 reached the last page, yet incomplete walks %+v, marks %+v", iw, marks)
	}
	deliveredOnce(t, out, listing)
}

// Over many nights with random arrivals, often more than a night's
// max_pages can take, the walks leave marks and carry on from them: each
// night fetches at most max_pages pages, no paper is delivered twice, and
// once the arrivals stop, every paper of the listing is delivered.
func TestNightlyNeverLeavesAPageBehind(t *testing.T) {
	for seed := int64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 7))
			site := testsite.New()
			const j, perPage, maxPages = 4545, 5, 4
			listing := ids(fmt.Sprintf("7%d00", seed), 30)
			site.SetListing(j, listing, perPage)
			l, out := ledger.NewMemory(), &memSink{}
			fetched := func() int {
				n := 0
				for p := 1; p <= len(listing)/perPage+2; p++ {
					n += site.Hits(testsite.PagePath(j, p))
				}
				return n
			}
			for night := 1; night <= 60; night++ {
				if night <= 15 {
					// 0 to 5 pages of new papers: a night walks 4 at most.
					fresh := ids(fmt.Sprintf("7%d%02d", seed, night), rng.IntN(5*perPage+1))
					listing = append(fresh, listing...)
					site.SetListing(j, listing, perPage)
				}
				before := fetched()
				r := memRun(site, l, out, fmt.Sprintf("n%d", night))
				if err := r.Nightly(context.Background(), engine.NightlyOptions{Journals: []int64{j}, StopAfterKnownPages: 1, MaxPages: maxPages}); err != nil {
					t.Fatal(err)
				}
				r.Close()
				incomplete := len(r.Summary().IncompleteWalks())
				if n := fetched() - before; n > maxPages {
					t.Fatalf("night %d fetched %d pages, max_pages is %d", night, n, maxPages)
				}
				if night > 15 && incomplete == 0 {
					break
				}
			}
			onceEach(t, out.ids(), listing)
		})
	}
}

// A walk cut short — a page that fails once, or the run stopped by its
// first signal — leaves a mark at its last page like one stopped at
// max_pages: the next nightly carries on from there instead of stopping at
// the known papers above, with or without an older mark pending.
func TestNightlyCutShortCarriesOn(t *testing.T) {
	for _, tc := range []string{"failed", "failed-with-mark", "stopped"} {
		t.Run(tc, func(t *testing.T) {
			site := testsite.New()
			srv := httptest.NewServer(site)
			defer srv.Close()
			const j = 4346
			listing := ids("8200", 200)
			site.SetListing(j, listing, 20)
			dir := t.TempDir()
			out := filepath.Join(dir, "papers.jsonl")
			maxPages := 50
			night := func(n int, stop chan struct{}) *engine.Summary {
				r := start(t, config(srv), filepath.Join(dir, "state"), out, fmt.Sprint("n", n))
				defer r.close()
				if err := r.r.Nightly(context.Background(), engine.NightlyOptions{Journals: []int64{j}, StopAfterKnownPages: 1, MaxPages: maxPages, Stop: stop}); err != nil {
					t.Fatal(err)
				}
				return r.r.Summary()
			}
			var stop chan struct{}
			switch tc {
			case "failed": // night 1 reads all 10 pages; 10 new pages arrive; page 6 fails once
				night(1, nil)
				listing = append(ids("8300", 200), listing...)
				site.SetListing(j, listing, 20)
				site.Inject(testsite.PagePath(j, 6), testsite.Fault{Kind: testsite.Status, Status: 403})
			case "failed-with-mark": // a mark at page 3, then page 6 fails once past it
				maxPages = 3
				night(1, nil)
				maxPages = 50
				site.Inject(testsite.PagePath(j, 6), testsite.Fault{Kind: testsite.Status, Status: 403})
			case "stopped": // the first signal arrives while page 4 is served
				stop = make(chan struct{})
				site.AfterServe(testsite.PagePath(j, 4), func() { close(stop) })
			}
			s := night(2, stop)
			if iw := s.IncompleteWalks(); len(iw) != 1 || iw[0].Why == engine.WhyMaxPages {
				t.Errorf("the cut walk: incomplete walks %+v", iw)
			}
			for n := 3; n <= 5; n++ {
				night(n, nil)
			}
			deliveredOnce(t, out, listing)
		})
	}
}

// Failures in a row open the host's circuit: the crawl waits out the
// cooldown, probes, and carries on when the host is back.
func TestBreakerOpensAndRecovers(t *testing.T) {
	site, srv := newSite(t)
	p := testsite.PagePath(501422, 1)
	site.Inject(p, testsite.Fault{Kind: testsite.Status, Status: 503}, testsite.Fault{Kind: testsite.Status, Status: 503},
		testsite.Fault{Kind: testsite.Status, Status: 503})
	cfg := config(srv)
	cfg.BreakerThreshold, cfg.BreakerCooldown = 2, 20*time.Millisecond
	cfg.Retry.MaxAttempts = 8
	dir := t.TempDir()
	r := start(t, cfg, filepath.Join(dir, "state"), filepath.Join(dir, "p.jsonl"), "r")
	defer r.close()
	err := r.r.Backfill(context.Background(), engine.BackfillOptions{Journals: []int64{501422}, From: 1, To: 1})
	sum := r.r.Summary()
	if err != nil || sum.Done.Load() != 1 {
		t.Fatalf("%s (err %v)", sum, err)
	}
	if got := sum.Retries(); got["circuit-open"] == 0 || got["http-5xx"] != 3 {
		t.Errorf("retries %v: want 3 http-5xx and at least one circuit-open wait", got)
	}
}

// An open-ended backfill stops at the last page its pager names as soon
// as that page is fetched: the page after it is never asked for, though
// the last page is committed in the background.
func TestBackfillEndsAtTheLastPage(t *testing.T) {
	site := testsite.New()
	site.SynthJournal(66, 5, 20)
	srv := httptest.NewServer(site)
	defer srv.Close()
	cfg := config(srv)
	cfg.Concurrency = 1
	dir := t.TempDir()
	r := start(t, cfg, filepath.Join(dir, "state"), filepath.Join(dir, "p.jsonl"), "r")
	err := r.r.Backfill(context.Background(), engine.BackfillOptions{Journals: []int64{66}, From: 1})
	sum := r.r.Summary()
	r.close()
	if err != nil || sum.Done.Load() != 5 || sum.PapersNew.Load() != 100 {
		t.Fatalf("%s (err %v)", sum, err)
	}
	if n := site.Hits(testsite.PagePath(66, 6)); n != 0 {
		t.Errorf("page 6 (past the last page) was asked for %d times", n)
	}
}

// An open-ended backfill of a site that answers every page number with the
// same papers and a "next" link stops after stop_after_repeat_pages such
// pages, having delivered each paper once; backfill.max_pages bounds an
// open range on a site whose every page is new.
func TestOpenBackfillStopsOnRepeatsAndMaxPages(t *testing.T) {
	same := testsite.SynthPage(808, 1, []string{"a1", "a2", "a3"})
	var hits atomic.Int64
	rep := testsite.New()
	rep.HandlePrefix("/literature_d808", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(same)
	}))
	srv := httptest.NewServer(rep)
	defer srv.Close()
	dir := t.TempDir()
	r := start(t, config(srv), filepath.Join(dir, "state"), filepath.Join(dir, "out.jsonl"), "rep")
	err := r.r.Backfill(context.Background(), engine.BackfillOptions{Journals: []int64{808}, From: 1, StopAfterRepeatPages: 20, MaxPages: 100_000})
	r.close()
	if err != nil {
		t.Fatal(err)
	}
	// 1 page of new papers, then 20 repeats; more were in flight or
	// waiting for their commit when the 20th repeat was committed: at most
	// the pool's pages, the committer's queue and the group it commits
	// (how many depends on how fast commits are on a loaded machine).
	if n := hits.Load(); n < 21 || n > 21+int64(config(srv).Concurrency)+2*16 {
		t.Errorf("%d pages fetched; want the walk to stop after 1 + 20 repeats", n)
	}
	if ids := readIDs(t, filepath.Join(dir, "out.jsonl")); len(ids) != 3 || ids["a1"] != 1 {
		t.Errorf("delivered %v; want a1-a3 once each", ids)
	}

	site := testsite.New()
	site.SynthJournal(809, 50, 2)
	srv2 := httptest.NewServer(site)
	defer srv2.Close()
	r = start(t, config(srv2), filepath.Join(dir, "state2"), filepath.Join(dir, "out2.jsonl"), "max")
	err = r.r.Backfill(context.Background(), engine.BackfillOptions{Journals: []int64{809}, From: 3, StopAfterRepeatPages: 20, MaxPages: 10})
	r.close()
	if err != nil {
		t.Fatal(err)
	}
	if got := r.r.Summary().Done.Load(); got != 10 || site.Hits(testsite.PagePath(809, 13)) != 0 {
		t.Errorf("pages 3- with max_pages 10: %d done, page 13 fetched %d times; want pages 3-12", got, site.Hits(testsite.PagePath(809, 13)))
	}
	if iw := r.r.Summary().IncompleteWalks(); len(iw) != 1 || iw[0].Page != 12 || iw[0].Why != engine.WhyBackfillMaxPages {
		t.Errorf("the walk cut at max_pages is said as %+v; want page 12, %s", iw, engine.WhyBackfillMaxPages)
	}
	// A walk whose limit falls on the listing's last page is whole.
	r = start(t, config(srv2), filepath.Join(dir, "state3"), filepath.Join(dir, "out3.jsonl"), "max-at-end")
	err = r.r.Backfill(context.Background(), engine.BackfillOptions{Journals: []int64{809}, From: 41, StopAfterRepeatPages: 20, MaxPages: 10})
	r.close()
	if err != nil {
		t.Fatal(err)
	}
	if iw := r.r.Summary().IncompleteWalks(); len(iw) != 0 {
		t.Errorf("pages 41- with max_pages 10 on a 50-page listing reached its end, but is said incomplete: %+v", iw)
	}
}

// A walk's pages are committed with the marks a crash there would need;
// a walk that then ends (its last page, or the listing's end) leaves no
// mark behind, so the next nightly does not go looking for a gap.
func TestAWalkThatEndsLeavesNoMark(t *testing.T) {
	for _, end := range []string{"last page", "past the end"} {
		t.Run(end, func(t *testing.T) {
			site := testsite.New()
			const j = 4348
			site.SetListing(j, ids("8400", 60), 20)
			if end == "past the end" {
				site.Inject(testsite.PagePath(j, 2), testsite.Fault{Kind: testsite.Status, Status: 404})
			}
			l, out := ledger.NewMemory(), &memSink{}
			r := memRun(site, l, out, "n1")
			err := r.Nightly(context.Background(), engine.NightlyOptions{Journals: []int64{j}, StopAfterKnownPages: 1, MaxPages: 10})
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
			if ws, err := l.WalkState(context.Background(), j); err != nil || ws.Marks != nil || len(ws.Head) == 0 {
				t.Errorf("state after a walk that ended at %s: %+v (%v), want a head and no marks", end, ws, err)
			}
		})
	}
}
