package engine

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/litcrawl/litcrawl/fetch"
	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/parser"
	"github.com/litcrawl/litcrawl/sink"
)

// Fetcher is what the engine fetches pages through: the fetch port
// (crawler.Fetcher over HTTP, or a fake in tests).
type Fetcher = fetch.Fetcher

// Options make a run.
type Options struct {
	// ID names the run in its summary and history.
	ID string
	// Fetcher fetches and parses pages; Ledger remembers what was
	// delivered; Sink receives the records.
	Fetcher Fetcher
	Ledger  ledger.Ledger
	Sink    sink.Sink
	// Concurrency bounds the pages fetched at once (a backfill) or the
	// journals walked at once (a nightly run); at least 1.
	Concurrency int
	Log         *slog.Logger
	Metrics     *Metrics
	// Summary is what the run counts into, so that a caller can show
	// progress while it goes on; nil makes a new one.
	Summary *Summary
	// StopWhenUnreachable stops the run (its error) when a page fails
	// because its host never answered (fetch.ErrUnreachable): a local
	// crawl with a wrong base URL ends at once with exit 1. A fleet worker
	// leaves it unset: its jobs wait for the host.
	StopWhenUnreachable bool
	// Hold, when set, is where records with a finding are held back
	// (quality.hold: implausible) instead of delivered.
	Hold sink.Quarantine
	// Citations makes a change of a paper's citation count alone a new
	// revision (updates.citations).
	Citations bool
}

// Run is one crawl run over shared parts: a fetcher, a ledger and a sink.
// It owns what lives only as long as the run: its group committer and its
// summary. Backfill, Nightly and a fleet worker's pages (Page) all go
// through the same step: fetch, Deliver, count. A Run is safe for
// concurrent use; Close it when done.
type Run struct {
	id      string
	fetch   Fetcher
	ledger  ledger.Ledger
	pages   ledger.PageBook // nil: the ledger does not remember pages
	conc    int
	log     *slog.Logger
	metrics *Metrics
	sum     *Summary
	commit  *committer

	stopWhenUnreachable bool
	hold                sink.Quarantine
	citations           bool

	failMu sync.Mutex
	failed map[string]int // a failure's text, less its URL → pages that failed so
}

// logFailure logs a failed page: the first of each failure (its text less
// the page's URL) as a warning, the others at debug level, with one line
// saying so. A host that goes down fails every page left at once; one
// line says it, not one a page (the summary and --report list the pages).
func (r *Run) logFailure(url string, err error) {
	text := err.Error()
	if url != "" {
		text = strings.ReplaceAll(text, url, "PAGE")
	}
	r.failMu.Lock()
	if r.failed == nil {
		r.failed = map[string]int{}
	}
	r.failed[text]++
	n := r.failed[text]
	r.failMu.Unlock()
	switch n {
	case 1:
		r.log.Warn("page failed", "url", url, "error", err)
	case 2:
		r.log.Warn("more pages fail the same way: they are not logged one by one (the run's summary and --report list them)", "url", url, "error", err)
	default:
		r.log.Debug("page failed", "url", url, "error", err)
	}
}

// Start starts a run (its committer).
func Start(o Options) *Run {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Summary == nil {
		o.Summary = NewSummary()
	}
	r := &Run{id: o.ID, fetch: o.Fetcher, ledger: o.Ledger, conc: max(o.Concurrency, 1), log: o.Log,
		metrics: o.Metrics, sum: o.Summary, commit: startCommitter(o.Ledger, o.Sink), stopWhenUnreachable: o.StopWhenUnreachable,
		hold: o.Hold, citations: o.Citations}
	r.pages, _ = o.Ledger.(ledger.PageBook)
	return r
}

// Summary is what the run did so far.
func (r *Run) Summary() *Summary { return r.sum }

// Close commits the pages still queued and stops the committer.
func (r *Run) Close() { r.commit.stop() }

// Result is what happened to one page.
type Result int

const (
	Done    Result = iota // delivered and committed
	Skipped               // committed by an earlier run (resume)
	PastEnd               // past the end of the listing
	Failed                // failed permanently, or after every retry
)

func (res Result) String() string {
	return [...]string{"done", "skipped", "past-end", "failed"}[res]
}

// PageOptions say how a page is done.
type PageOptions struct {
	// RunID is the run the records carry and the ledger records (a
	// worker's job carries the run that enqueued it); "" is the run's id.
	RunID string
	// Resume skips a page the ledger remembers as done.
	Resume bool
	// Redeliver sends the page's records even if delivered before.
	Redeliver bool
	// Hold holds the page back (Item.Hold); a nightly walk's is Walk.Hold.
	Hold func(papers []ledger.Paper, seen []ledger.Delivery) bool
	// Walk gives the walk state committed with the page (Item.Walk); a
	// nightly walk's is Walk.CrashState.
	Walk func(d Delivered) ledger.WalkState
}

// Outcome is what became of one page.
type Outcome struct {
	Result    Result
	Delivered Delivered // for Done: what delivering it did
	Err       error     // for Failed: why
}

