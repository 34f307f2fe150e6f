package crawler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/litcrawl/litcrawl/fetch"
	"github.com/litcrawl/litcrawl/internal/backoff"
	"github.com/litcrawl/litcrawl/parser"
	"github.com/litcrawl/litcrawl/site"
)

// Config is how the fetcher fetches.
type Config struct {
	// BaseURL is the site, e.g. https://m.booksci.cn. User info in it
	// (https://user:pw@host) is sent as HTTP Basic auth to the base URL's
	// host only, and never appears in a URL the fetcher hands out.
	BaseURL string
	// Scheme formats the listing URLs (nil: site.Default).
	Scheme *site.Scheme
	// AllowedHosts are the only hosts fetched (default: BaseURL's host).
	AllowedHosts []string
	// Concurrency is the requests in flight per host.
	Concurrency int
	// Delay and Jitter space the requests to one host.
	Delay, Jitter time.Duration
	// Timeout bounds one fetch.
	Timeout time.Duration
	// MaxBodyBytes caps a response.
	MaxBodyBytes int64
	// Retry bounds the retries of one page.
	Retry RetryPolicy
	// BreakerThreshold consecutive failures open a host's circuit for
	// BreakerCooldown.
	BreakerThreshold int
	BreakerCooldown  time.Duration
	// BreakerMaxOpens openings in a row make a host down: its remaining
	// pages fail at once (ErrHostDown). 0 never.
	BreakerMaxOpens int
	// Waits, when set, are told of every wait of longLimit or more (a
	// cooling circuit, Retry-After, Crawl-delay, backoff), for a progress
	// display; the log says each too.
	Waits *fetch.Waits
	// JournalDelays space the requests of some journals further: at
	// least this between two requests for the journal's pages, on top of
	// the host's Delay (which still holds between any two requests).
	JournalDelays map[int64]time.Duration
	// MaxCrawlDelay caps robots.txt's Crawl-delay (a larger one is
	// clamped, and logged). 0: no cap.
	MaxCrawlDelay time.Duration
	// SlowdownMax caps the extra delay soft blocks add.
	SlowdownMax time.Duration
	// UserAgent is sent with every request, and is the robots.txt agent.
	UserAgent string
	// Robots: honour robots.txt (and its Crawl-delay).
	Robots bool
	// Transport is the base transport (nil: one like http.DefaultTransport
	// that keeps Concurrency idle connections a host, not its 2); the
	// fetcher's rules wrap it. Archive recording and replay plug in here.
	Transport http.RoundTripper
	// Pacer, when set, is asked before every request to a host, on top of
	// the local limiter: a fleet of workers shares one politeness budget
	// through it.
	Pacer Pacer
	// Metrics, when set, count fetches and breaker states.
	Metrics *Metrics
}

// Pacer spaces the requests to a host across processes. Wait blocks until
// a request to host may start, or ctx ends; requests start at least the
// pacer's own delay apart, and at least gap apart (the host's robots.txt
// Crawl-delay and soft-block slowdown, as this process knows them).
type Pacer interface {
	Wait(ctx context.Context, host string, gap time.Duration) error
}

// Fetcher fetches listing pages politely and resiliently and parses them:
// robots.txt, the per-host circuit breaker, limiter and (fleet) pacer,
// retries with backoff, colly as the request executor, judging the
// response. It holds no store, no sink and no per-run state: one fetcher
// serves any number of runs, and is safe for concurrent use.
type Fetcher struct {
	cfg     Config
	log     *slog.Logger
	fetcher *fetcher
	robots  *robots
	breaker *Breaker

	mu       sync.Mutex
	limiters map[string]*hostLimiter
	journals map[int64]*rate.Limiter // JournalDelays', made at New
}

// New makes a fetcher.
func New(cfg Config, log *slog.Logger) (*Fetcher, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	base, err := site.CheckBaseURL(cfg.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("base URL %w", err)
	}
	auth := base.User
	base.User = nil
	cfg.BaseURL = strings.TrimRight(base.String(), "/")
	if cfg.Scheme == nil {
		cfg.Scheme = site.Default
	}
	if len(cfg.AllowedHosts) == 0 {
		cfg.AllowedHosts = []string{base.Hostname()}
	}
	if cfg.Transport == nil {
		cfg.Transport = pooledTransport(cfg.Concurrency)
	}
	rt := NewTransport(cfg.Transport, TransportConfig{AllowedHosts: cfg.AllowedHosts, Ports: defaultPorts(base),
		MaxBodyBytes: cfg.MaxBodyBytes, UserAgent: cfg.UserAgent, BasicAuth: auth, AuthOrigin: base.Scheme + "://" + base.Host})
	f := &Fetcher{cfg: cfg, log: log, fetcher: newFetcher(rt, cfg.Timeout),
		breaker: &Breaker{Threshold: cfg.BreakerThreshold, Cooldown: cfg.BreakerCooldown, MaxOpens: cfg.BreakerMaxOpens}, limiters: map[string]*hostLimiter{}}
	agent := cfg.UserAgent
	if agent == "" {
		agent = "litcrawl"
	}
	for j, d := range cfg.JournalDelays {
		if d > 0 {
			if f.journals == nil {
				f.journals = map[int64]*rate.Limiter{}
			}
			f.journals[j] = rate.NewLimiter(rate.Every(d), 1)
		}
	}
	f.robots = &robots{agent: agent, fetch: f.fetcher.fetch, retry: cfg.Retry, maxDelay: cfg.MaxCrawlDelay, log: log}
	return f, nil
}

