package crawler_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/crawler"
	"github.com/litcrawl/litcrawl/fetch"
	"github.com/litcrawl/litcrawl/internal/backoff"
	"github.com/litcrawl/litcrawl/internal/testsite"
	"github.com/litcrawl/litcrawl/site"
)

// quick is a fetcher configuration with tiny waits.
func quick(base string) crawler.Config {
	return crawler.Config{BaseURL: base, Scheme: site.Default, Concurrency: 1, Timeout: 5 * time.Second, MaxBodyBytes: 1 << 20,
		Retry:            crawler.RetryPolicy{MaxAttempts: 3, BackoffBase: time.Millisecond, BackoffMax: 2 * time.Millisecond, MaxRetryAfter: time.Minute},
		BreakerThreshold: 10, BreakerCooldown: time.Millisecond, SlowdownMax: time.Millisecond, UserAgent: "litcrawl-test", Robots: true}
}

func synthSite(t *testing.T, pages int) (*testsite.Site, *httptest.Server) {
	t.Helper()
	ts := testsite.New()
	ts.SynthJournal(808, pages, 5)
	srv := httptest.NewServer(ts)
	t.Cleanup(srv.Close)
	return ts, srv
}

// fetch.timeout is the bound of one fetch, not colly's 10 s default: a
// server that answers in 10.5 s is fine with a 20 s timeout.
func TestFetchTimeoutIsTheConfiguredOne(t *testing.T) {
	if testing.Short() {
		t.Skip("waits 10.5 s for a slow server")
	}
	t.Parallel()
	ts := testsite.New()
	ts.SynthJournal(808, 1, 5)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" {
			select {
			case <-time.After(10500 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
		ts.ServeHTTP(w, r)
	}))
	defer slow.Close()
	cfg := quick(slow.URL)
	cfg.Timeout, cfg.Retry.MaxAttempts = 20*time.Second, 1
	f, err := crawler.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Fetch(context.Background(), fetch.Request{Journal: 808, Page: 1}); err != nil {
		t.Fatalf("a page served in 10.5 s with a 20 s timeout: %v", err)
	}
}

