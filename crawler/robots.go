package crawler

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/temoto/robotstxt"
)

// robots fetches and caches each host's robots.txt for the run, through
// the same transport (size cap, allowed hosts) and retry policy as pages.
// A missing robots.txt (4xx) allows everything; one that still fails after
// the retries makes the host's pages fail retryably for this run, so nothing
// is committed on a guess.
type robots struct {
	agent string
	fetch func(ctx context.Context, url string) (*Fetched, error)
	retry RetryPolicy
	// maxDelay caps the Crawl-delay (0: no cap); a larger one is clamped
	// and logged.
	maxDelay time.Duration
	log      *slog.Logger

	mu    sync.Mutex
	hosts map[string]*robotsEntry
}

type robotsEntry struct {
	once  sync.Once
	group *robotstxt.Group
	err   error
}

// check reports whether u may be fetched, and the host's Crawl-delay.
func (r *robots) check(ctx context.Context, u *url.URL) (allowed bool, crawlDelay time.Duration, err error) {
	key := u.Scheme + "://" + u.Host
	r.mu.Lock()
	if r.hosts == nil {
		r.hosts = map[string]*robotsEntry{}
	}
	e := r.hosts[key]
	if e == nil {
		e = &robotsEntry{}
		r.hosts[key] = e
	}
	r.mu.Unlock()
	e.once.Do(func() {
		e.group, e.err = r.load(ctx, key)
		if e.err != nil && ctx.Err() == nil {
			// Already tried with the retry policy: the host's pages fail at
			// once for the rest of the run (the next run tries again),
			// instead of each page trying again with the same answer.
			e.err = &FetchError{URL: key + "/robots.txt", Err: robotsUnavailable{e.err}}
		}
	})
	if e.err != nil {
		return false, 0, e.err
	}
	if e.group == nil {
		return true, 0, nil
	}
	return e.group.Test(u.RequestURI()), e.group.CrawlDelay, nil
}

func (r *robots) load(ctx context.Context, base string) (*robotstxt.Group, error) {
	var f *Fetched
	err := r.retry.Retry(ctx, func(ctx context.Context, _ int) error {
		var err error
		if f, err = r.fetch(ctx, base+"/robots.txt"); err != nil {
			return err
		}
		if f.Status >= 400 && f.Status < 500 && f.Status != 429 {
			return nil // no robots.txt: everything is allowed
		}
		return judge(&Fetched{URL: f.URL, Status: f.Status, Header: f.Header, ContentType: "text/plain"}, time.Now())
	})
	if err != nil {
		return nil, fmt.Errorf("robots.txt of %s: %w", base, err)
	}
	if f.Status >= 400 {
		return nil, nil
	}
	data, err := robotstxt.FromBytes(f.Body)
	if err != nil {
		// A Crawl-delay the parser cannot read ("1s", "-5", "NaN") would
		// fail every page of the host, run after run: it is read as the
		// longest delay allowed instead (the polite reading), and logged.
		body, fixed := r.politeDelays(f.Body)
		if fixed > 0 {
			data, err = robotstxt.FromBytes(body)
			if err == nil && r.log != nil {
				r.log.Warn("robots.txt has Crawl-delay values that are not numbers of seconds: read as fetch.max_crawl_delay",
					"host", base, "lines", fixed, "max_crawl_delay", r.maxDelay)
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("robots.txt of %s: %w", base, err)
	}
	g := data.FindGroup(r.agent)
	if g != nil && g.CrawlDelay < 0 {
		g.CrawlDelay = maxCrawlDelay // a huge value overflowed
	}
	if g != nil && r.maxDelay > 0 && g.CrawlDelay > r.maxDelay {
		if r.log != nil {
			r.log.Warn("robots.txt Crawl-delay is beyond fetch.max_crawl_delay: clamped", "host", base,
				"crawl_delay", g.CrawlDelay, "max_crawl_delay", r.maxDelay)
		}
		g.CrawlDelay = r.maxDelay
	}
	return g, nil
}

// maxCrawlDelay is what a Crawl-delay too large for a duration reads as
// (then clamped to fetch.max_crawl_delay like any long one).
const maxCrawlDelay = 24 * time.Hour

// politeDelays rewrites each Crawl-delay line whose value is not a
// non-negative number of seconds to the longest delay allowed (or drops
// it when there is no cap), and says how many it changed.
func (r *robots) politeDelays(body []byte) ([]byte, int) {
	lines := strings.Split(string(body), "\n")
	fixed := 0
	for i, l := range lines {
		key, val, ok := strings.Cut(l, ":")
		if !ok || !strings.EqualFold(strings.TrimSpace(key), "crawl-delay") {
			continue
		}
		val, _, _ = strings.Cut(val, "#")
		if v, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil && v >= 0 && !math.IsInf(v, 0) {
			continue
		}
		fixed++
		if r.maxDelay > 0 {
			lines[i] = fmt.Sprintf("Crawl-delay: %g", r.maxDelay.Seconds())
		} else {
			lines[i] = ""
		}
	}
	return []byte(strings.Join(lines, "\n")), fixed
}
