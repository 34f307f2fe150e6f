package engine

import (
	"context"
	"fmt"
	"slices"

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
	// Walked counts the pages walked so far.
	Walked int
	// StopAfterKnown ends the walk after KnownRun reaches it (0: never);
	// StopAfterRepeat after RepeatRun reaches it (0: never); MaxPages
	// bounds the pages walked.
	StopAfterKnown  int
	StopAfterRepeat int
	MaxPages        int
	// Marks are where earlier walks stopped at MaxPages with older pages
	// never reached, topmost first, not passed yet (see below). Marked says
	// the walk began with marks, which its end replaces or clears.
	Marks  []ledger.WalkMark
	Marked bool
	// SeenKnown: since the walk began or last passed a mark, it has met
	// papers delivered before (it has reached the block above the next
	// mark).
	SeenKnown bool
}

// MaxMarks bounds a journal's marks: one is added by each night that
// stops at MaxPages before reaching the marks it had.
const MaxMarks = 64

// A walk's marks, and the carry-on rule. A walk that stops at MaxPages
// leaves a mark: the page it reached and that page's papers; below it lie
// papers never delivered. The next walk starts at page 1 as always, and
// where known papers would stop it (it has reached papers delivered
// before) it jumps to the first mark's page instead: the papers there have
// only moved down, by the papers added since. From there known papers do
// not stop it until it has passed the mark (a page holding one of the
// mark's papers, or one holding papers never delivered: the listing moved
// up, past the mark; counted only once the walk has met papers delivered
// before since its last mark, so that new papers pushed down past a mark's
// page are not taken for it). Then the usual rule applies again, with the next
// mark if there is one. MaxPages bounds the pages walked, jumps or not. A
// walk that reaches it again leaves a mark where it stopped, above the
// marks it did not reach; so no page is left behind, as long as a night
// has pages to spare (nightly.max_pages at least stop_after_known_pages+2:
// the pages to known papers, the mark's page, and one more).

// WalkEnd is how a walk ended.
type WalkEnd struct {
	Why string // "last page", "known papers only", "the same papers again", or why it was cut (WhyMaxPages, …)
	// Incomplete: the walk stopped at MaxPages with older pages it never
	// reached; Marks are where the next walk carries on.
	Incomplete bool
	Marks      []ledger.WalkMark
	// Dropped: marks beyond MaxMarks that were forgotten (their pages will
	// not be reached by nightly walks: backfill them).
	Dropped []ledger.WalkMark
	// Store: the journal's marks change (set, or cleared).
	Store bool
}

// End is how the walk ended, called on the walk Next returned with false
// for the page d.
func (w Walk) End(d Delivered) WalkEnd {
	switch {
	case d.Last:
		return WalkEnd{Why: "last page", Store: w.Marked}
	case w.StopAfterRepeat > 0 && w.RepeatRun >= w.StopAfterRepeat:
		return WalkEnd{Why: "the same papers again", Store: w.Marked}
	case len(w.Marks) == 0 && w.StopAfterKnown > 0 && w.KnownRun >= w.StopAfterKnown:
		return WalkEnd{Why: "known papers only", Store: w.Marked}
	}
	return w.cut(d, w.Page-1, WhyMaxPages)
}

// Why a walk stopped before its rule ended it (IncompleteWalk.Why).
const (
	WhyMaxPages   = "nightly.max_pages"
	WhyFailedPage = "a failed page"
	WhyStopped    = "the run was stopped"
)

