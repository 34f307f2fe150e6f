package crawler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/conc/pool"

	"github.com/litcrawl/litcrawl/parser"
	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/sink"
	"github.com/litcrawl/litcrawl/state"
)

// Config is how the crawler fetches.
type Config struct {
	// BaseURL is the site, e.g. https://m.booksci.cn.
	BaseURL string
	// FirstPage and PageN are path templates with {journal} and {page}.
	FirstPage, PageN string
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
	// SlowdownMax caps the extra delay soft blocks add.
	SlowdownMax time.Duration
	// UserAgent is sent with every request, and is the robots.txt agent.
	UserAgent string
	// Robots: honour robots.txt (and its Crawl-delay).
	Robots bool
	// Transport is the base transport (nil: http.DefaultTransport); the
	// crawler's rules wrap it.
	Transport http.RoundTripper
	// Pacer, when set, is asked before every request to a host, on top of
	// the local limiter: a fleet of workers shares one politeness budget
	// through it.
	Pacer Pacer
	// Metrics, when set, count pages, fetches, retries and breaker states.
	Metrics *Metrics
}

// Pacer spaces the requests to a host across processes. Wait blocks until
// a request to host may start, or ctx ends.
type Pacer interface {
	Wait(ctx context.Context, host string) error
}

// Crawler fetches listing pages, parses them, delivers their records and
// commits them. It is safe for one crawl at a time.
type Crawler struct {
	cfg     Config
	store   *state.Store
	out     sink.Sink
	log     *slog.Logger
	fetcher *fetcher
	robots  *robots
	breaker *Breaker

	mu       sync.Mutex
	limiters map[string]*hostLimiter

	commitQ chan *commitReq // the run's committer (see startCommitter)
}

// New makes a crawler writing to out and remembering in store. If out can
// roll back and the store holds a token, out is restored to it first, so a
// crash between a delivery and its commit leaves nothing twice.
func New(ctx context.Context, cfg Config, store *state.Store, out sink.Sink, log *slog.Logger) (*Crawler, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	base, err := url.Parse(cfg.BaseURL)
	if err != nil || base.Scheme == "" || base.Host == "" {
		return nil, fmt.Errorf("base URL %q: expected an absolute URL such as https://m.booksci.cn", cfg.BaseURL)
	}
	if len(cfg.AllowedHosts) == 0 {
		cfg.AllowedHosts = []string{base.Hostname()}
	}
	rt := NewTransport(cfg.Transport, TransportConfig{AllowedHosts: cfg.AllowedHosts, MaxBodyBytes: cfg.MaxBodyBytes, UserAgent: cfg.UserAgent})
	c := &Crawler{cfg: cfg, store: store, out: out, log: log, fetcher: newFetcher(rt, cfg.Timeout),
		breaker: &Breaker{Threshold: cfg.BreakerThreshold, Cooldown: cfg.BreakerCooldown}, limiters: map[string]*hostLimiter{}}
	agent := cfg.UserAgent
	if agent == "" {
		agent = "litcrawl"
	}
	c.robots = &robots{agent: agent, fetch: c.fetcher.fetch, retry: cfg.Retry}
	if r, ok := out.(sink.Restorer); ok && store != nil {
		tok, err := store.SinkToken()
		if err != nil {
			return nil, err
		}
		if tok != nil {
			if err := r.Restore(ctx, tok); err != nil {
				return nil, fmt.Errorf("restore the sinks to the last commit: %w", err)
			}
		}
	}
	return c, nil
}

// PageURL is the URL of a listing page.
func (c *Crawler) PageURL(journal int64, page int) string {
	tmpl := c.cfg.PageN
	if page <= 1 {
		tmpl = c.cfg.FirstPage
	}
	p := strings.NewReplacer("{journal}", strconv.FormatInt(journal, 10), "{page}", strconv.Itoa(page)).Replace(tmpl)
	return strings.TrimRight(c.cfg.BaseURL, "/") + p
}

func (c *Crawler) limiter(host string) *hostLimiter {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.limiters[host]
	if l == nil {
		l = newHostLimiter(c.cfg.Concurrency, c.cfg.Delay, c.cfg.Jitter)
		c.limiters[host] = l
	}
	return l
}

// maxFailedInRow stops an open-ended walk that only meets failures (a site
// that answers every page number with an error would otherwise be walked
// forever).
const maxFailedInRow = 10