// defaultPorts are the ports an allowed host name without one may be
// fetched on: the base URL's port when it names one, else 80 and 443 (a
// redirect from http to https stays allowed).
func defaultPorts(base *url.URL) []string {
	if p := base.Port(); p != "" {
		return []string{p}
	}
	return []string{"80", "443"}
}

// PageURL is the URL of a listing page.
func (f *Fetcher) PageURL(journal int64, page int) string {
	return f.cfg.Scheme.URL(f.cfg.BaseURL, journal, page)
}

func (f *Fetcher) limiter(host string) *hostLimiter {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.limiters[host]
	if l == nil {
		l = newHostLimiter(f.cfg.Concurrency, f.cfg.Delay, f.cfg.Jitter)
		f.limiters[host] = l
	}
	return l
}

// Fetch fetches and parses one listing page with the fetcher's retries,
// politeness and checks. It returns ErrEndOfListing for a page past the
// end (404 or 410 past page 1, or an empty listing page, which is then in
// the result), a permanent or exhausted *FetchError (or a pacer's error),
// or ctx's error.
func (f *Fetcher) Fetch(ctx context.Context, r fetch.Request) (fetch.Result, error) {
	res := fetch.Result{URL: f.PageURL(r.Journal, r.Page)}
	u, err := url.Parse(res.URL)
	if err != nil {
		return res, err
	}
	err = f.cfg.Retry.RetryWaiting(ctx, func(ctx context.Context, attempt int) error {
		if lim := f.journals[r.Journal]; lim != nil {
			// The journal's own delay: a long one says so, like every wait.
			res := lim.Reserve()
			if d := res.Delay(); d > 0 {
				if d >= longWait || f.cfg.JournalDelays[r.Journal] >= longWait {
					f.waiting(u.Hostname(), "journal-delay", r, d, "before fetching page %d of journal %d")
				}
				if err := backoff.Sleep(ctx, d); err != nil {
					res.Cancel()
					return err
				}
			}
		}
		var err error
		res.Tries = attempt
		res.Page, res.Body, err = f.fetchPage(ctx, u, r)
		if err != nil && backoff.IsRetryable(err) && r.OnTryFailed != nil {
			r.OnTryFailed(Cause(err))
		}
		return err
	}, func(err error, wait time.Duration) {
		// A long wait says what it waits for and until when: a run that
		// seems stalled says why.
		if wait >= longWait {
			f.waiting(u.Hostname(), Cause(err), r, wait, "before trying page %d of journal %d again")
		}
	})
	if err != nil && ctx.Err() == nil && Cause(err) == "network" && !f.fetcher.hasAnswered(u.Hostname()) {
		// Every try failed and nothing of the host has answered in this
		// fetcher's life: a wrong base URL, a name that does not resolve,
		// nothing listening. The caller may stop the run (ErrUnreachable).
		err = &FetchError{URL: u.String(), Err: &unreachableError{err: err}}
	}
	return res, err
}

