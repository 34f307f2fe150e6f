package engine

import (
	"context"
	"fmt"

	"github.com/sourcegraph/conc/pool"

	"github.com/litcrawl/litcrawl/internal/backoff"
	"github.com/litcrawl/litcrawl/internal/ledger"
)

// StepWalk does what follows a step of a journal's nightly walk, for
// local runs and the fleet alike: w is the walk a step gave (Next,
// PastEnd, Stop). It says the step's notes (a warning each, and the run's
// notes); when the step ended the walk, it logs how, counts a walk cut
// short as incomplete (with a warning) and the audit's coverage in the
// summary; and it stores the state the walk leaves unless the step's page
// commit carried it already (carried: a local run's pages commit
// CrashState; a fleet's do not).
func (r *Run) StepWalk(ctx context.Context, journal int64, w Walk, carried bool) error {
	for _, n := range w.Notes {
		r.sum.addWalkNote(journal, n)
		r.log.Warn("nightly walk: "+n, "journal", journal)
	}
	e := w.Ended()
	if e == nil {
		return nil
	}
	switch {
	case e.Audit:
		r.sum.addAudit(journal, *e)
		r.log.Info("nightly audit done", "journal", journal, "from_page", e.AuditFrom, "to_page", e.AuditTo, "next_page", e.State.Audit.Next, "round_complete", e.Wrapped)
	case e.Incomplete:
		r.sum.addIncomplete(journal, e.Page, e.Why, markPage(e.State))
		r.log.Warn("nightly walk stopped short, with gaps not closed: the next nightly carries on from there",
			"journal", journal, "page", e.Page, "why", e.Why, "max_pages", w.MaxPages, "carry_on_from_page", markPage(e.State), "marks", len(e.State.Marks))
	case e.Page > 0:
		r.log.Info("nightly walk done", "journal", journal, "page", e.Page, "why", e.Why)
	}
	if len(e.Dropped) > 0 {
		r.log.Error("too many nightly walks in a row stopped short: the deepest gaps are left to the audit and a backfill; raise nightly.max_pages",
			"journal", journal, "from_page", e.Dropped[0].Page)
	}
	if !e.Audit && w.phase() != PhaseAudit && w.AuditPages > 0 {
		r.sum.addAudit(journal, *e) // no audit follows tonight: its coverage as it stands
	}
	if carried || e.Page == 0 && !e.Audit {
		return nil
	}
	ws, ok := r.ledger.(ledger.WalkStates)
	if !ok {
		return nil
	}
	if err := ws.SetWalkState(ctx, journal, e.State); err != nil {
		return fmt.Errorf("journal %d: remember where the nightly walk stopped: %w", journal, err)
	}
	return nil
}

func markPage(s ledger.WalkState) int {
	if len(s.Marks) == 0 {
		return 0
	}
	return s.Marks[0].Page
}

// WalkStates is the ledger's ability to keep walk states (nil: it has
// none).
func (r *Run) WalkStates() ledger.WalkStates {
	ws, _ := r.ledger.(ledger.WalkStates)
	return ws
}

// StartWalk is a journal's nightly walk from page 1, over the state
// earlier walks left (when the ledger keeps it).
func (r *Run) StartWalk(ctx context.Context, journal int64, l Limits, auditPages int) (Walk, error) {
	var s ledger.WalkState
	if ws := r.WalkStates(); ws != nil {
		var err error
		if s, err = ws.WalkState(ctx, journal); err != nil {
			return Walk{}, fmt.Errorf("journal %d: read where the last nightly walk stopped: %w", journal, err)
		}
	}
	return NewWalk(l, auditPages, s), nil
}

// FirstCrawl says, once, when the ledger holds nothing yet: a nightly on
// it delivers every paper it walks, up to nightly.max_pages a journal
// (a new or mistyped state directory does that too). true: it said so.
// The note names how history is fetched (a local run's advice, or the
// fleet's: FleetFirstCrawlNote).
func (r *Run) FirstCrawl(ctx context.Context, note string) (bool, error) {
	e, ok := r.ledger.(ledger.Emptiness)
	if !ok {
		return false, nil
	}
	empty, err := e.Empty(ctx)
	if err != nil || !empty {
		return false, err
	}
	r.sum.addWalkNote(0, note)
	r.log.Warn(note)
	return true, nil
}