// cut is how a walk ends that stopped short of known papers after page
// last, delivered as d: at MaxPages, at a failed page, or when the run was
// stopped. It leaves a mark where it stopped.
func (w Walk) cut(d Delivered, last int, why string) WalkEnd {
	marks := slices.Clone(w.Marks)
	if len(marks) > 0 && last >= marks[0].Page && d.Records > 0 && d.KnownBefore == d.Records {
		// Between the first mark's page and the mark: papers delivered
		// before, nothing new. The mark lies further down.
		marks[0].Page = last
	} else {
		marks = append([]ledger.WalkMark{{Page: last, Papers: MarkOf(d.Papers)}}, marks...)
	}
	end := WalkEnd{Why: why, Incomplete: true, Marks: marks, Store: true}
	if len(marks) > MaxMarks {
		end.Marks, end.Dropped = marks[:MaxMarks], marks[MaxMarks:]
	}
	return end
}

// MarkOf is the mark of a page's papers: their ids and DOI keys.
func MarkOf(papers []ledger.Paper) []string {
	mark := make([]string, 0, 2*len(papers))
	for _, p := range papers {
		mark = append(mark, p.ID)
		if k := p.DOIKey(); k != "" {
			mark = append(mark, "doi:"+k)
		}
	}
	return mark
}

// holds says whether a page's papers include one of the mark's.
func holds(papers []ledger.Paper, mark []string) bool {
	for _, p := range papers {
		k := p.DOIKey()
		for _, m := range mark {
			if p.ID == m || k != "" && "doi:"+k == m {
				return true
			}
		}
	}
	return false
}

// Next is the one walk rule, of nightly walks and open-ended backfills:
// after page w.Page was delivered as d, does the walk go on, and to where?
// It stops after StopAfterKnown pages in a row whose papers were all known
// before the run began (papers delivered earlier in the same run do not
// count: new papers pushing older ones down while the walk goes on cannot
// stop it early), after StopAfterRepeat pages in a row that held no paper
// not already met in this run (a site that answers every page number with
// the same papers), at the last page the pager names, and after MaxPages
// pages. A walk with marks carries on past them first (see Walk). When it
// stops, End says how.
func (w Walk) Next(d Delivered) (Walk, bool) {
	next := w
	next.Page++
	next.Walked++
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
	for len(next.Marks) > 0 {
		m := next.Marks[0]
		carrying := w.Page >= m.Page
		if holds(d.Papers, m.Papers) || carrying && next.SeenKnown && d.KnownBefore < d.Records {
			next.Marks, next.KnownRun, next.SeenKnown = next.Marks[1:], 0, false // passed
			continue
		}
		if carrying {
			next.KnownRun = 0 // known papers do not stop it here
		}
		break
	}
	if len(next.Marks) == 0 {
		next.Marks = nil
	} else if d.KnownBefore > 0 && !holds(d.Papers, w.Marks[0].Papers) {
		next.SeenKnown = true
	}
	knownStop := w.StopAfterKnown > 0 && next.KnownRun >= w.StopAfterKnown
	switch {
	case d.Last, w.StopAfterRepeat > 0 && next.RepeatRun >= w.StopAfterRepeat:
		return next, false
	case knownStop && len(next.Marks) == 0:
		return next, false
	case next.Walked >= w.MaxPages:
		return next, false
	case knownStop:
		next.Page, next.KnownRun = max(next.Page, next.Marks[0].Page), 0 // jump to the mark
	}
	return next, true
}

// EndWalk does what ends a journal's nightly walk, for local runs and the
// fleet alike: w is the walk Next returned with false after page d. It
// logs how the walk ended; a walk that stopped at its page limit is
// counted in the summary as incomplete (with a warning); and the journal's
// mark is set or cleared in the ledger when it keeps marks
// (ledger.WalkMarks).
func (r *Run) EndWalk(ctx context.Context, journal int64, w Walk, d Delivered) error {
	return r.endWalk(ctx, journal, w, w.Page-1, w.End(d))
}

