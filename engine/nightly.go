package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sourcegraph/conc/pool"

	"github.com/litcrawl/litcrawl/ledger"
)

// Walk is where a nightly walk of one journal stands: the page it is at,
// and how far it may go. A fleet's job carries it from worker to worker.
type Walk struct {
	Page int `json:"page"` // the page to do next
	// KnownRun counts the pages in a row, up to Page, whose papers were
	// all known before the run began.
	KnownRun int `json:"known_run,omitempty"`
	// RepeatRun counts the pages in a row that held no paper not already
	// met in this run (a site answering every page number with the same
	// papers).
	RepeatRun int `json:"repeat_run,omitempty"`
	// Walked counts the pages walked so far.
	Walked int `json:"walked,omitempty"`
	// StopAfterKnown ends the top part of the walk after KnownRun reaches
	// it (0: never); StopAfterRepeat ends the walk after RepeatRun reaches
	// it (0: never); MaxPages bounds the pages walked.
	StopAfterKnown  int `json:"stop_after_known,omitempty"`
	StopAfterRepeat int `json:"stop_after_repeat,omitempty"`
	MaxPages        int `json:"max_pages,omitempty"`
	// Marks are where earlier walks stopped short of known papers, topmost
	// first (see below). Marked says the walk began with marks, which its
	// end replaces or clears.
	Marks  []ledger.WalkMark `json:"marks,omitempty"`
	Marked bool              `json:"marked,omitempty"`
	// PastTop: the walk has left its top part (the new papers above the
	// papers delivered before) and goes from mark to mark. InGap: it has
	// found Marks[0] and walks the papers never delivered below it.
	PastTop bool `json:"past_top,omitempty"`
	InGap   bool `json:"in_gap,omitempty"`
	// SkipFrom, when set, is the first page a jump to Marks[0] skipped:
	// until the walk finds the mark, a paper never delivered met before it,
	// or the end of the listing, proves the jump landed below the mark (papers
	// above it were removed), and the walk goes back to SkipFrom. Sweep: the
	// walk went back, and walks page by page to Marks[0] (no jump).
	SkipFrom int  `json:"skip_from,omitempty"`
	Sweep    bool `json:"sweep,omitempty"`
	// Below: the walk found it landed below Marks[0] with no page left to
	// go back with (End then leaves the mark where the jump began).
	Below bool `json:"below,omitempty"`
	// Reached is the furthest page walked: pages walked again after going
	// back do not count towards RepeatRun.
	Reached int `json:"reached,omitempty"`
	// Recent are the papers of the last two pages walked (ids and DOI
	// keys), the last page's after the one before: seen again in a gap,
	// they say the listing moved down while the walk went on, and what
	// comes before them is not the gap's end.
	Recent []string `json:"recent,omitempty"`
	// RecentLast is how many of Recent are the last page's.
	RecentLast int `json:"recent_last,omitempty"`
	// Shifted: a page showed papers the walk had met before (papers
	// arrived at the top while it went on, pushing the listing down): the
	// page it stops on may show papers that arrived meanwhile, above where
	// it got to, so the mark it leaves is loose (End: the next walk goes on
	// page by page from it, to the next mark or the end of the listing).
	Shifted bool `json:"shifted,omitempty"`
	// MarkAt is, in a gap, the place in Marks[0].Papers of the last of the
	// mark's papers met: one met again at or before it, on a later page,
	// says the listing moved down (Shifted).
	MarkAt int `json:"mark_at,omitempty"`
	// Tail is the mark of the walk's frontier: the last papers of the
	// last page whose last paper was not one delivered earlier in this run
	// (when new papers push the listing down while the walk goes on, a
	// page can show papers it already delivered: the frontier is further
	// down).
	Tail []string `json:"tail,omitempty"`
}

// MaxMarks bounds a journal's marks: one is added by each night that
// stops short of known papers before reaching the marks it had.
const MaxMarks = 64

// tailPapers is how many of a page's last papers a mark holds: one of them
// is enough to find the mark again, should another be removed.
const tailPapers = 3