// Page fetches one listing page (with the fetcher's retries), delivers and
// commits it in the run's next group, and counts it in the summary. A page
// that fails is an outcome with its error (and recorded as failed when the
// ledger keeps pages); the error returned is what should stop the caller:
// the sink or the ledger failed, or ctx ended.
func (r *Run) Page(ctx context.Context, key ledger.PageKey, o PageOptions) (Outcome, error) {
	var out Outcome
	var err error
	done := make(chan struct{})
	if serr := r.page(ctx, key, o, false, nil, func(oc Outcome, e error) { out, err = oc, e; close(done) }); serr != nil {
		return Outcome{}, serr
	}
	<-done
	return out, err
}

// page does one page. then receives its outcome: before page returns when
// the delivery is synchronous, from the committer when it is asynchronous
// (a backfill's pages are committed in the background). fetched, when set,
// is told of a page as soon as it is fetched, before it is committed (a
// backfill learns there where the listing ends). page's own error is for
// an asynchronous hand-over that did not happen (ctx ended).
func (r *Run) page(ctx context.Context, key ledger.PageKey, o PageOptions, async bool, fetched func(*parser.Page), then func(Outcome, error)) error {
	if o.RunID == "" {
		o.RunID = r.id
	}
	endBusy := r.sum.pageBegins()
	outcome := then
	then = func(oc Outcome, err error) { endBusy(); outcome(oc, err) }
	start := time.Now()
	report := func(res Result, tries, records int, err error) {
		r.metrics.page(res.String())
		rep := PageLine{Journal: key.Journal, Page: key.Page, Result: res.String(), Tries: tries, Seconds: time.Since(start).Seconds(), Records: records}
		if err != nil {
			rep.Error = err.Error()
		}
		r.sum.addPage(rep)
	}
	if o.Resume && r.pages != nil {
		done, err := r.pages.PageDone(ctx, key)
		if err != nil {
			then(Outcome{}, err)
			return nil
		}
		if done {
			r.sum.addSkipped(key.Journal)
			report(Skipped, 0, 0, nil)
			then(Outcome{Result: Skipped}, nil)
			return nil
		}
	}
	res, err := r.fetch.Fetch(ctx, fetch.Request{Journal: key.Journal, Page: key.Page, RunID: o.RunID,
		OnTryFailed: func(cause string) {
			r.sum.countRetry(cause)
			r.metrics.retry(cause)
		}})
	if ctx.Err() == nil {
		r.sum.addFetchTime(time.Since(start).Seconds())
	}
	switch {
	case errors.Is(err, fetch.ErrEndOfListing):
		r.sum.addEnded(key.Journal)
		report(PastEnd, res.Tries, 0, nil)
		then(Outcome{Result: PastEnd}, nil)
		return nil
	case ctx.Err() != nil:
		then(Outcome{}, ctx.Err())
		return nil
	case err != nil && r.stopWhenUnreachable && errors.Is(err, fetch.ErrUnreachable):
		r.sum.addFailure(key, err)
		report(Failed, res.Tries, 0, err)
		then(Outcome{}, err) // stops the run
		return nil
	case err != nil:
		r.logFailure(res.URL, err)
		if r.pages != nil {
			if ferr := r.pages.FailPage(ctx, key, o.RunID, err, time.Now()); ferr != nil {
				then(Outcome{}, ferr)
				return nil
			}
		}
		r.sum.addFailure(key, err)
		report(Failed, res.Tries, 0, err)
		then(Outcome{Result: Failed, Err: err}, nil)
		return nil
	}
	now := time.Now()
	findings := res.Page.Findings(now)
	r.sum.addQuality(res.Page, findings)
	if fetched != nil {
		fetched(res.Page)
	}
	page := res.Page
	if r.hold != nil {
		var held int
		if page, held, err = holdBack(ctx, r.hold, res, findings, now); err != nil {
			r.sum.addFailure(key, err)
			report(Failed, res.Tries, len(res.Page.Records), err)
			then(Outcome{}, err)
			return nil
		}
		if held > 0 {
			r.sum.Held.Add(int64(held))
			r.log.Warn("records held back: the parser has a finding on them (quality.hold)", "journal", key.Journal, "page", key.Page, "held", held)
		}
	}
	it := Item{Key: key, Page: page, RunID: o.RunID, Redeliver: o.Redeliver, Citations: r.citations, Hold: o.Hold, Walk: o.Walk}
	committed := func(d Delivered, err error) {
		if err != nil {
			if ctx.Err() == nil {
				r.sum.addFailure(key, err)
				report(Failed, res.Tries, len(res.Page.Records), err)
			}
			then(Outcome{}, err)
			return
		}
		if d.Held {
			r.log.Info("page held back: the walk's jump landed below the gap it looks for, and goes back", "journal", key.Journal, "page", key.Page)
			then(Outcome{Result: Done, Delivered: d}, nil)
			return
		}
		r.sum.addDone(key.Journal, d)
		for _, id := range d.Restless {
			r.log.Warn("a paper delivered again as a revision many times: the site may show it in alternating versions (docs/revisions.md#limits)",
				"journal", key.Journal, "page", key.Page, "paper", id, "revisions_at_least", ManyRevisions)
		}
		r.log.Info("page committed", "journal", key.Journal, "page", key.Page, "records", d.Records, "delivered", d.Sent, "batch", d.Group)
		report(Done, res.Tries, d.Records, nil)
		then(Outcome{Result: Done, Delivered: d}, nil)
	}
	if async {
		err := r.commit.deliverAsync(ctx, it, committed)
		if err != nil {
			endBusy() // not handed over: then is never called
		}
		return err
	}
	committed(r.commit.deliver(ctx, it))
	return nil
}