// StopWalk ends a journal's walk that did not end by its rule: the page
// after last (the last page it delivered, as d; 0: none) was past the end
// of the listing (the walk is complete), or failed, or the run was stopped
// (why: WhyFailedPage, WhyStopped). A walk cut short leaves a mark at its
// last page, as one stopped at MaxPages does, so the next walk carries on
// from there.
func (r *Run) StopWalk(ctx context.Context, journal int64, w Walk, last int, d Delivered, pastEnd bool, why string) error {
	switch {
	case pastEnd:
		return r.endWalk(ctx, journal, w, last, WalkEnd{Why: "past the end", Store: w.Marked})
	case last == 0:
		return nil // nothing delivered: the marks stay as they were
	}
	return r.endWalk(ctx, journal, w, last, w.cut(d, last, why))
}

func (r *Run) endWalk(ctx context.Context, journal int64, w Walk, last int, end WalkEnd) error {
	if end.Incomplete {
		r.sum.addIncomplete(journal, last, end.Why)
		r.log.Warn("nightly walk stopped short of known papers, with older pages not reached: the next nightly carries on from there",
			"journal", journal, "page", last, "why", end.Why, "max_pages", w.MaxPages, "carry_on_from_page", end.Marks[0].Page, "marks", len(end.Marks))
		if len(end.Dropped) > 0 {
			r.log.Error("too many nightly walks in a row stopped at nightly.max_pages: the deepest unreached pages are left to a backfill; raise nightly.max_pages",
				"journal", journal, "from_page", end.Dropped[0].Page)
		}
	} else {
		r.log.Info("nightly walk done", "journal", journal, "page", last, "why", end.Why, "known_pages_in_a_row", w.KnownRun)
	}
	marks, ok := r.ledger.(ledger.WalkMarks)
	if !ok || !end.Store {
		return nil
	}
	if err := marks.SetWalkMarks(ctx, journal, end.Marks); err != nil {
		return fmt.Errorf("journal %d: remember where the nightly walk stopped: %w", journal, err)
	}
	return nil
}

// StartWalk is a journal's nightly walk from page 1, with the mark an
// earlier walk left (when the ledger keeps marks).
func (r *Run) StartWalk(ctx context.Context, journal int64, w Walk) (Walk, error) {
	w.Page = 1
	marks, ok := r.ledger.(ledger.WalkMarks)
	if !ok {
		return w, nil
	}
	return LoadMark(ctx, marks, journal, w)
}

// LoadMark gives w the journal's marks from marks.
func LoadMark(ctx context.Context, marks ledger.WalkMarks, journal int64, w Walk) (Walk, error) {
	ms, err := marks.WalkMarks(ctx, journal)
	if err != nil {
		return w, fmt.Errorf("journal %d: read where the last nightly walk stopped: %w", journal, err)
	}
	w.Marks, w.Marked = ms, len(ms) > 0
	return w, nil
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
			w, err := r.StartWalk(ctx, journal, Walk{StopAfterKnown: o.StopAfterKnownPages, StopAfterRepeat: o.StopAfterRepeatPages, MaxPages: o.MaxPages})
			if err != nil {
				cancel(err)
				return
			}
			last, lastD := 0, Delivered{} // the last page delivered
			for ctx.Err() == nil {
				if stopped(o.Stop) {
					if err := r.StopWalk(ctx, journal, w, last, lastD, false, WhyStopped); err != nil {
						cancel(err)
					}
					return
				}
				oc, err := r.Page(ctx, ledger.PageKey{Journal: journal, Page: w.Page}, PageOptions{})
				if err != nil {
					cancel(err)
					return
				}
				if oc.Result != Done {
					if err := r.StopWalk(ctx, journal, w, last, lastD, oc.Result == PastEnd, WhyFailedPage); err != nil {
						cancel(err)
					}
					return
				}
				last, lastD = w.Page, oc.Delivered
				var goOn bool
				if w, goOn = w.Next(oc.Delivered); !goOn {
					if err := r.EndWalk(ctx, journal, w, oc.Delivered); err != nil {
						cancel(err)
					}
					return
				}
			}
		})
	}
	p.Wait()
	return context.Cause(ctx)
}