// A robots.txt Crawl-delay beyond fetch.max_crawl_delay is clamped to it,
// and logged.
func TestCrawlDelayIsClamped(t *testing.T) {
	ts, srv := synthSite(t, 3)
	ts.SetRobots("User-agent: *\nCrawl-delay: 86400\n")
	cfg := quick(srv.URL)
	cfg.MaxCrawlDelay = 50 * time.Millisecond
	var logs bytes.Buffer
	f, err := crawler.New(cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	for page := 1; page <= 3; page++ {
		if _, err := f.Fetch(ctx, fetch.Request{Journal: 808, Page: page}); err != nil {
			t.Fatalf("page %d: %v (Crawl-delay 86400 not clamped?)", page, err)
		}
	}
	if took := time.Since(start); took < 100*time.Millisecond {
		t.Errorf("3 pages in %v: the clamped Crawl-delay (50ms) was not kept between them", took)
	}
	if !strings.Contains(logs.String(), "max_crawl_delay") {
		t.Errorf("the clamp was not logged: %s", logs.String())
	}
}

// A Retry-After beyond fetch.max_retry_after fails the page at once: one
// try, a permanent error naming the key; the next run tries the page again.
func TestRetryAfterBeyondTheCapFailsThePageAtOnce(t *testing.T) {
	ts, srv := synthSite(t, 1)
	ts.Inject(testsite.PagePath(808, 1), testsite.Fault{Kind: testsite.TooMany, RetryAfter: "86400"})
	f, err := crawler.New(quick(srv.URL), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := f.Fetch(ctx, fetch.Request{Journal: 808, Page: 1})
	if !errors.Is(err, crawler.ErrRetryAfterTooLong) || backoff.IsRetryable(err) || res.Tries != 1 {
		t.Fatalf("Retry-After 86400 with a 1m cap: %d tries, err %v; want one try and a permanent error", res.Tries, err)
	}
	if !strings.Contains(err.Error(), "fetch.max_retry_after") {
		t.Errorf("the error does not name the key: %v", err)
	}
	if _, err := f.Fetch(ctx, fetch.Request{Journal: 808, Page: 1}); err != nil {
		t.Errorf("the next try of the page: %v", err)
	}
}

// A host that keeps failing is down once its breaker opened
// breaker_max_opens times in a row: its other pages fail at once, without
// a request and without waiting a cooldown each.
func TestHostDownFailsTheRemainingPagesFast(t *testing.T) {
	var hits atomic.Int64
	down := testsite.New()
	down.HandlePrefix("/literature_d808", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	srv := httptest.NewServer(down)
	defer srv.Close()
	cfg := quick(srv.URL)
	cfg.Retry.MaxAttempts, cfg.BreakerThreshold, cfg.BreakerCooldown, cfg.BreakerMaxOpens = 4, 2, 100*time.Millisecond, 2
	var logs bytes.Buffer
	f, err := crawler.New(cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := f.Fetch(ctx, fetch.Request{Journal: 808, Page: 1}); !backoff.IsRetryable(err) && !errors.Is(err, crawler.ErrHostDown) {
		t.Fatalf("page 1: %v", err)
	}
	before := hits.Load()
	start := time.Now()
	for page := 2; page <= 50; page++ {
		res, err := f.Fetch(ctx, fetch.Request{Journal: 808, Page: page})
		if !errors.Is(err, crawler.ErrHostDown) || res.Tries != 1 {
			t.Fatalf("page %d of a down host: %d tries, %v; want ErrHostDown at once", page, res.Tries, err)
		}
	}
	if took := time.Since(start); took > 50*time.Millisecond || hits.Load() != before {
		t.Errorf("49 pages of a down host took %v and %d requests; want no wait and no request", took, hits.Load()-before)
	}
	if !strings.Contains(logs.String(), "host is down") {
		t.Errorf("going down was not logged: %s", logs.String())
	}
	// Each opening says which host waits, how long and until when.
	if !regexp.MustCompile(`circuit open for 127\.0\.0\.1 after repeated failures: its requests wait 100ms, until \d\d:\d\d:\d\d.* host=127\.0\.0\.1 wait_seconds=0\.1 until=\d{4}-`).MatchString(logs.String()) {
		t.Errorf("the circuit's opening does not say what waits and until when: %s", logs.String())
	}
}

// User info in the base URL is sent as Basic auth and appears in no URL
// the fetcher hands out: not the result's, not the records' source.
func TestBaseURLUserInfoIsAuthNotURL(t *testing.T) {
	ts := testsite.New()
	ts.SynthJournal(808, 1, 5)
	guarded := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "ann" || p != "s3cret" {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		ts.ServeHTTP(w, r)
	}))
	defer guarded.Close()
	base := strings.Replace(guarded.URL, "http://", "http://ann:s3cret@", 1)
	f, err := crawler.New(quick(base), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.Fetch(context.Background(), fetch.Request{Journal: 808, Page: 1})
	if err != nil {
		t.Fatalf("with Basic auth from the base URL: %v", err)
	}
	if strings.Contains(res.URL, "s3cret") || strings.Contains(res.URL, "ann@") || f.PageURL(808, 1) != guarded.URL+"/literature_d808.htm" {
		t.Errorf("page URL %q carries the user info", res.URL)
	}
	for _, r := range res.Page.Records {
		if strings.Contains(r.Source.URL, "s3cret") || strings.Contains(r.Source.Capture, "s3cret") {
			t.Fatalf("record source %+v carries the password", r.Source)
		}
	}
}

// A robots.txt that cannot be read after its retries fails the host's
// pages at once for the rest of the run: one round of robots.txt retries,
// not one per page.
func TestRobotsUnavailableFailsTheHostsPagesAtOnce(t *testing.T) {
	ts, srv := synthSite(t, 50)
	ts.HandlePrefix("/robots.txt", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	f, err := crawler.New(quick(srv.URL), nil)
	if err != nil {
		t.Fatal(err)
	}
	for page := 1; page <= 50; page++ {
		res, err := f.Fetch(context.Background(), fetch.Request{Journal: 808, Page: page})
		if err == nil || backoff.IsRetryable(err) || res.Tries != 1 || !strings.Contains(err.Error(), "robots.txt unavailable") {
			t.Fatalf("page %d: %d tries, %v; want one try and a permanent error", page, res.Tries, err)
		}
	}
	if n := ts.Hits("/robots.txt"); n != 3 {
		t.Errorf("robots.txt asked %d times, want the 3 tries of one round", n)
	}
}

// A Crawl-delay the robots.txt parser cannot read is read as the longest
// delay allowed (and logged), not a reason to fail every page; one too
// large for a duration is clamped like any long one.
func TestUnreadableCrawlDelayIsReadPolitely(t *testing.T) {
	for _, delay := range []string{"1s", "-5", "NaN", "1e300"} {
		ts, srv := synthSite(t, 2)
		ts.SetRobots("User-agent: *\nCrawl-delay: " + delay + "\n")
		cfg := quick(srv.URL)
		cfg.MaxCrawlDelay = 30 * time.Millisecond
		var logs bytes.Buffer
		f, err := crawler.New(cfg, slog.New(slog.NewTextHandler(&logs, nil)))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		for page := 1; page <= 2; page++ {
			if _, err := f.Fetch(ctx, fetch.Request{Journal: 808, Page: page}); err != nil {
				t.Fatalf("Crawl-delay %s: page %d: %v", delay, page, err)
			}
		}
		cancel()
		if took := time.Since(start); took < 30*time.Millisecond {
			t.Errorf("Crawl-delay %s: two pages in %v, want the longest delay allowed between them", delay, took)
		}
		if !strings.Contains(logs.String(), "max_crawl_delay") {
			t.Errorf("Crawl-delay %s: not logged: %s", delay, logs.String())
		}
	}
}

// A host that answered is never "has not answered once": a robots.txt over
// the body cap, a robots.txt gzip bomb, or response headers over the
// client's limit fail the host's pages with that cause (permanently, for
// the run), not with ErrUnreachable and "check the base URL".
func TestRobotsThatAnsweredBadlyIsNotUnreachable(t *testing.T) {
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zw.Write(bytes.Repeat([]byte("Disallow: /nothing\n"), 200_000)) // 3.8 MB from a few KB
	zw.Close()
	cases := map[string]http.HandlerFunc{
		"body over the cap": func(w http.ResponseWriter, r *http.Request) {
			w.Write(bytes.Repeat([]byte("# robots\n"), 300_000))
		},
		"gzip bomb": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(bomb.Bytes())
		},
		"headers over the limit": func(w http.ResponseWriter, r *http.Request) {
			big := strings.Repeat("x", 1<<20)
			for i := range 11 {
				w.Header().Set(fmt.Sprintf("X-Big-%d", i), big)
			}
			w.Write([]byte("User-agent: *\n"))
		},
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			ts, srv := synthSite(t, 2)
			ts.HandlePrefix("/robots.txt", h)
			f, err := crawler.New(quick(srv.URL), nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.Fetch(context.Background(), fetch.Request{Journal: 808, Page: 1})
			if err == nil || errors.Is(err, fetch.ErrUnreachable) || strings.Contains(err.Error(), "has not answered") || !strings.Contains(err.Error(), "robots.txt") {
				t.Fatalf("err = %v; want the robots.txt cause, not unreachable", err)
			}
		})
	}
}

// A wait of a few seconds or more before another try (here a server's
// Retry-After) says in the log what it waits for and until when.
func TestALongWaitSaysWhy(t *testing.T) {
	t.Parallel()
	ts, srv := synthSite(t, 1)
	ts.Inject(testsite.PagePath(808, 1), testsite.Fault{Kind: testsite.TooMany, RetryAfter: "3"})
	var logs bytes.Buffer // Fetch logs from its own goroutine
	f, err := crawler.New(quick(srv.URL), slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Fetch(context.Background(), fetch.Request{Journal: 808, Page: 1}); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`waiting 3s for 127\.0\.0\.1 \(http-429\), until \d\d:\d\d:\d\d, before trying page 1 of journal 808 again.* wait_seconds=3 until=\d{4}-`).MatchString(logs.String()) {
		t.Errorf("the wait is not said: %s", logs.String())
	}
}

// A journal's own delay (journals[].fetch.delay) spaces the requests for
// its pages, on top of the host's; other journals do not wait for it.
func TestJournalDelaySpacesItsPages(t *testing.T) {
	t.Parallel()
	ts := testsite.New()
	ts.SynthJournal(808, 3, 5)
	ts.SynthJournal(809, 3, 5)
	var mu sync.Mutex
	starts := map[string][]time.Time{}
	srv := httptest.NewServer(ts)
	defer srv.Close()
	cfg := quick(srv.URL)
	cfg.JournalDelays = map[int64]time.Duration{808: 150 * time.Millisecond}
	// When the crawler sends each request (its base transport is called
	// once the pace lets it go), not when the server reads it: a loaded
	// machine delays the reading of one more than another's.
	cfg.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		j := "other"
		if strings.Contains(r.URL.Path, "d808") {
			j = "808"
		} else if strings.Contains(r.URL.Path, "d809") {
			j = "809"
		}
		starts[j] = append(starts[j], time.Now())
		mu.Unlock()
		return http.DefaultTransport.RoundTrip(r)
	})
	f, err := crawler.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for p := 1; p <= 3; p++ {
		for _, j := range []int64{808, 809} {
			if _, err := f.Fetch(context.Background(), fetch.Request{Journal: j, Page: p}); err != nil {
				t.Fatal(err)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	s := starts["808"]
	if len(s) != 3 {
		t.Fatalf("journal 808: %d requests", len(s))
	}
	for i := 1; i < len(s); i++ {
		if gap := s[i].Sub(s[i-1]); gap < 140*time.Millisecond {
			t.Errorf("journal 808: requests %d and %d %v apart, want at least its delay of 150ms", i, i+1, gap)
		}
	}
	if len(starts["809"]) != 3 {
		t.Errorf("journal 809: %d requests", len(starts["809"]))
	}
}

// waitsSeen is a log handler that, at each "waiting" line, reads what the
// progress display would show then.
type waitsSeen struct {
	slog.Handler
	waits *fetch.Waits
	mu    *sync.Mutex
	seen  *[]fetch.Wait
}

func (h waitsSeen) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "waiting") {
		if w, _, ok := h.waits.Longest(); ok {
			h.mu.Lock()
			*h.seen = append(*h.seen, w)
			h.mu.Unlock()
		}
	}
	return h.Handler.Handle(ctx, r)
}

// A robots.txt Crawl-delay longer than fetch.delay is said once, and each
// wait it makes of a few seconds or more is said in the log (host, cause,
// until when, for which page, as fields too) and shown to the progress
// display while it lasts.
func TestCrawlDelayWaitSaysWhy(t *testing.T) {
	t.Parallel()
	ts, srv := synthSite(t, 2)
	ts.SetRobots("User-agent: *\nCrawl-delay: 4\n")
	var logs bytes.Buffer
	var mu sync.Mutex
	var seen []fetch.Wait
	cfg := quick(srv.URL)
	cfg.Waits = &fetch.Waits{}
	cfg.MaxCrawlDelay = time.Minute
	h := waitsSeen{Handler: slog.NewJSONHandler(&logs, nil), waits: cfg.Waits, mu: &mu, seen: &seen}
	f, err := crawler.New(cfg, slog.New(h))
	if err != nil {
		t.Fatal(err)
	}
	for p := 1; p <= 2; p++ {
		if _, err := f.Fetch(context.Background(), fetch.Request{Journal: 808, Page: p}); err != nil {
			t.Fatal(err)
		}
	}
	out := logs.String()
	if !strings.Contains(out, `"msg":"robots.txt of 127.0.0.1 asks a Crawl-delay of 4s: its requests go at least that far apart (fetch.delay is 0s)"`) {
		t.Errorf("the Crawl-delay is not said: %s", out)
	}
	if !regexp.MustCompile(`"msg":"waiting 4s for 127\.0\.0\.1 \(crawl-delay\), until \d\d:\d\d:\d\d, before fetching page 2 of journal 808","host":"127.0.0.1","journal":808,"page":2,"cause":"crawl-delay","wait_seconds":\d\.\d+,"until":"\d{4}-`).MatchString(out) {
		t.Errorf("the wait is not said with its fields: %s", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0].Host != "127.0.0.1" || seen[0].Cause != "crawl-delay" || seen[0].Page != 2 || time.Since(seen[0].Until).Abs() > time.Second {
		t.Errorf("the progress display saw %+v", seen)
	}
}

// A journal's own long delay says what it waits for, like every wait.
func TestJournalDelayWaitSaysWhy(t *testing.T) {
	t.Parallel()
	_, srv := synthSite(t, 2)
	var logs bytes.Buffer
	cfg := quick(srv.URL)
	cfg.JournalDelays = map[int64]time.Duration{808: 3 * time.Second}
	cfg.Waits = &fetch.Waits{}
	f, err := crawler.New(cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	for p := 1; p <= 2; p++ {
		if _, err := f.Fetch(context.Background(), fetch.Request{Journal: 808, Page: p}); err != nil {
			t.Fatal(err)
		}
	}
	if !regexp.MustCompile(`waiting 3s for 127\.0\.0\.1 \(journal-delay\), until \d\d:\d\d:\d\d, before fetching page 2 of journal 808`).MatchString(logs.String()) {
		t.Errorf("the journal's delay is not said: %s", logs.String())
	}
}

// roundTripFunc is a function as an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
