package engine

import (
	"context"
	"fmt"

	"github.com/sourcegraph/conc/pool"

	"github.com/litcrawl/litcrawl/ledger"
)

// Walk is where a nightly walk of one journal stands: the page it is at,
// and how far it may go. A fleet's job carries it from worker to worker.
type Walk struct {
	Page int // the page to do next
	// KnownRun counts the pages in a row, up to Page, whose papers were
	// all known before the run began.
	KnownRun int
	// RepeatRun counts the pages in a row that held no paper not already
	// met in this run (a site answering every page number with the same
	// papers).
	RepeatRun int
	// StopAfterKnown ends the walk after KnownRun reaches it (0: never);
	// StopAfterRepeat after RepeatRun reaches it (0: never); MaxPages
	// bounds it.
	StopAfterKnown  int
	StopAfterRepeat int
	MaxPages        int
}

// Why a walk stopped, for logs.
func (w Walk) why(d Delivered) string {
	switch {
	case d.Last:
		return "last page"
	case w.StopAfterKnown > 0 && w.KnownRun >= w.StopAfterKnown:
		return "known papers only"
	case w.StopAfterRepeat > 0 && w.RepeatRun >= w.StopAfterRepeat:
		return "the same papers again"
	}
	return "max pages"
}

// Next is the one walk rule, of nightly walks and open-ended backfills:
// after page w.Page was delivered as d, does the walk go on, and to where?
// It stops after StopAfterKnown pages in a row whose papers were all known
// before the run began (papers delivered earlier in the same run do not
// count: new papers pushing older ones down while the walk goes on cannot
// stop it early), after StopAfterRepeat pages in a row that held no paper
// not already met in this run (a site that answers every page number with
// the same papers), at the last page the pager names, and past MaxPages.
func (w Walk) Next(d Delivered) (Walk, bool) {
	next := w
	next.Page++
	if d.Records > 0 && d.KnownBefore == d.Records {
		next.KnownRun++
	} else {
		next.KnownRun = 0
	}
	if d.Records > 0 && d.Fresh == 0 {
		next.RepeatRun++
	} else {
		next.RepeatRun = 0
	}
	if d.Last || w.StopAfterKnown > 0 && next.KnownRun >= w.StopAfterKnown ||
		w.StopAfterRepeat > 0 && next.RepeatRun >= w.StopAfterRepeat || next.Page > w.MaxPages {
		return next, false
	}
	return next, true
}

// NightlyOptions choose how far a nightly walk goes.
type NightlyOptions struct {
	Journals []int64
	// StopAfterKnownPages: the walk of a journal stops after this many
	// consecutive pages holding only papers known before this run began.
	StopAfterKnownPages int
	// MaxPages bounds the walk of a journal.
	MaxPages int
	// StopAfterRepeatPages: the walk stops after this many pages in a row
	// with no paper not already met in this run (0: never).
	StopAfterRepeatPages int
	// Stop, when closed, stops starting pages (see BackfillOptions.Stop).
	Stop <-chan struct{}
}

// Nightly walks each journal from page 1 and delivers only papers never
// delivered before, page by page, each page committed before the walk
// decides whether to go on (Walk.Next). A page that fails stops its
// journal's walk (and counts as failed); the next run walks again from page
// 1. Journals are walked concurrently, up to the run's concurrency.
func (r *Run) Nightly(ctx context.Context, o NightlyOptions) error {
	if o.StopAfterKnownPages < 1 || o.MaxPages < 1 {
		return fmt.Errorf("nightly: stop_after_known_pages %d and max_pages %d must be at least 1", o.StopAfterKnownPages, o.MaxPages)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	p := pool.New().WithMaxGoroutines(r.conc)
	for _, journal := range o.Journals {
		p.Go(func() {
			w := Walk{Page: 1, StopAfterKnown: o.StopAfterKnownPages, StopAfterRepeat: o.StopAfterRepeatPages, MaxPages: o.MaxPages}
			for ctx.Err() == nil && !stopped(o.Stop) {
				oc, err := r.Page(ctx, ledger.PageKey{Journal: journal, Page: w.Page}, PageOptions{})
				if err != nil {
					cancel(err)
					return
				}
				if oc.Result != Done {
					return // past the end, or failed
				}
				var goOn bool
				if w, goOn = w.Next(oc.Delivered); !goOn {
					r.log.Info("nightly walk done", "journal", journal, "page", w.Page-1, "why", w.why(oc.Delivered), "known_pages_in_a_row", w.KnownRun)
					return
				}
			}
		})
	}
	p.Wait()
	return context.Cause(ctx)
}