// A walk's marks, and the carry-on rule. Papers are delivered top down; a
// walk that stops short of known papers (at MaxPages, at a failed page, or
// when the run stops) leaves a mark: the page it reached and that page's
// last papers. Below a mark lies a gap: papers never delivered, down to
// the next papers delivered before. Marks are the only gaps there are:
// every paper never delivered lies above the first paper delivered before
// (the top part of the listing), or in the gap below a mark.
//
// The next walk starts at page 1 as always and delivers the new papers at
// the top. Where known papers would stop it (StopAfterKnown pages of them
// in a row), it jumps to the page before the first mark's instead: its
// papers have moved down by the papers added since (or up, by those
// removed: see below). It walks on to the page
// holding a paper of the mark, then through the gap below it, delivering
// it, until the gap ends at a paper delivered by an earlier run (papers
// delivered earlier in this run, pushed down by new ones, do not end it).
// Then the next mark, and so on; past the last gap the walk is done. A walk
// that meets a mark's papers on its way down (in its top part, or on the
// same page as the end of the gap above) does the same from there.
//
// A walk stopped short again leaves its own mark where it stopped: in the
// top part, a new mark above the others; in a gap, the mark of that gap
// moves down to where it stopped; on the way to a mark after a jump, the
// mark's page only moves down; page by page through papers delivered
// before, a loose mark where it stopped (the next walk carries on from
// there). So no page is left behind as long as a night has pages to spare:
// nightly.max_pages at least stop_after_known_pages+3.
//
// Papers removed above a mark move it and its gap up, past the page the
// jump lands on (a page before the mark's). The walk finds that out before
// it delivers anything there: the landing page shows a paper never
// delivered, or the next mark's papers, before the mark's (Hold), or the
// listing ends first (PastEnd, or the last page). It then goes back to the
// pages it skipped and walks them page by page (Sweep) to the mark. Page by
// page, the next mark's papers met first say the mark's own are gone: its
// gap lay above them, and was walked. A walk never says "complete" past a
// gap it has not proven closed.
//
// Papers arriving while a walk goes on push the listing down: a page can
// show papers the walk met before (delivered earlier in the run, on its
// last two pages (Recent), or the mark's papers behind where its gap
// stands). Such a page lies above where the walk got to: it is not its
// Tail, and what comes before those papers is not a gap's end. A walk that
// saw one (Shifted) and then stops short leaves a loose mark with no gap
// to look for: the next walk goes on page by page from it, to the next
// mark or the end of the listing.
//
// Not covered: papers removed while a walk goes on (a page it has not
// reached moves up past it), and more than two pages of papers arriving
// while the walk is in a gap it jumped to (papers from pages it skipped,
// pushed into view, look like the gap's end), and a walk in its top part
// cut short (a failed page, a stop) after papers arrived above it before
// any page showed it the shift: the papers of its own first pages, pushed
// below its mark, look like the end of the gap there (random nights "all"
// 344, "kills" 257). The next nightly does not see what that hid; a
// backfill does.

// WalkEnd is how a walk ended.
type WalkEnd struct {
	Why string // "last page", "known papers only", "the same papers again", or why it was cut (WhyMaxPages, …)
	// Incomplete: the walk stopped short of known papers with older pages
	// it never reached; Marks are where the next walk carries on.
	Incomplete bool
	Marks      []ledger.WalkMark
	// Dropped: marks beyond MaxMarks that were forgotten (their pages will
	// not be reached by nightly walks: backfill them).
	Dropped []ledger.WalkMark
	// Store: the journal's marks change (set, or cleared).
	Store bool
}

// Why a walk stopped before its rule ended it (IncompleteWalk.Why).
const (
	WhyMaxPages   = "nightly.max_pages"
	WhyFailedPage = "a failed page"
	WhyStopped    = "the run was stopped"
	// WhyBackfillMaxPages: an open-ended backfill (--pages A-) stopped at
	// backfill.max_pages before the listing's end.
	WhyBackfillMaxPages = "backfill.max_pages"
)

// End is how the walk ended, called on the walk Next returned with false
// for the page d.
func (w Walk) End(d Delivered) WalkEnd {
	switch {
	case w.Below:
	case d.Last:
		return WalkEnd{Why: "last page", Store: w.Marked}
	case w.StopAfterRepeat > 0 && w.RepeatRun >= w.StopAfterRepeat:
		return WalkEnd{Why: "the same papers again", Store: w.Marked}
	case w.done():
		return WalkEnd{Why: "known papers only", Store: w.Marked}
	}
	return w.cut(d, w.Page-1, WhyMaxPages)
}

// done: the walk has left its top part and closed every gap.
func (w Walk) done() bool { return w.PastTop && len(w.Marks) == 0 }

