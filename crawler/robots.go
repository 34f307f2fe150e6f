package crawler

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
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
		return nil, fmt.Errorf("robots.txt of %s: %w", base, err)
	}
	g := data.FindGroup(r.agent)
	if g != nil && r.maxDelay > 0 && (g.CrawlDelay > r.maxDelay || g.CrawlDelay < 0) { // < 0: a huge value overflowed
		if r.log != nil {
			r.log.Warn("robots.txt Crawl-delay is beyond fetch.max_crawl_delay: clamped", "host", base,
				"crawl_delay", g.CrawlDelay, "max_crawl_delay", r.maxDelay)
		}
		g.CrawlDelay = r.maxDelay
	}
	return g, nil
}