// fetchPage makes one try at a page: robots.txt, the host's circuit, its
// politeness, the fetch, and the checks on what came back.
func (f *Fetcher) fetchPage(ctx context.Context, u *url.URL, r fetch.Request) (*parser.Page, []byte, error) {
	host := u.Hostname()
	lim := f.limiter(host)
	if f.cfg.Robots {
		allowed, crawlDelay, err := f.robots.check(ctx, u)
		if err != nil {
			return nil, nil, err
		}
		if !allowed {
			return nil, nil, &FetchError{URL: u.String(), Err: ErrRobotsDisallowed}
		}
		if lim.atLeast(crawlDelay) {
			f.log.Info(fmt.Sprintf("robots.txt of %s asks a Crawl-delay of %v: its requests go at least that far apart (fetch.delay is %v)", host, crawlDelay, f.cfg.Delay),
				"host", host, "crawl_delay_seconds", crawlDelay.Seconds(), "delay_seconds", f.cfg.Delay.Seconds())
		}
	}
	switch gate, wait := f.breaker.Allow(host, time.Now()); gate {
	case Wait:
		return nil, nil, &FetchError{URL: u.String(), RetryAfter: wait, Err: ErrCircuitOpen}
	case Down:
		return nil, nil, &FetchError{URL: u.String(), Err: ErrHostDown}
	}
	release, err := lim.acquire(ctx, func(d time.Duration, cause string) {
		if d >= longWait {
			f.waiting(host, cause, r, d, "before fetching page %d of journal %d")
		}
	})
	if err != nil {
		return nil, nil, err
	}
	if f.cfg.Pacer != nil {
		if err := f.cfg.Pacer.Wait(ctx, host, lim.gap()); err != nil {
			release()
			return nil, nil, fmt.Errorf("fleet pacer (the frontier's pace bucket): %w", err)
		}
	}
	fetched, err := f.fetcher.fetch(ctx, u.String())
	release()
	if fetched != nil {
		f.cfg.Metrics.fetch(fetched.Status, false)
	} else if ctx.Err() == nil {
		f.cfg.Metrics.fetch(0, true)
	}
	defer func() { f.cfg.Metrics.breaker(host, f.breaker.State(host, time.Now())) }()
	if err == nil {
		err = judge(fetched, time.Now())
	}
	if err != nil {
		var fe *FetchError
		if errors.As(err, &fe) && (fe.Status == http.StatusNotFound || fe.Status == http.StatusGone) && r.Page > 1 {
			f.breaker.Success(host) // the site answered: the listing just ends here
			return nil, nil, fetch.ErrEndOfListing
		}
		if ctx.Err() == nil && backoff.IsRetryable(err) {
			if f.failed(host, err) == "down" {
				f.log.Warn("host is down: its pages fail at once for the rest of the run (the next run tries them again)",
					"host", host, "breaker_opens", f.breaker.Opens(host), "error", err)
			}
		}
		return nil, nil, err
	}
	page, err := parser.Parse(fetched.Body, parser.Options{URL: u.String(), Journal: r.Journal, Page: r.Page,
		ContentType: fetched.ContentType, FetchedAt: fetched.FetchedAt, RunID: r.RunID})
	if err != nil {
		return nil, nil, &FetchError{URL: u.String(), Status: fetched.Status, Err: err}
	}
	if !page.IsListing() {
		lim.slowDown(f.cfg.SlowdownMax)
		f.failed(host, ErrSoftBlock)
		return nil, nil, &FetchError{URL: u.String(), Status: fetched.Status, Err: ErrSoftBlock}
	}
	f.breaker.Success(host)
	lim.recover()
	if r.Page > 1 && len(page.Records) == 0 {
		return page, fetched.Body, fetch.ErrEndOfListing
	}
	return page, fetched.Body, nil
}

// longWait is the least wait that is said in the log and shown on the
// progress line.
const longWait = 3 * time.Second

// waiting says a long wait: in the log, as text and fields (host, cause,
// journal, page, wait_seconds, until), and to the progress display.
// what says what comes after it, with the page and journal.
func (f *Fetcher) waiting(host, cause string, r fetch.Request, wait time.Duration, what string) {
	until := time.Now().Add(wait)
	f.cfg.Waits.Note(fetch.Wait{Host: host, Cause: cause, Journal: r.Journal, Page: r.Page, Until: until})
	f.log.Info(fmt.Sprintf("waiting %v for %s (%s), until %s, "+what,
		wait.Round(time.Second), host, cause, until.Format(time.TimeOnly), r.Page, r.Journal),
		"host", host, "journal", r.Journal, "page", r.Page, "cause", cause,
		"wait_seconds", wait.Seconds(), "until", until.UTC().Format(time.RFC3339))
}

// failed records a failure of host with the breaker and returns the
// circuit's state after it. A circuit that opens says so: which host, how
// long its requests wait and until when, so that a run that seems stalled
// says why.
func (f *Fetcher) failed(host string, cause error) string {
	now := time.Now()
	before := f.breaker.State(host, now)
	f.breaker.Failure(host, now)
	after := f.breaker.State(host, now)
	if after == "open" && before != "open" {
		until := now.Add(f.breaker.Cooldown)
		f.log.Warn(fmt.Sprintf("circuit open for %s after repeated failures: its requests wait %v, until %s",
			host, f.breaker.Cooldown, until.Format(time.TimeOnly)),
			"host", host, "wait_seconds", f.breaker.Cooldown.Seconds(), "until", until.UTC().Format(time.RFC3339), "error", cause)
	}
	return after
}