// ErrEndOfListing: the page is past the journal's last page.
var ErrEndOfListing = errors.New("past the end of the listing")

// errEndOfListing is the package's own name for it.
var errEndOfListing = ErrEndOfListing

// fetchPage makes one try at a page: robots.txt, the host's circuit, its
// politeness, the fetch, and the checks on what came back.
func (c *Crawler) fetchPage(ctx context.Context, u *url.URL, journal int64, pageNo int, runID string) (*parser.Page, error) {
	host := u.Hostname()
	lim := c.limiter(host)
	if c.cfg.Robots {
		allowed, crawlDelay, err := c.robots.check(ctx, u)
		if err != nil {
			return nil, err
		}
		if !allowed {
			return nil, &FetchError{URL: u.String(), Err: ErrRobotsDisallowed}
		}
		lim.atLeast(crawlDelay)
	}
	if ok, wait := c.breaker.Allow(host, time.Now()); !ok {
		return nil, &FetchError{URL: u.String(), RetryAfter: wait, Err: ErrCircuitOpen}
	}
	release, err := lim.acquire(ctx)
	if err != nil {
		return nil, err
	}
	if c.cfg.Pacer != nil {
		if err := c.cfg.Pacer.Wait(ctx, host); err != nil {
			release()
			return nil, err
		}
	}
	f, err := c.fetcher.fetch(ctx, u.String())
	release()
	if f != nil {
		c.cfg.Metrics.fetch(f.Status, false)
	} else if ctx.Err() == nil {
		c.cfg.Metrics.fetch(0, true)
	}
	defer func() { c.cfg.Metrics.breaker(host, c.breaker.State(host, time.Now())) }()
	if err == nil {
		err = judge(f, time.Now())
	}
	if err != nil {
		var fe *FetchError
		if errors.As(err, &fe) && (fe.Status == http.StatusNotFound || fe.Status == http.StatusGone) && pageNo > 1 {
			c.breaker.Success(host) // the site answered: the listing just ends here
			return nil, errEndOfListing
		}
		if ctx.Err() == nil && IsRetryable(err) {
			c.breaker.Failure(host, time.Now())
		}
		return nil, err
	}
	page, err := parser.Parse(f.Body, parser.Options{URL: u.String(), Journal: journal, Page: pageNo, ContentType: f.ContentType, FetchedAt: f.FetchedAt, RunID: runID})
	if err != nil {
		return nil, &FetchError{URL: u.String(), Status: f.Status, Err: err}
	}
	if !page.IsListing() {
		lim.slowDown(c.cfg.SlowdownMax)
		c.breaker.Failure(host, time.Now())
		return nil, &FetchError{URL: u.String(), Status: f.Status, Err: ErrSoftBlock}
	}
	c.breaker.Success(host)
	lim.recover()
	if pageNo > 1 && len(page.Records) == 0 {
		return page, errEndOfListing
	}
	return page, nil
}

// FetchPage fetches and parses one listing page with the crawler's
// retries, politeness and checks, and delivers nothing. It returns
// ErrEndOfListing for a page past the end (the page may then be non-nil: an
// empty listing page), a permanent or exhausted *FetchError, or ctx's error.
func (c *Crawler) FetchPage(ctx context.Context, journal int64, pageNo int, runID string) (*parser.Page, error) {
	u, err := url.Parse(c.PageURL(journal, pageNo))
	if err != nil {
		return nil, err
	}
	var page *parser.Page
	err = c.cfg.Retry.Retry(ctx, func(ctx context.Context, _ int) error {
		var err error
		page, err = c.fetchPage(ctx, u, journal, pageNo, runID)
		return err
	})
	return page, err
}

// pageResult is what happened to one page.
type pageResult int

const (
	resultDone pageResult = iota
	resultSkipped
	resultEnded
	resultFailed
)

