package crawler_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/crawler"
	"github.com/litcrawl/litcrawl/fetch"
	"github.com/litcrawl/litcrawl/internal/testsite"
	"github.com/litcrawl/litcrawl/site"
)

// A fetcher needs no store and no sink: it fetches a page with its
// retries (telling each failed try), parses it with the journal and page it
// asked for, and says where the listing ends.
func TestFetchAPage(t *testing.T) {
	ts := testsite.New()
	ts.SynthJournal(808, 2, 5)
	ts.Inject(testsite.PagePath(808, 2), testsite.Fault{Kind: testsite.Status, Status: 503}, testsite.Fault{Kind: testsite.SoftBlock})
	srv := httptest.NewServer(ts)
	defer srv.Close()
	f, err := crawler.New(crawler.Config{BaseURL: srv.URL, Scheme: site.Default, Concurrency: 1, Timeout: 5 * time.Second, MaxBodyBytes: 1 << 20,
		Retry:            crawler.RetryPolicy{MaxAttempts: 4, BackoffBase: time.Millisecond, BackoffMax: 2 * time.Millisecond},
		BreakerThreshold: 10, BreakerCooldown: time.Millisecond, SlowdownMax: time.Millisecond, UserAgent: "litcrawl-test", Robots: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var failed []string
	res, err := f.Fetch(context.Background(), fetch.Request{Journal: 808, Page: 2, RunID: "r1",
		OnTryFailed: func(cause string) { failed = append(failed, cause) }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Tries != 3 || len(failed) != 2 || failed[0] != "http-5xx" || failed[1] != "soft-block" {
		t.Errorf("tries %d, failed tries %v; want 3 tries after a 503 and a soft block", res.Tries, failed)
	}
	r := res.Page.Records[0]
	if res.URL != srv.URL+"/literature_d808_2.htm" || r.Journal.ID != 808 || r.Source.Page != 2 || r.Source.RunID != "r1" || r.Source.URL != res.URL {
		t.Errorf("url %s, record journal %+v source %+v", res.URL, r.Journal, r.Source)
	}
	if _, err := f.Fetch(context.Background(), fetch.Request{Journal: 808, Page: 3}); !errors.Is(err, fetch.ErrEndOfListing) {
		t.Errorf("page 3 of 2: %v, want the end of the listing", err)
	}
	var fe *crawler.FetchError
	if _, err := f.Fetch(context.Background(), fetch.Request{Journal: 999, Page: 1}); !errors.As(err, &fe) || fe.Status != 404 {
		t.Errorf("a missing page 1: %v, want a permanent HTTP 404 (not the end)", err)
	}
}