// cut is how a walk ends that stopped short after page last, delivered as
// d: at MaxPages, at a failed page, or when the run was stopped. It leaves
// a mark where it stopped (see Walk).
func (w Walk) cut(d Delivered, last int, why string) WalkEnd {
	marks := slices.Clone(w.Marks)
	tail := w.Tail
	if len(tail) == 0 {
		tail = tailOf(d.Papers)
	}
	here := ledger.WalkMark{Page: last, Papers: tail}
	if w.Shifted {
		// Where the walk got to is uncertain: carry on page by page from
		// here, with no gap to look for (the next mark, or the end of the
		// listing, ends it).
		here.Loose = true
	}
	switch {
	case w.InGap && len(marks) > 0 && w.Shifted:
		marks[0] = here
	case w.InGap && len(marks) > 0 && !slices.Contains(marks[0].Papers, lastID(tail)):
		marks[0] = here // the gap goes on below the frontier
	case w.InGap && len(marks) > 0:
		// The frontier is the mark's own papers, found on this page: the
		// gap starts below, after the mark's papers still to come. (The
		// page the mark was found on, not the one it had: after going
		// back, the mark lies above it.)
		marks[0].Page = last
	case w.PastTop && len(marks) > 0 && (w.Below || w.Sweep && len(w.Tail) == 0):
		// Landed below the mark, and no page left to go back over what the
		// jump skipped: the next walk jumps to where this one's jump began.
		from := w.SkipFrom
		if w.Sweep {
			from = w.Page
		}
		marks[0].Page = min(marks[0].Page, from)
	case w.PastTop && len(marks) > 0 && w.SkipFrom == 0:
		// Page by page from the top part (or from the gap above, or back
		// over skipped pages) without meeting the mark: every paper down to
		// here was delivered before. The next walk carries on from here.
		gap := marks[0].Papers
		if marks[0].Loose {
			gap = marks[0].Gap
		}
		marks[0] = ledger.WalkMark{Page: last, Papers: tail, Loose: true, Gap: gap}
	case w.PastTop && len(marks) > 0:
		// Jumped towards the first mark, through papers delivered before:
		// the mark lies further down (or the next walk finds it landed
		// below it, and goes back).
		marks[0].Page = max(marks[0].Page, last)
	default:
		marks = append([]ledger.WalkMark{here}, marks...)
	}
	end := WalkEnd{Why: why, Incomplete: true, Marks: marks, Store: true}
	if len(marks) > MaxMarks {
		end.Marks, end.Dropped = marks[:MaxMarks], marks[MaxMarks:]
	}
	return end
}

// lastID is the id of the last paper of a mark (its entries are ids, each
// maybe followed by a "doi:" key).
func lastID(mark []string) string {
	for i := len(mark) - 1; i >= 0; i-- {
		if !strings.HasPrefix(mark[i], "doi:") {
			return mark[i]
		}
	}
	return ""
}

// tailOf is the mark of a page's last papers: their ids and DOI keys.
func tailOf(papers []ledger.Paper) []string {
	return MarkOf(papers[max(0, len(papers)-tailPapers):])
}

// MarkOf is the mark of papers: their ids and DOI keys.
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

// markIndex is the place of paper p in a mark's entries (its id or DOI
// key), or -1.
func markIndex(p ledger.Paper, mark []string) int {
	k := p.DOIKey()
	at := -1
	for i, m := range mark {
		if p.ID == m || k != "" && "doi:"+k == m {
			at = i
		}
	}
	return at
}

// in says whether paper p is one of the mark's.
func in(p ledger.Paper, mark []string) bool {
	k := p.DOIKey()
	for _, m := range mark {
		if p.ID == m || k != "" && "doi:"+k == m {
			return true
		}
	}
	return false
}