// crawlPage fetches (with retries), delivers and commits one page. For a
// done page, *out (when not nil) tells how it went.
func (c *Crawler) crawlPage(ctx context.Context, journal int64, pageNo int, o runOptions, sum *Summary, out *delivered) (pageResult, error) {
	key := state.PageKey{Journal: journal, Page: pageNo}
	if o.resume {
		st, ok, err := c.store.Page(key)
		if err != nil {
			return resultFailed, err
		}
		if ok && st.State == state.PageDone {
			c.cfg.Metrics.page("skipped")
			sum.addPage(PageReport{Journal: journal, Page: pageNo, Result: "skipped"})
			return resultSkipped, nil
		}
	}
	u, _ := url.Parse(c.PageURL(journal, pageNo))
	var page *parser.Page
	start, tries := time.Now(), 0
	report := func(result string, err error) {
		c.cfg.Metrics.page(result)
		r := PageReport{Journal: journal, Page: pageNo, Result: result, Tries: tries, Seconds: time.Since(start).Seconds()}
		if page != nil {
			r.Records = len(page.Records)
		}
		if err != nil {
			r.Error = err.Error()
		}
		sum.addPage(r)
	}
	err := c.cfg.Retry.Retry(ctx, func(ctx context.Context, attempt int) error {
		var err error
		tries = attempt
		page, err = c.fetchPage(ctx, u, journal, pageNo, o.runID)
		if err != nil && IsRetryable(err) {
			sum.countRetry(err)
			c.cfg.Metrics.retry(cause(err))
		}
		return err
	})
	switch {
	case errors.Is(err, errEndOfListing):
		report("past-end", nil)
		return resultEnded, nil
	case ctx.Err() != nil:
		return resultFailed, ctx.Err()
	case err != nil:
		c.log.Warn("page failed", "url", u.String(), "error", err)
		if ferr := c.store.FailPage(key, o.runID, err, time.Now()); ferr != nil {
			return resultFailed, ferr
		}
		sum.addFailure(key, err)
		report("failed", err)
		return resultFailed, nil
	}
	sum.addQuality(page.Records)
	d, err := c.deliver(ctx, key, page, o, sum)
	report("done", err)
	d.last = page.LastPage == pageNo
	if out != nil {
		*out = d
	}
	return resultDone, err
}

// delivered is what delivering a page found.
type delivered struct {
	records     int  // records on the page
	knownBefore int  // of which known before this run began
	last        bool // the page's pager says it is the last page
}

// deliver hands a page to the run's committer. Unless the run is
// asynchronous (o.async) it waits until the page is delivered and committed
// (or failed); an asynchronous run's pages are committed in the background,
// in larger batches, and a failure stops the run through o.onCommitErr.
func (c *Crawler) deliver(ctx context.Context, key state.PageKey, page *parser.Page, o runOptions, sum *Summary) (delivered, error) {
	req := &commitReq{ctx: ctx, key: key, page: page, o: o, sum: sum}
	if !o.async {
		req.done = make(chan commitRes, 1)
	}
	select {
	case c.commitQ <- req:
	case <-ctx.Done():
		return delivered{}, ctx.Err()
	}
	if o.async {
		return delivered{records: len(page.Records)}, nil
	}
	res := <-req.done
	return res.d, res.err
}

type commitReq struct {
	ctx  context.Context
	key  state.PageKey
	page *parser.Page
	o    runOptions
	sum  *Summary
	done chan commitRes // nil: asynchronous, failures go to o.onCommitErr
}

func (r *commitReq) reply(res commitRes) {
	if r.done != nil {
		r.done <- res
	} else if res.err != nil && r.o.onCommitErr != nil {
		r.o.onCommitErr(res.err)
	}
}

type commitRes struct {
	d   delivered
	err error
}

// maxGroupCommit bounds how many pages one commit takes, and how many wait
// for it. Batches average about 7 pages on a fast local crawl; 16 leaves
// room for stalls (an fsync, a slow broker) while bounding the memory the
// waiting pages hold (64 raised a 20,000-page crawl's peak RSS by 2.5 MB
// and saved no CPU).
const maxGroupCommit = 16

// startCommitter runs the run's committer: it takes the pages waiting to be
// delivered, all of those that queued up while the previous commit was
// running (a group commit), sends their new records to the sinks in one
// write, then commits the pages, their papers and the sinks' token in one
// state transaction. Pages are thus delivered and committed in batches
// whose token covers exactly the pages committed with it, with one fsync
// per batch instead of per page.
func (c *Crawler) startCommitter() (stop func()) {
	// The queue's size bounds the pages delivered but not yet committed
	// (memory, and the work a crash throws away).
	q := make(chan *commitReq, maxGroupCommit)
	c.commitQ = q
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for req := range q {
			batch := []*commitReq{req}
		drain:
			for len(batch) < maxGroupCommit {
				select {
				case r, ok := <-q:
					if !ok {
						break drain
					}
					batch = append(batch, r)
				default:
					break drain
				}
			}
			c.commitBatch(batch)
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(q)
			<-finished
		})
	}
}

