package testsite_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/internal/testsite"
	"github.com/litcrawl/litcrawl/parser"
	listing "github.com/litcrawl/litcrawl/site"
)

func serve(t *testing.T) (*testsite.Site, *httptest.Server) {
	t.Helper()
	site := testsite.New()
	n, err := site.LoadDir("../../fixtures/html")
	if err != nil || n != 5 {
		t.Fatalf("loaded %d pages: %v", n, err)
	}
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)
	return site, srv
}

func get(t *testing.T, c *http.Client, url string) (*http.Response, []byte, error) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// Fixture pages are served under the site's scheme and parse as listings.
func TestServesPagesUnderTheSiteScheme(t *testing.T) {
	_, srv := serve(t)
	for _, p := range []string{"/literature_d501422.htm", "/literature_d501422_2.htm", "/literature_d3342_3.htm"} {
		resp, body, err := get(t, srv.Client(), srv.URL+p)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", p, resp, err)
		}
		journal, pageNo, ok := listing.Default.ParseURL(p)
		page, _ := parser.Parse(body, parser.Options{URL: "https://m.booksci.cn" + p, Journal: journal, Page: pageNo})
		if !ok || len(page.Records) == 0 || page.PageNo != pageNo || page.Records[0].Journal.ID != journal {
			t.Errorf("%s: %d records, page %d, journal %d", p, len(page.Records), page.PageNo, journal)
		}
	}
	if resp, _, _ := get(t, srv.Client(), srv.URL+"/literature_d501422_99.htm"); resp.StatusCode != 404 {
		t.Errorf("a page past the end: %d, want 404", resp.StatusCode)
	}
}

func TestFaultsInOrderThenThePage(t *testing.T) {
	site, srv := serve(t)
	p := testsite.PagePath(501422, 2)
	site.Inject(p,
		testsite.Fault{Kind: testsite.Status, Status: 503},
		testsite.Fault{Kind: testsite.TooMany, RetryAfter: "7"},
		testsite.Fault{Kind: testsite.SoftBlock},
		testsite.Fault{Kind: testsite.RedirectAway, Location: "https://other.example/x"},
	)
	c := srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, _, _ := get(t, c, srv.URL+p)
	if resp.StatusCode != 503 {
		t.Errorf("1st: %d", resp.StatusCode)
	}
	resp, _, _ = get(t, c, srv.URL+p)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" {
		t.Errorf("2nd: %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	resp, body, _ := get(t, c, srv.URL+p)
	if page, _ := parser.Parse(body, parser.Options{}); resp.StatusCode != 200 || page.IsListing() {
		t.Errorf("3rd (soft block): %d, listing=%v", resp.StatusCode, page.IsListing())
	}
	resp, _, _ = get(t, c, srv.URL+p)
	if resp.StatusCode != 302 || resp.Header.Get("Location") != "https://other.example/x" {
		t.Errorf("4th: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, body, _ = get(t, c, srv.URL+p)
	if page, _ := parser.Parse(body, parser.Options{}); resp.StatusCode != 200 || len(page.Records) != 10 {
		t.Errorf("5th: %d with %d records", resp.StatusCode, len(page.Records))
	}
	if site.Hits(p) != 5 {
		t.Errorf("hits = %d", site.Hits(p))
	}
}

func TestConnectionFaults(t *testing.T) {
	site, srv := serve(t)
	p := testsite.PagePath(501422, 1)
	site.Inject(p, testsite.Fault{Kind: testsite.Reset}, testsite.Fault{Kind: testsite.Truncate})
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	if _, _, err := get(t, c, srv.URL+p); err == nil {
		t.Error("reset: no error")
	}
	if _, _, err := get(t, c, srv.URL+p); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated body: %v, want unexpected EOF", err)
	}
}

// A hanging response ends when the client gives up; nothing sleeps.
func TestHangEndsWithTheClient(t *testing.T) {
	site, srv := serve(t)
	p := testsite.PagePath(501422, 1)
	site.Inject(p, testsite.Fault{Kind: testsite.Hang})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+p, nil)
	if _, err := srv.Client().Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hang: %v", err)
	}
}