// scan follows the marks over a page's papers: it finds Marks[0] (its
// last paper on the page), walks the gap below it (the mark's papers that
// spill onto the next page are not the gap's end), and drops the mark
// where the gap ends, at a paper delivered by an earlier run; then the
// next mark, on the same page.
//
// Past the top part, between the top part and Marks[0] every paper was
// delivered before. After a jump (SkipFrom), a paper never delivered or
// the next mark's papers met before the mark's own say the jump landed
// below the mark (papers above it were removed, and the mark and its gap
// moved up): scan says to go back. Walking page by page, the next mark's
// papers met before the first's say the first's papers are gone, and its
// gap (above them) was walked: the first mark is dropped. A loose mark's
// papers are where to carry on from, page by page, looking for Gap.
func (w *Walk) scan(d Delivered) (back bool) {
	seen := func(i int) ledger.Seen {
		if i < len(d.Seen) {
			return d.Seen[i]
		}
		return ledger.SeenBefore
	}
	find := func(from int, mark []string) (first, last int) {
		first, last = -1, -1
		for j := from; j < len(d.Papers); j++ {
			if in(d.Papers[j], mark) {
				last = j
				if first < 0 {
					first = j
				}
			}
		}
		return first, last
	}
	i := 0
	for i < len(d.Papers) && len(w.Marks) > 0 {
		m := w.Marks[0]
		if !w.InGap && m.Loose {
			// The papers the gap starts after, met on the way (the
			// papers to carry on from may be gone): the mark is found.
			if gf, _ := find(i, m.Gap); gf >= 0 {
				ms := slices.Clone(w.Marks)
				ms[0] = ledger.WalkMark{Page: m.Page, Papers: m.Gap}
				w.Marks = ms
				continue
			}
		}
		if !w.InGap {
			first, last := find(i, m.Papers)
			before := func(j int) bool { return j >= 0 && (first < 0 || j < first) }
			next := -1 // the next mark's papers
			if len(w.Marks) > 1 {
				next, _ = find(i, w.Marks[1].Papers)
			}
			unknown := -1 // the first paper never delivered
			for j := i; j < len(d.Papers) && w.SkipFrom > 0; j++ {
				if seen(j) == ledger.Unknown {
					unknown = j
					break
				}
			}
			switch {
			case w.SkipFrom > 0 && (before(unknown) || before(next)):
				return true
			case before(next):
				w.Marks, w.Sweep = w.Marks[1:], false
			case first < 0:
				return false
			case m.Loose:
				// Where the last walk stopped: page by page from here to
				// the gap.
				ms := slices.Clone(w.Marks)
				ms[0] = ledger.WalkMark{Page: m.Page, Papers: m.Gap}
				w.Marks, w.SkipFrom, w.Sweep, i = ms, 0, true, last+1
			default:
				w.InGap, w.SkipFrom, w.Sweep, i = true, 0, false, last+1
				w.MarkAt = markIndex(d.Papers[last], m.Papers)
			}
			continue
		}
		// The mark's papers, or papers delivered earlier in this run, on
		// this page again: the listing moved down while the walk went on,
		// and what comes before them is not the gap's end (papers above
		// the mark, pushed into view, were delivered before too).
		for j := i; j < len(d.Papers); j++ {
			if in(d.Papers[j], m.Papers) || seen(j) == ledger.SeenThisRun || in(d.Papers[j], w.Recent) {
				i = j + 1
			}
		}
		for ; i < len(d.Papers); i++ {
			if seen(i) == ledger.SeenBefore && !in(d.Papers[i], m.Papers) {
				w.Marks, w.InGap = w.Marks[1:], false // the gap ends here
				break
			}
		}
	}
	if len(w.Marks) == 0 {
		w.Marks, w.InGap = nil, false
	}
	return false
}

// Hold says whether the walk's next page is to be held back (PageOptions):
// after a jump, a page that shows the walk landed below its mark (scan).
// Its papers are then not delivered: the walk goes back to the pages it
// skipped, and delivers the papers of the gap in order, so that no paper
// delivered out of order is taken for the end of a gap. nil when the walk
// did not jump.
func (w Walk) Hold() func(papers []ledger.Paper, seen []ledger.Seen) bool {
	if !w.seeking() || w.SkipFrom == 0 {
		return nil
	}
	return func(papers []ledger.Paper, seen []ledger.Seen) bool {
		c := w
		return c.scan(Delivered{Papers: papers, Seen: seen})
	}
}

// CrashMarks gives, for the page the walk is on, the marks a walk stopped
// right after it would leave: committed with the page (Item.Marks), they
// make a run killed at any moment carry on as one stopped there. Without
// them a nightly killed after committing its first pages would find those
// pages known on the next run and stop, leaving the new papers below them
// behind for good.
func (w Walk) CrashMarks() func(d Delivered) []ledger.WalkMark {
	page := w.Page
	return func(d Delivered) []ledger.WalkMark {
		next, goOn := w.Next(d)
		if goOn {
			return next.cut(d, page, WhyStopped).Marks
		}
		return next.End(d).Marks
	}
}

// seeking: past its top part, the walk looks for Marks[0].
func (w Walk) seeking() bool { return w.PastTop && !w.InGap && len(w.Marks) > 0 }