func (c *Crawler) commitBatch(batch []*commitReq) {
	fail := func(err error) {
		for _, r := range batch {
			r.reply(commitRes{err: err})
		}
	}
	ds := make([]delivered, len(batch))
	commits := make([]state.Commit, len(batch))
	fresh := make([]int, len(batch))
	var out []record.Record
	inBatch := map[string]bool{}
	for i, r := range batch {
		ds[i].records = len(r.page.Records)
		onPage := make(map[string]bool, len(r.page.Records))
		idx := make([]int, 0, len(r.page.Records)) // the records looked up
		for k, rec := range r.page.Records {
			if onPage[rec.ID] {
				continue // the same paper twice on one page
			}
			onPage[rec.ID] = true
			idx = append(idx, k)
			commits[i].Papers = append(commits[i].Papers, state.Paper{ID: rec.ID, DOI: rec.DOI})
		}
		seen, err := c.store.Lookup(commits[i].Papers, r.o.runID)
		if err != nil {
			fail(err)
			return
		}
		for j, k := range idx {
			rec := r.page.Records[k]
			if seen[j] == state.SeenBefore {
				ds[i].knownBefore++
			}
			if seen[j] == state.Unknown && !inBatch[rec.ID] || r.o.redeliver {
				out = append(out, rec)
				fresh[i]++
			}
			inBatch[rec.ID] = true
		}
		commits[i].Page, commits[i].OnPage, commits[i].RunID, commits[i].At = r.key, len(r.page.Records), r.o.runID, time.Now()
	}
	ctx := batch[0].ctx
	if len(out) > 0 {
		if err := c.out.Write(ctx, out); err != nil {
			fail(fmt.Errorf("deliver %d pages (from %s): %w", len(batch), c.PageURL(batch[0].key.Journal, batch[0].key.Page), err))
			return
		}
	}
	if cm, ok := c.out.(sink.Committer); ok {
		t, err := cm.Token()
		if err != nil {
			fail(err)
			return
		}
		commits[len(commits)-1].SinkToken = t
	}
	newPapers, err := c.store.CommitPages(commits)
	if err != nil {
		fail(fmt.Errorf("commit %d pages: %w", len(batch), err))
		return
	}
	for i, r := range batch {
		r.sum.addDone(fresh[i], ds[i].records-newPapers[i])
		c.log.Info("page committed", "journal", r.key.Journal, "page", r.key.Page, "records", ds[i].records, "delivered", fresh[i], "batch", len(batch))
		r.reply(commitRes{d: ds[i]})
	}
}

type runOptions struct {
	runID     string
	resume    bool
	redeliver bool
	// async: pages are committed in the background (backfill); a commit
	// failure is reported to onCommitErr.
	async       bool
	onCommitErr func(error)
}

// BackfillOptions choose the pages of a backfill.
type BackfillOptions struct {
	Journals []int64
	// From and To are the page range; To 0 means until the listing ends.
	From, To int
	// NoResume refetches pages committed by earlier runs (their papers are
	// still delivered only if not known, unless Redeliver).
	NoResume  bool
	Redeliver bool
	RunID     string
	// Stop, when closed, stops starting pages; the pages in flight finish
	// (ctx bounds them). nil never stops.
	Stop <-chan struct{}
	// Progress, when set, is the summary the run counts into, so that a
	// caller can show progress while it runs.
	Progress *Summary
}

