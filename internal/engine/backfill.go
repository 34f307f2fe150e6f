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
	open := o.To == 0
	var capped []func() // open walks that reached backfill.max_pages: said in the summary unless they met the end
	ends := map[int64]*atomic.Int64{}
	for _, journal := range o.Journals {
		l := o.limits(journal)
		to := o.To
		if open && l.MaxPages > 0 {
			to = o.From + l.MaxPages - 1
		}
		var end atomic.Int64 // first page found past the end (0: none yet)
		ends[journal] = &end
		var failedInRow atomic.Int64 // an open-ended walk gives up after too many
		// An open range's walk: the repeat rule, over pages in the order
		// they are committed.
		var walkMu sync.Mutex
		walk := repeats{limit: l.StopAfterRepeatPages}
		walkStopped := false
		for pageNo := o.From; to == 0 || pageNo <= to; pageNo++ {
			if e := end.Load(); e != 0 && int64(pageNo) >= e || ctx.Err() != nil || stopped(o.Stop) {
				break
			}
			if open && pageNo == to {
				r.log.Warn("the open-ended walk reached backfill.max_pages", "journal", journal, "page", pageNo, "max_pages", l.MaxPages)
				capped = append(capped, func() {
					walkMu.Lock()
					defer walkMu.Unlock()
					// end is the first page past the listing: to+1 when the
					// listing ended at the limit itself.
					if e := end.Load(); (e == 0 || e > int64(to)+1) && !walkStopped {
						r.sum.addIncomplete(journal, to, WhyBackfillMaxPages)
					}
				})
			}
			if o.To == 0 && failedInRow.Load() >= maxFailedInRow {
				r.log.Warn("giving up on the journal's open-ended walk after failed pages in a row", "journal", journal, "failed", maxFailedInRow)
				break
			}
			p.Go(func() {
				if e := end.Load(); e != 0 && int64(pageNo) >= e || stopped(o.Stop) {
					return
				}
				// The end: this page (a 404, an empty listing), or the page
				// after a last page its pager names, known as soon as that
				// page is fetched, so no page past it is started.
				endAt := func(pastEnd int64) {
					for {
						e := end.Load()
						if e != 0 && e <= pastEnd || end.CompareAndSwap(e, pastEnd) {
							return
						}
					}
				}
				fetched := func(pg *parser.Page) {
					if pg.LastPage != 0 && pg.LastPage == pageNo {
						endAt(int64(pageNo) + 1)
					}
				}
				err := r.page(ctx, ledger.PageKey{Journal: journal, Page: pageNo}, po, true, fetched, func(oc Outcome, err error) {
					if err != nil {
						cancel(err)
						return
					}
					if oc.Result == Failed {
						failedInRow.Add(1)
					} else {
						failedInRow.Store(0)
					}
					if oc.Result == PastEnd {
						endAt(int64(pageNo))
					}
					if open && oc.Result == Done {
						walkMu.Lock()
						if walk.page(oc.Delivered) && !oc.Delivered.Last && !walkStopped {
							walkStopped = true
							r.log.Warn("stopping the open-ended walk: pages in a row with no paper not already met in this run (pages in flight finish)",
								"journal", journal, "page", pageNo, "pages", walk.run)
							endAt(int64(pageNo) + 1)
						}
						walkMu.Unlock()
					}
				})
				if err != nil {
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
	if open && o.From == 1 {
		return r.countAsAudit(context.WithoutCancel(ctx), ends)
	}
	return nil
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
