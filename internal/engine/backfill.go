package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/conc/pool"

	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/parser"
)

// maxFailedInRow stops an open-ended walk that only meets failures (a site
// that answers every page number with an error would otherwise be walked
// forever).
const maxFailedInRow = 10

// BackfillOptions choose the pages of a backfill.
type BackfillOptions struct {
	Journals []int64
	// From and To are the page range; To 0 means until the listing ends.
	From, To int
	// NoResume refetches pages committed by earlier runs (their papers are
	// still delivered only if not known, unless Redeliver).
	NoResume  bool
	Redeliver bool
	// Stop, when closed, stops starting pages; the pages in flight finish
	// (ctx bounds them). nil never stops.
	Stop <-chan struct{}
	// For an open range (To 0): stop a journal's walk after
	// StopAfterRepeatPages fetched pages in a row that add no paper not
	// already met in this run (repeats; skipped pages do not count; 0:
	// never), and never go past page From+MaxPages-1 (0: no bound).
	StopAfterRepeatPages int
	MaxPages             int
	// PerJournal are the bounds of the journals that have their own
	// (StopAfterRepeatPages and MaxPages); the others by the fields above.
	PerJournal map[int64]Limits
}

// limits are journal's bounds.
func (o BackfillOptions) limits(journal int64) Limits {
	if l, ok := o.PerJournal[journal]; ok {
		return l
	}
	return Limits{MaxPages: o.MaxPages, StopAfterRepeatPages: o.StopAfterRepeatPages}
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

// Backfill fetches the pages From..To of each journal, at most the run's
// concurrency at once, and commits them in the background in groups. The
// error is non-nil only for what stops a run (the ledger, a sink,
// cancellation); failed pages are in the summary.
func (r *Run) Backfill(ctx context.Context, o BackfillOptions) error {
	if o.From < 1 || (o.To != 0 && o.To < o.From) {
		return fmt.Errorf("pages %d-%d: expected 1 <= A <= B", o.From, o.To)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	po := PageOptions{Resume: !o.NoResume, Redeliver: o.Redeliver}
	// The pool bounds the pages in flight; Go blocks when it is full, so
	// an open-ended walk never runs more than the pool's size past the end.
	p := pool.New().WithMaxGoroutines(r.conc)
	var capped []func() // open walks that reached backfill.max_pages: said in the summary unless they met the end
	ends := map[int64]*atomic.Int64{}
	for _, journal := range o.Journals {
		j := r.backfillJournal(journal, o)
		ends[journal] = &j.end
		for pageNo := o.From; j.to == 0 || pageNo <= j.to; pageNo++ {
			if j.past(pageNo) || ctx.Err() != nil || stopped(o.Stop) {
				break
			}
			if j.open && pageNo == j.to {
				r.log.Warn("the open-ended walk reached backfill.max_pages", "journal", journal, "page", pageNo, "max_pages", j.limits.MaxPages)
				capped = append(capped, j.sayCapped)
			}
			if j.open && j.failedInRow.Load() >= maxFailedInRow {
				r.log.Warn("giving up on the journal's open-ended walk after failed pages in a row", "journal", journal, "failed", maxFailedInRow)
				break
			}
			p.Go(func() {
				if j.past(pageNo) || stopped(o.Stop) {
					return
				}
				if err := j.fetch(ctx, po, pageNo, cancel); err != nil {
					cancel(err)
				}
			})
		}
	}
	p.Wait()
	if ctx.Err() == nil && !stopped(o.Stop) {
		for _, c := range capped {
			c()
		}
	}
	r.commit.stop() // the last pages are committed before the run returns
	if err := context.Cause(ctx); err != nil || stopped(o.Stop) {
		return err
	}
	if o.To == 0 && o.From == 1 {
		return r.countAsAudit(context.WithoutCancel(ctx), ends)
	}
	return nil
}

// journalPages is one journal's pages in a backfill: its range, where
// its listing ends, and an open range's rules (repeats, failed pages in a
// row, backfill.max_pages).
type journalPages struct {
	r       *Run
	journal int64
	open    bool // an open range (To 0)
	to      int  // the last page taken (0: until the listing ends)
	limits  Limits
	// end is the first page found past the listing's end (0: none yet).
	end atomic.Int64
	// failedInRow: an open-ended walk gives up after too many.
	failedInRow atomic.Int64
	// An open range's walk: the repeat rule, over pages in the order they
	// are committed.
	mu          sync.Mutex
	walk        repeats
	walkStopped bool
}

func (r *Run) backfillJournal(journal int64, o BackfillOptions) *journalPages {
	l := o.limits(journal)
	j := &journalPages{r: r, journal: journal, open: o.To == 0, to: o.To, limits: l, walk: repeats{limit: l.StopAfterRepeatPages}}
	if j.open && l.MaxPages > 0 {
		j.to = o.From + l.MaxPages - 1
	}
	return j
}

// past: the page is past the listing's end, as found so far.
func (j *journalPages) past(page int) bool {
	e := j.end.Load()
	return e != 0 && int64(page) >= e
}

// endAt: the listing ends before pastEnd (a 404 or an empty listing
// there, or a last page its pager names just before), known as soon as
// the page is fetched, so no page past it is started.
func (j *journalPages) endAt(pastEnd int64) {
	for {
		e := j.end.Load()
		if e != 0 && e <= pastEnd || j.end.CompareAndSwap(e, pastEnd) {
			return
		}
	}
}

// sayCapped puts in the summary that the open walk stopped at
// backfill.max_pages, unless it met the listing's end or its repeat rule.
func (j *journalPages) sayCapped() {
	j.mu.Lock()
	defer j.mu.Unlock()
	// end is the first page past the listing: to+1 when the listing ended
	// at the limit itself.
	if e := j.end.Load(); (e == 0 || e > int64(j.to)+1) && !j.walkStopped {
		j.r.sum.addIncomplete(j.journal, j.to, WhyBackfillMaxPages)
	}
}

// fetch does one page; cancel ends the run on what stops it (the ledger,
// a sink).
func (j *journalPages) fetch(ctx context.Context, po PageOptions, page int, cancel context.CancelCauseFunc) error {
	fetched := func(pg *parser.Page) {
		if pg.LastPage != 0 && pg.LastPage == page {
			j.endAt(int64(page) + 1)
		}
	}
	return j.r.page(ctx, ledger.PageKey{Journal: j.journal, Page: page}, po, true, fetched, func(oc Outcome, err error) {
		if err != nil {
			cancel(err)
			return
		}
		j.finished(page, oc)
	})
}

// finished counts a page's outcome by the journal's rules.
func (j *journalPages) finished(page int, oc Outcome) {
	if oc.Result == Failed {
		j.failedInRow.Add(1)
	} else {
		j.failedInRow.Store(0)
	}
	if oc.Result == PastEnd {
		j.endAt(int64(page))
	}
	if !j.open || oc.Result != Done {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.walk.page(oc.Delivered) && !oc.Delivered.Last && !j.walkStopped {
		j.walkStopped = true
		j.r.log.Warn("stopping the open-ended walk: pages in a row with no paper not already met in this run (pages in flight finish)",
			"journal", j.journal, "page", page, "pages", j.walk.run)
		j.endAt(int64(page) + 1)
	}
}

// countAsAudit: an open-ended backfill from page 1 that read every page
// of a journal to its end in this run (none skipped as done before, none
// failed) re-read the whole listing: it counts as a round of the
// journal's audit, which starts again at the top.
func (r *Run) countAsAudit(ctx context.Context, ends map[int64]*atomic.Int64) error {
	ws := r.WalkStates()
	if ws == nil {
		return nil
	}
	counts := r.sum.Journals()
	for j, end := range ends {
		c := counts[j]
		if end.Load() == 0 || c.PagesFailed > 0 || c.PagesSkipped > 0 || c.PagesDone == 0 {
			continue
		}
		s, err := ws.WalkState(ctx, j)
		if err != nil {
			return fmt.Errorf("journal %d: read its walk state: %w", j, err)
		}
		s.Audit = ledger.Audit{Next: 1, Since: time.Now().Unix(), Round: r.sum.Started.Unix(), Pages: int(end.Load()) - 1}
		if err := ws.SetWalkState(ctx, j, s); err != nil {
			return fmt.Errorf("journal %d: count the backfill as a round of its audit: %w", j, err)
		}
	}
	return nil
}

// repeats is an open range's repeat rule: it stops after limit pages in a
// row (in the order they are committed) that held no paper not already
// met in this run, a site that answers every page number with the same
// papers (0: never).
type repeats struct{ limit, run int }

// page counts a page delivered as d; true: the rule stops the walk.
func (r *repeats) page(d Delivered) bool {
	if d.Records > 0 && d.NewToRun == 0 {
		r.run++
	} else {
		r.run = 0
	}
	return r.limit > 0 && r.run >= r.limit
}