// FirstCrawlNote is what a nightly on an empty state says, and
// FleetFirstCrawlNote what a fleet's worker says on an empty ledger.
const (
	FirstCrawlNote      = "first crawl: the state holds no papers yet, so this nightly delivers every paper it walks, up to nightly.max_pages a journal, and carries on from there on later nights; crawl backfill --pages 1- fetches a journal's history (check --state-dir if a state was expected)"
	FleetFirstCrawlNote = "first crawl: the fleet's ledger holds no papers yet, so this nightly delivers every paper it walks, up to nightly.max_pages a journal, and carries on from there on later nights; crawl enqueue --pages 1-N fetches a journal's history (check --frontier if a fleet's ledger was expected)"
)

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
	// AuditPages: after its walk, each journal re-reads this many pages
	// of the audit's round (Walk; 0: no audit).
	AuditPages int
	// PerJournal are the bounds of the journals that have their own (a
	// configuration's journals[]); the others walk by the fields above.
	PerJournal map[int64]Limits
}

// Limits are one journal's own walk bounds (see NightlyOptions and
// BackfillOptions for what each means).
type Limits struct {
	StopAfterKnownPages  int // nightly
	MaxPages             int // nightly: of a walk; backfill: of an open range
	StopAfterRepeatPages int
	AuditPages           int // nightly (in PerJournal: the journal's own)
}

// limits are journal's bounds.
func (o NightlyOptions) limits(journal int64) Limits {
	if l, ok := o.PerJournal[journal]; ok {
		return l
	}
	return Limits{StopAfterKnownPages: o.StopAfterKnownPages, MaxPages: o.MaxPages, StopAfterRepeatPages: o.StopAfterRepeatPages, AuditPages: o.AuditPages}
}

// auditPages are journal's audit pages a night.
func (o NightlyOptions) auditPages(journal int64) int { return o.limits(journal).AuditPages }

// Nightly walks each journal from page 1 and delivers only papers never
// delivered before, page by page, each page committed (with the walk's
// state a stop right after it would leave) before the walk decides where
// to go (Walk.Next); then the audit's pages. A page that fails stops its
// journal's walk (and counts as failed). Journals are walked concurrently,
// up to the run's concurrency.
func (r *Run) Nightly(ctx context.Context, o NightlyOptions) error {
	for _, j := range o.Journals {
		if l := o.limits(j); l.StopAfterKnownPages < 1 || l.MaxPages < 1 {
			return fmt.Errorf("nightly: journal %d: stop_after_known_pages %d and max_pages %d must be at least 1", j, l.StopAfterKnownPages, l.MaxPages)
		}
	}
	if _, err := r.FirstCrawl(ctx, FirstCrawlNote); err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	p := pool.New().WithMaxGoroutines(r.conc)
	for _, journal := range o.Journals {
		p.Go(func() {
			if err := r.walkJournal(ctx, journal, o); err != nil {
				cancel(err)
			}
		})
	}
	p.Wait()
	return context.Cause(ctx)
}

// walkJournal is one journal's nightly walk and audit.
func (r *Run) walkJournal(ctx context.Context, journal int64, o NightlyOptions) error {
	w, err := r.StartWalk(ctx, journal, o.limits(journal), o.auditPages(journal))
	if err != nil {
		return err
	}
	last, lastD := 0, Delivered{} // the last page the walk delivered
	carried := true               // the last page's commit carried the walk's state (not held back)
	for ctx.Err() == nil {
		if stopped(o.Stop) {
			return r.StepWalk(ctx, journal, w.Stop(lastD, last, WhyStopped), carried)
		}
		oc, err := r.Page(ctx, ledger.PageKey{Journal: journal, Page: w.Page}, PageOptions{Hold: w.Hold(), Walk: w.CrashState()})
		if err != nil {
			return err
		}
		var next Walk
		goOn := false
		switch oc.Result {
		case PastEnd:
			next, goOn = w.PastEnd()
			carried = false
			if err := r.StepWalk(ctx, journal, next, false); err != nil {
				return err
			}
		case Done:
			if w.phase() != PhaseAudit {
				last, lastD = w.Page, oc.Delivered
			}
			next, goOn = w.Next(oc.Delivered)
			// A page held back commits nothing, its walk's state neither.
			carried = !oc.Delivered.Held
			if err := r.StepWalk(ctx, journal, next, carried); err != nil {
				return err
			}
		default:
			from := w
			if w.phase() == PhaseAudit && !backoff.IsRetryable(oc.Err) {
				from, carried = w.PassOver(), false
			}
			next = from.Stop(lastD, last, WhyFailedPage)
			if err := r.StepWalk(ctx, journal, next, carried); err != nil {
				return err
			}
			if w.phase() == PhaseAudit || next.phase() != PhaseAudit {
				return nil
			}
			goOn = true // the walk cut at a failed page; its audit goes on
		}
		if !goOn {
			return nil
		}
		w = next
	}
	return nil
}
