package engine_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/crawler"
	"github.com/litcrawl/litcrawl/fetch"
	"github.com/litcrawl/litcrawl/internal/backoff"
	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/internal/testsite"
	"github.com/litcrawl/litcrawl/parser"
	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/sink"
)

// fakeFetcher serves the walk-rule tests without sockets, colly or a
// state file: it asks the site's handler in-process and parses the page as
// the crawler does, with the crawler's outcomes (a 404 or an empty page past
// page 1 ends the listing; 429 and 5xx are tried again, up to attempts
// tries; another status fails the page at once).
type fakeFetcher struct {
	h        http.Handler
	attempts int
}

func (f fakeFetcher) Fetch(ctx context.Context, r fetch.Request) (fetch.Result, error) {
	res := fetch.Result{URL: "http://site.test" + testsite.PagePath(r.Journal, r.Page)}
	for res.Tries = 1; ; res.Tries++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		page, err := f.try(r, res.URL)
		if err == nil || err == fetch.ErrEndOfListing {
			res.Page = page
			return res, err
		}
		if re, ok := err.(retryable); !ok || res.Tries >= f.attempts {
			return res, err
		} else if r.OnTryFailed != nil {
			r.OnTryFailed(re.cause)
		}
	}
}

type retryable struct{ cause string }

func (e retryable) Error() string { return "fake: " + e.cause }

// Unwrap marks it retryable, as the crawler marks a 5xx or a 429.
func (e retryable) Unwrap() error { return backoff.ErrRetryable }

func (f fakeFetcher) try(r fetch.Request, url string) (*parser.Page, error) {
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, url, nil))
	switch st := rec.Code; {
	case (st == http.StatusNotFound || st == http.StatusGone) && r.Page > 1:
		return nil, fetch.ErrEndOfListing
	case st == http.StatusTooManyRequests:
		return nil, retryable{"http-429"}
	case st >= 500:
		return nil, retryable{"http-5xx"}
	case st != http.StatusOK:
		return nil, fmt.Errorf("HTTP %d", st)
	}
	page, err := parser.Parse(rec.Body.Bytes(), parser.Options{URL: url, Journal: r.Journal, Page: r.Page,
		ContentType: rec.Header().Get("Content-Type"), FetchedAt: time.Now(), RunID: r.RunID})
	if err != nil {
		return nil, err
	}
	if r.Page > 1 && len(page.Records) == 0 {
		return page, fetch.ErrEndOfListing
	}
	return page, nil
}

// memSink keeps what it is given, in memory.
type memSink struct {
	mu   sync.Mutex
	recs []record.Record
}

func (s *memSink) Write(_ context.Context, recs []record.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs = append(s.recs, recs...)
	return nil
}

func (s *memSink) Close() error { return nil }

// ids counts the deliveries of each paper id.
func (s *memSink) ids() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := map[string]int{}
	for _, r := range s.recs {
		n[r.ID]++
	}
	return n
}

var _ sink.Sink = (*memSink)(nil)

// memRun is a run over the fake fetcher, an in-memory ledger and sink
// (kept across runs by the caller, as a state directory and a file are).
func memRun(h http.Handler, l *ledger.Memory, out *memSink, runID string) *engine.Run {
	return engine.Start(engine.Options{ID: runID, Fetcher: fakeFetcher{h: h, attempts: 6}, Ledger: l, Sink: out, Concurrency: 2})
}

// TestFakeFetcherAgreesWithTheCrawler: the fake answers a site as the
// crawler does (the same records, the listing's end, a failed page), so the
// walk rules tested on it hold over HTTP too.
func TestFakeFetcherAgreesWithTheCrawler(t *testing.T) {
	site, srv := newSite(t)
	site.Inject(testsite.PagePath(501422, 2), testsite.Fault{Kind: testsite.Status, Status: 503})
	site.Inject(testsite.PagePath(501422, 3), testsite.Fault{Kind: testsite.Status, Status: 403})
	real, err := crawler.New(config(srv), nil)
	if err != nil {
		t.Fatal(err)
	}
	fake := fakeFetcher{h: site, attempts: 6}
	for p := 1; p <= 5; p++ {
		var causes []string
		req := fetch.Request{Journal: 501422, Page: p, RunID: "r", OnTryFailed: func(c string) { causes = append(causes, c) }}
		got, gerr := fake.Fetch(context.Background(), req)
		fakeCauses := causes
		causes = nil
		if p == 3 {
			site.Inject(testsite.PagePath(501422, 3), testsite.Fault{Kind: testsite.Status, Status: 403})
		}
		if p == 2 {
			site.Inject(testsite.PagePath(501422, 2), testsite.Fault{Kind: testsite.Status, Status: 503})
		}
		want, werr := real.Fetch(context.Background(), req)
		if (gerr == nil) != (werr == nil) || (gerr == fetch.ErrEndOfListing) != (werr == fetch.ErrEndOfListing) {
			t.Fatalf("page %d: fake error %v, crawler error %v", p, gerr, werr)
		}
		if fmt.Sprint(fakeCauses) != fmt.Sprint(causes) {
			t.Errorf("page %d: fake retries %v, crawler retries %v", p, fakeCauses, causes)
		}
		if want.Page == nil {
			continue
		}
		if got.Page == nil || len(got.Page.Records) != len(want.Page.Records) {
			t.Fatalf("page %d: fake %d records, crawler %d", p, len(got.Page.Records), len(want.Page.Records))
		}
		for i := range want.Page.Records {
			if got.Page.Records[i].ID != want.Page.Records[i].ID {
				t.Errorf("page %d record %d: fake %s, crawler %s", p, i, got.Page.Records[i].ID, want.Page.Records[i].ID)
			}
		}
	}
}