func TestRobots(t *testing.T) {
	site, srv := serve(t)
	if resp, _, _ := get(t, srv.Client(), srv.URL+"/robots.txt"); resp.StatusCode != 404 {
		t.Errorf("no robots.txt: %d", resp.StatusCode)
	}
	site.SetRobots("User-agent: *\nDisallow: /literature_d3342\nCrawl-delay: 2\n")
	_, body, _ := get(t, srv.Client(), srv.URL+"/robots.txt")
	if !strings.Contains(string(body), "Crawl-delay: 2") {
		t.Errorf("robots.txt = %q", body)
	}
}

// A synthesized page parses into exactly its papers, with unique ids.
func TestSynth(t *testing.T) {
	body := testsite.Synth(77, 3, 20)
	page, err := parser.Parse(body, parser.Options{URL: "https://m.booksci.cn/literature_d77_3.htm"})
	if err != nil || len(page.Records) != 20 || !page.HeadingSeen || !page.FooterSeen {
		t.Fatalf("records=%d err=%v", len(page.Records), err)
	}
	for i, r := range page.Records {
		if r.ID != testsite.SynthID(77, 3, i) || len(r.Warnings) != 0 || r.Citations == nil || *r.Citations != i {
			t.Errorf("record %d: %+v", i, r)
		}
	}
	if len(body) < 40<<10 {
		t.Errorf("a 20-paper page is %d bytes; live pages are about 60 KB", len(body))
	}
}

// A fault profile is deterministic for a seed, differs between seeds, and
// injects roughly its rates.
func TestProfilesDeterministicPerSeed(t *testing.T) {
	run := func(seed int64) []int {
		site := testsite.New()
		site.SynthJournal(5, 40, 2)
		p := testsite.Profiles["hostile"]
		p.SlowBy = time.Millisecond // the slow path, without the wait
		site.SetProfile(p, seed)
		srv := httptest.NewServer(site)
		defer srv.Close()
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		var codes []int
		for p := 1; p <= 40; p++ {
			resp, body, err := get(t, c, srv.URL+testsite.PagePath(5, p))
			switch {
			case err != nil:
				codes = append(codes, -1)
			case resp.StatusCode == 200 && !strings.Contains(string(body), "最新文献"):
				codes = append(codes, -2) // soft block
			default:
				codes = append(codes, resp.StatusCode)
			}
		}
		return codes
	}
	a, b, other := run(7), run(7), run(8)
	if !slices.Equal(a, b) {
		t.Fatalf("same seed, different faults:\n%v\n%v", a, b)
	}
	if slices.Equal(a, other) {
		t.Error("another seed gave the same faults")
	}
	faults := 0
	for _, c := range a {
		if c != 200 {
			faults++
		}
	}
	if faults < 8 || faults > 36 { // hostile: ~55% of requests
		t.Errorf("%d faults in 40 requests under the hostile profile", faults)
	}
	if _, err := testsite.ProfileNamed("chaos"); err == nil || !strings.Contains(err.Error(), "none, flaky, hostile or attack") {
		t.Errorf("unknown profile: %v", err)
	}
}

// Under a profile, the tries of one page meet independent faults: a page
// that failed is not doomed to fail again.
func TestProfileRetriesAreIndependent(t *testing.T) {
	site := testsite.New()
	site.SynthJournal(5, 1, 1)
	site.SetProfile(testsite.Profile{Name: "half", Status5xx: 0.5}, 3)
	srv := httptest.NewServer(site)
	defer srv.Close()
	ok, failed := 0, 0
	for range 200 {
		resp, _, err := get(t, srv.Client(), srv.URL+testsite.PagePath(5, 1))
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == 200 {
			ok++
		} else {
			failed++
		}
	}
	if ok < 60 || failed < 60 {
		t.Errorf("200 tries of one page at a 50%% fault rate: %d ok, %d failed", ok, failed)
	}
}

// The synthetic pages carry the site's header (its name, search and login
// links, the breadcrumb) above the list, as the benchmark crawls them:
// none of it becomes a field of any paper.
func TestSynthHeaderNoField(t *testing.T) {
	page, err := parser.Parse(testsite.SynthPage(7, 1, []string{"1", "2", "3"}), parser.Options{})
	if err != nil || len(page.Records) != 3 {
		t.Fatalf("%v, %d records", err, len(page.Records))
	}
	for _, r := range page.Records {
		if f, v := parser.FurnitureIn(r); f != "" || r.AbstractCN != "" {
			t.Errorf("record %d: %s %q, abstract_cn %q", r.Source.Position, f, v, r.AbstractCN)
		}
	}
}