// stopped reports whether stop is closed.
func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// Backfill fetches the pages From..To of each journal. It returns the
// run's summary; the error is non-nil only for what stops a run (the state
// store, a sink, cancellation); failed pages are in the summary.
func (c *Crawler) Backfill(ctx context.Context, o BackfillOptions) (*Summary, error) {
	if o.From < 1 || (o.To != 0 && o.To < o.From) {
		return nil, fmt.Errorf("pages %d-%d: expected 1 <= A <= B", o.From, o.To)
	}
	sum := o.Progress
	if sum == nil {
		sum = NewSummary()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ro := runOptions{runID: o.RunID, resume: !o.NoResume, redeliver: o.Redeliver,
		async: true, onCommitErr: func(err error) { cancel(err) }}
	// The pool bounds the pages in flight; Go blocks when it is full, so
	// an open-ended walk never runs more than the pool's size past the end.
	p := pool.New().WithMaxGoroutines(max(c.cfg.Concurrency, 1))
	stopCommitter := c.startCommitter()
	defer stopCommitter()
	for _, journal := range o.Journals {
		var end atomic.Int64         // first page found past the end (0: none yet)
		var failedInRow atomic.Int64 // an open-ended walk gives up after too many
		for pageNo := o.From; o.To == 0 || pageNo <= o.To; pageNo++ {
			if e := end.Load(); e != 0 && int64(pageNo) >= e || ctx.Err() != nil || stopped(o.Stop) {
				break
			}
			if o.To == 0 && failedInRow.Load() >= maxFailedInRow {
				c.log.Warn("giving up on the journal's open-ended walk after failed pages in a row", "journal", journal, "failed", maxFailedInRow)
				break
			}
			p.Go(func() {
				if e := end.Load(); e != 0 && int64(pageNo) >= e || stopped(o.Stop) {
					return
				}
				var d delivered
				res, err := c.crawlPage(ctx, journal, pageNo, ro, sum, &d)
				if err != nil {
					cancel(err)
					return
				}
				if res == resultFailed {
					failedInRow.Add(1)
				} else {
					failedInRow.Store(0)
				}
				// The end: this page (a 404, an empty listing), or the page
				// after a last page its pager names.
				pastEnd := int64(0)
				switch {
				case res == resultEnded:
					pastEnd = int64(pageNo)
				case res == resultDone && d.last:
					pastEnd = int64(pageNo) + 1
				}
				for pastEnd != 0 {
					e := end.Load()
					if e != 0 && e <= pastEnd || end.CompareAndSwap(e, pastEnd) {
						break
					}
				}
				switch res {
				case resultEnded:
					sum.add(&sum.Ended)
				case resultSkipped:
					sum.add(&sum.Skipped)
				}
			})
		}
	}
	p.Wait()
	stopCommitter() // the last pages are committed before the run returns
	if err := context.Cause(ctx); err != nil {
		return sum, err
	}
	return sum, nil
}

// NightlyOptions choose how far a nightly walk goes.
type NightlyOptions struct {
	Journals []int64
	// StopAfterKnownPages: the walk of a journal stops after this many
	// consecutive pages holding only papers known before this run began.
	StopAfterKnownPages int
	// MaxPages bounds the walk of a journal.
	MaxPages int
	RunID    string
	// Stop, when closed, stops starting pages (see BackfillOptions.Stop).
	Stop <-chan struct{}
	// Progress: see BackfillOptions.Progress.
	Progress *Summary
}

// Nightly walks each journal from page 1 and delivers only papers never
// delivered before. Papers delivered earlier in the same run do not count
// as known, so papers pushed down by new ones while the walk goes on
// cannot stop it early; they are not delivered twice either. A page that
// fails stops its journal's walk (and counts as failed); the next run walks
// again from page 1. Journals are walked concurrently, each page by page.
func (c *Crawler) Nightly(ctx context.Context, o NightlyOptions) (*Summary, error) {
	if o.StopAfterKnownPages < 1 || o.MaxPages < 1 {
		return nil, fmt.Errorf("nightly: stop_after_known_pages %d and max_pages %d must be at least 1", o.StopAfterKnownPages, o.MaxPages)
	}
	sum := o.Progress
	if sum == nil {
		sum = NewSummary()
	}
	ro := runOptions{runID: o.RunID}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	p := pool.New().WithMaxGoroutines(max(c.cfg.Concurrency, 1))
	stopCommitter := c.startCommitter()
	defer stopCommitter()
	for _, journal := range o.Journals {
		p.Go(func() {
			knownRun := 0
			for pageNo := 1; pageNo <= o.MaxPages && ctx.Err() == nil && !stopped(o.Stop); pageNo++ {
				var d delivered
				res, err := c.crawlPage(ctx, journal, pageNo, ro, sum, &d)
				if err != nil {
					cancel(err)
					return
				}
				if res != resultDone {
					if res == resultEnded {
						sum.add(&sum.Ended)
					}
					return // past the end, or failed
				}
				if d.records > 0 && d.knownBefore == d.records {
					knownRun++
				} else {
					knownRun = 0
				}
				if knownRun >= o.StopAfterKnownPages {
					c.log.Info("nightly walk reached known papers", "journal", journal, "page", pageNo)
					return
				}
				if d.last {
					return // the pager says this is the last page
				}
			}
		})
	}
	p.Wait()
	if err := context.Cause(ctx); err != nil {
		return sum, err
	}
	return sum, nil
}