// goBack is the walk going back to the pages its jump skipped.
func (w Walk) goBack() Walk {
	w.Page, w.SkipFrom, w.Sweep, w.Tail = w.SkipFrom, 0, true, nil
	return w
}

// PastEnd is where a walk goes whose page lies past the end of the
// listing: back to the pages it skipped, when it jumped there looking for
// a mark and pages are left to it (the listing shrank: the mark and its gap
// lie above). Otherwise the walk ends (StopWalk).
func (w Walk) PastEnd() (Walk, bool) {
	if !w.seeking() || w.SkipFrom == 0 || w.Walked+1 >= w.MaxPages {
		return w, false
	}
	w.Walked++
	return w.goBack(), true
}

// Next is the one walk rule, of nightly walks and open-ended backfills:
// after page w.Page was delivered as d, does the walk go on, and to where?
// Its top part stops after StopAfterKnown pages in a row whose papers were
// all known before the run began (papers delivered earlier in the same
// run do not count: new papers pushing older ones down while the walk goes
// on cannot stop it early); then, with marks, it carries on from them (see
// Walk). It stops after StopAfterRepeat pages in a row that held no paper
// not already met in this run (a site that answers every page number with
// the same papers), at the last page the pager names, and after MaxPages
// pages. When it stops, End says how.
func (w Walk) Next(d Delivered) (Walk, bool) {
	next := w
	next.Page++
	next.Walked++
	n := len(d.Papers) // distinct papers (a paper listed twice counts once)
	if n == 0 {
		n = d.Records
	}
	if n > 0 && d.KnownBefore == n {
		next.KnownRun++
	} else {
		next.KnownRun = 0
	}
	revisit := w.Page <= w.Reached // walked before going back
	switch {
	case revisit: // neither a repeat nor fresh
	case d.Records > 0 && d.Fresh == 0:
		next.RepeatRun++
	default:
		next.RepeatRun = 0
	}
	next.Reached = max(w.Reached, w.Page)
	if n := len(d.Papers); n > 0 && (revisit || n > len(d.Seen) || d.Seen[n-1] != ledger.SeenThisRun) {
		next.Tail = tailOf(d.Papers)
	}
	// Papers the walk met before, on this page: the listing moved down
	// while it went on, and this page lies above where it got to (it is
	// not where the walk stands, Tail).
	moved := false
	for i, p := range d.Papers {
		if revisit {
			break
		}
		if i < len(d.Seen) && d.Seen[i] == ledger.SeenThisRun || in(p, w.Recent) {
			moved = true
		}
		if w.InGap && len(w.Marks) > 0 {
			if k := markIndex(p, w.Marks[0].Papers); k >= 0 && k <= w.MarkAt {
				moved = true
			} else if k > w.MarkAt {
				next.MarkAt = k // the mark's papers spilling onto this page
			}
		}
	}
	if moved {
		next.Shifted = true
		next.Tail = w.Tail
	}
	back := next.scan(d)
	last := MarkOf(d.Papers)
	keep := min(max(w.RecentLast, 0), len(w.Recent))
	next.Recent = append(slices.Clone(w.Recent[len(w.Recent)-keep:]), last...)
	next.RecentLast = len(last)
	if !next.PastTop && !next.InGap && w.StopAfterKnown > 0 && next.KnownRun >= w.StopAfterKnown {
		next.PastTop = true
	}
	// A jump that meets the end of the listing before the mark landed
	// below it: the listing shrank.
	back = back || d.Last && next.seeking() && next.SkipFrom > 0
	switch {
	case back && next.Walked < w.MaxPages:
		return next.goBack(), true
	case back:
		next.Below = true
		return next, false
	case d.Last, w.StopAfterRepeat > 0 && next.RepeatRun >= w.StopAfterRepeat, next.done():
		return next, false
	case next.Walked >= w.MaxPages:
		return next, false
	case next.seeking() && !next.Sweep:
		// Jump to the page before the mark's: a page of slack, should a
		// few papers above the mark have been removed from the listing.
		// A jump over more than that is found out (scan) and undone.
		if to := next.Marks[0].Page - 1; to > next.Page {
			if next.SkipFrom == 0 {
				next.SkipFrom = next.Page
			}
			next.Page = to
		}
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
	return r.endWalk(ctx, journal, w, w.Page-1, w.End(d), false)
}

// StopWalk ends a journal's walk that did not end by its rule: the page
// after last (the last page it delivered, as d; 0: none) was past the end
// of the listing (the walk is complete), or failed, or the run was stopped
// (why: WhyFailedPage, WhyStopped). A walk cut short leaves a mark at its
// last page, as one stopped at MaxPages does, so the next walk carries on
// from there.
func (r *Run) StopWalk(ctx context.Context, journal int64, w Walk, last int, d Delivered, pastEnd bool, why string) error {
	return r.stopWalk(ctx, journal, w, last, d, pastEnd, why, false)
}

// stopWalk is StopWalk; stale: a page of the walk was committed with
// marks (CrashMarks) that the end must replace even when it would leave
// the journal's marks as they were.
func (r *Run) stopWalk(ctx context.Context, journal int64, w Walk, last int, d Delivered, pastEnd bool, why string, stale bool) error {
	switch {
	case pastEnd && w.seeking() && w.SkipFrom > 0:
		// Jumped past the end, with no page left to go back (PastEnd).
		w.Below = true
		return r.endWalk(ctx, journal, w, last, w.cut(d, last, WhyMaxPages), stale)
	case pastEnd:
		return r.endWalk(ctx, journal, w, last, WalkEnd{Why: "past the end", Store: w.Marked}, stale)
	case last == 0:
		return nil // nothing delivered: the marks stay as they were
	}
	return r.endWalk(ctx, journal, w, last, w.cut(d, last, why), stale)
}

func (r *Run) endWalk(ctx context.Context, journal int64, w Walk, last int, end WalkEnd, stale bool) error {
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
	// Set too when the walk leaves them as they were (end.Store false)
	// but a page's commit left the marks a crash there would need.
	marks, ok := r.ledger.(ledger.WalkMarks)
	if !ok || !end.Store && !stale {
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
}

// limits are journal's bounds.
func (o NightlyOptions) limits(journal int64) Limits {
	if l, ok := o.PerJournal[journal]; ok {
		return l
	}
	return Limits{StopAfterKnownPages: o.StopAfterKnownPages, MaxPages: o.MaxPages, StopAfterRepeatPages: o.StopAfterRepeatPages}
}

// Nightly walks each journal from page 1 and delivers only papers never
// delivered before, page by page, each page committed before the walk
// decides whether to go on (Walk.Next). A page that fails stops its
// journal's walk (and counts as failed); the next run walks again from page
// 1. Journals are walked concurrently, up to the run's concurrency.
func (r *Run) Nightly(ctx context.Context, o NightlyOptions) error {
	for _, j := range o.Journals {
		if l := o.limits(j); l.StopAfterKnownPages < 1 || l.MaxPages < 1 {
			return fmt.Errorf("nightly: journal %d: stop_after_known_pages %d and max_pages %d must be at least 1", j, l.StopAfterKnownPages, l.MaxPages)
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	p := pool.New().WithMaxGoroutines(r.conc)
	for _, journal := range o.Journals {
		p.Go(func() {
			l := o.limits(journal)
			w, err := r.StartWalk(ctx, journal, Walk{StopAfterKnown: l.StopAfterKnownPages, StopAfterRepeat: l.StopAfterRepeatPages, MaxPages: l.MaxPages})
			if err != nil {
				cancel(err)
				return
			}
			last, lastD := 0, Delivered{} // the last page delivered
			stale := false                // the last commit left marks that are not the walk's end's
			for ctx.Err() == nil {
				if stopped(o.Stop) {
					if err := r.stopWalk(ctx, journal, w, last, lastD, false, WhyStopped, stale); err != nil {
						cancel(err)
					}
					return
				}
				crash := w.CrashMarks()
				marks := func(d Delivered) []ledger.WalkMark {
					m := crash(d)
					stale = len(m) > 0
					return m
				}
				oc, err := r.Page(ctx, ledger.PageKey{Journal: journal, Page: w.Page}, PageOptions{Hold: w.Hold(), Marks: marks})
				if err != nil {
					cancel(err)
					return
				}
				if oc.Result == PastEnd {
					if back, ok := w.PastEnd(); ok {
						w = back
						continue
					}
				}
				if oc.Result != Done {
					if err := r.stopWalk(ctx, journal, w, last, lastD, oc.Result == PastEnd, WhyFailedPage, stale); err != nil {
						cancel(err)
					}
					return
				}
				last, lastD = w.Page, oc.Delivered
				var goOn bool
				w, goOn = w.Next(oc.Delivered)
				if !goOn {
					if err := r.endWalk(ctx, journal, w, w.Page-1, w.End(oc.Delivered), stale); err != nil {
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
