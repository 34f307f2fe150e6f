package engine

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/litcrawl/litcrawl/internal/ledger"
)

// The nightly walk, and the invariant it keeps.
//
// The listing is newest first. What a journal's walks have delivered lies
// in bands: the head band, from the top of the listing as the last walk
// saw it, and below each gap an earlier walk left (a mark), the band that
// walk had delivered before. Between the bands lie the gaps, and above the
// head band the papers that arrived since. The invariant: every paper
// still listed that was never delivered lies above the head band or in a
// gap, or was moved there out of order (re-dated, inserted, listed again),
// which only the audit finds. The state says where the bands begin: the
// head (page 1's first papers), and for each gap the papers above it
// (where the gap begins) and the first papers of the band below it (End).
//
// Proof. A walk closes the top part, or a gap, only on proof: the papers
// that begin the band below (the head, a mark's End) met next to each
// other, in their order — two of them side by side, so that one paper
// moved out of place, or listed twice, proves nothing — or the end of the
// listing, or walking on, page by page, into the next gap's start (met the
// same way). A paper delivered before met anywhere else is no proof: the
// walk goes on and says so. A paper never delivered is delivered wherever
// it is met, in any phase: a gap ends only on proof, so a paper delivered
// out of order never ends one.
//
// Phases (Walk.Phase) and transitions, a page at a time:
//
//	phase  on the page                               goes to
//	top    the head's papers in order                (the head's band passed) seek/sweep to Marks[0], or the walk is done
//	top    Marks[0]'s papers in order                gap (the head's papers are gone: walked past them)
//	top    no head: stop_after_known pages of known  seek/sweep, or done (state of an earlier version)
//	top    head: give_up pages of known, no head     seek/sweep, or done: unproven, said, and left to the audit
//	seek   Marks[0]'s papers                         gap, after them
//	seek   first a new paper, the End's papers in    sweep, back from the first page the jump skipped
//	       order, the next mark's, or the last page
//	seek   only known papers, none of the mark's     sweep, on from the next page
//	sweep  Marks[0]'s papers                         gap, after them
//	sweep  a paper never delivered                   gap, from it (the mark's own papers are gone)
//	sweep  the End's papers in order                 the gap is closed (its papers were removed): the next mark
//	sweep  give_up pages of known past Marks[0]'s    the mark is dropped: unproven, said, left to the audit
//	       page, none of its papers
//	gap    the End's papers in order                 the gap is closed: seek/sweep to the next mark, or done
//	gap    the next mark's papers in order           gap of the next mark (the End's papers are gone)
//	gap    a paper delivered before, not the End's   gap: no proof, said once a page
//	gap    give_up pages of known, no End met        closed unproven, said, left to the audit (a gap
//	                                                 whose End is not known, a first crawl's, the same)
//	any    the listing's last page, or past it       done (seek: back first)
//	any    max_pages walked, a failed page, a stop   cut: a mark where it stopped (see cut)
//	(end)  a gap tried 3 nights, no further on it    given up (WalkMark.Stuck), left to the audit
//	audit  a page re-read                            audit, the next page, audit_pages a night
//
// give_up is stop_after_known_pages + 1. A walk, ended by its rule or cut
// short (not stopped), goes on to the audit: audit_pages pages from
// where the last audit stopped, round the whole listing (Audit). That is
// what finds what no walk can prove: papers moved below the bands, papers
// removed while a walk went on (a page it had not reached moves up past
// it), a gap given up. With the listing stable, every paper listed is
// delivered within pages ÷ audit_pages nights.

// Phase is where a nightly walk stands (see the table above).
type Phase string

// The walk's phases.
const (
	PhaseTop   Phase = "top"   // from page 1, the papers that arrived since the last walk
	PhaseSeek  Phase = "seek"  // on the page a jump to Marks[0] landed on
	PhaseSweep Phase = "sweep" // page by page towards Marks[0], from a page proven above its gap
	PhaseGap   Phase = "gap"   // below Marks[0]'s papers, delivering, to its End
	PhaseAudit Phase = "audit" // the walk is over: re-reading the audit's pages
)

// Phases are the walk's phases, in the order a walk goes through them.
var Phases = []Phase{PhaseTop, PhaseSeek, PhaseSweep, PhaseGap, PhaseAudit}

// Walk is where a nightly walk of one journal stands: the page it is at,
// its phase, how far it may go and what it is looking for.
type Walk struct {
	Page  int   // the page to do next
	Phase Phase // "" is PhaseTop

	// StopAfterKnown: without a head to prove against, the top part (and
	// a gap without an End) ends after this many pages in a row of papers
	// all delivered by earlier runs; give_up is one more. StopAfterRepeat
	// ends the walk after this many pages in a row with no paper not
	// already met in this run (0: never). MaxPages bounds the pages
	// walked; AuditPages the pages the audit re-reads after the walk.
	StopAfterKnown, StopAfterRepeat, MaxPages, AuditPages int

	Walked int // pages walked (the audit's not counted)
	// KnownRun counts the pages in a row, up to Page, of papers all
	// delivered by earlier runs, since the phase began (the page it began
	// on not counted).
	KnownRun  int
	RepeatRun int // pages in a row with no paper not already met in this run
	Reached   int // the furthest page walked
	// Contig: pages 1 to Contig were walked in order (the audit skips
	// them: they were re-read tonight).
	Contig int

	// State is what the walk works from and leaves: the head it proves the
	// top part against (as the walk began), the gaps still open (Marks[0]
	// is the one it works on) and the audit.
	State ledger.WalkState
	// NewHead is page 1's first papers as this walk read them: the head it
	// leaves.
	NewHead []string
	// PerPage is how many papers page 1 showed: positions are counted
	// with it.
	PerPage int
	// Bound is the position (from the top of the listing, 1-based) of the
	// first paper of the bound last proven (the head, an End), where
	// Marks[0]'s Offset counts from; 0: not known.
	Bound int
	// Target is the page Marks[0]'s papers are expected on, while the walk
	// looks for them (seek, sweep).
	Target int
	// SkipFrom is, in seek, the first page the jump skipped: back there if
	// the landing page shows the jump went too far.
	SkipFrom int
	// Prev is the last paper of the last page walked (its id and DOI
	// key): two papers in order may be either side of a page break.
	Prev []string
	// Tail is the last papers of the last page whose last paper was not
	// one delivered earlier in this run (new papers pushing the listing
	// down while the walk goes on show a page's papers again): where a
	// walk stopped there leaves the start of its gap.
	Tail []string
	// Back is, after a jump went too far, the position of the first paper
	// of the page it went back from: the gap starts above it.
	Back int
	// Looking is Marks[0] as the walk began looking for it: a walk that
	// leaves it as it was made no progress on it (WalkMark.Stuck).
	Looking *ledger.WalkMark
	// Gained counts the papers never delivered this walk met past its top
	// part: a night that met none on a gap got no further on it.
	Gained int
	// Closed counts the gaps this walk closed; Spent the pages it walked
	// past its top part (a night whose pages all went to new papers at the
	// top did not try the gaps).
	Closed, Spent int
	// Unproven: a search of this walk gave up (its end is then said as
	// unproven).
	Unproven bool
	// Met: in a sweep, a paper never delivered was met above where the
	// mark's papers were expected (the gap, or part of it, may lie here).
	Met bool
	// LastPage is the listing's last page, when a page said so;
	// EndBefore a page found past the listing's end (a jump's).
	LastPage, EndBefore int
	// Shift is how far papers arriving while the walk went on have pushed
	// the listing down, as pages showing papers of the two pages before
	// them again told: positions (Bound, marks' Offset) count in the
	// listing as it was when the walk read page 1.
	Shift int
	// Recent are the papers of the last two pages walked (ids and DOI
	// keys), RecentAt their positions, RecentLast how many are the last
	// page's.
	Recent     []string
	RecentAt   []int
	RecentLast int
	RecentPage int // the last page of Recent
	// AuditLeft is the pages the audit still re-reads tonight, from
	// AuditFrom.
	AuditLeft, AuditFrom int

	// Notes are what the last step found that the run says (in the log
	// and the run's notes): not carried from step to step.
	Notes []string `json:"-"`
	// end is set by the step that ended the walk, or the audit.
	end *WalkEnd
	// jump is, while a page is scanned, the page the walk jumps to after
	// it (0: none).
	jump int
}

// MaxMarks bounds a journal's marks: one is added by each night that
// stops short in its top part before reaching the marks it had (the
// ledger's bound on a walk state read back).
const MaxMarks = ledger.MaxMarks

// MaxStuck is how many nights in a row a walk may get no further on a
// gap before the gap is given up (and left to the audit).
const MaxStuck = 3

// tailPapers is how many of a page's last papers a mark holds, and
// headPapers how many of page 1's first papers the head holds: two of them
// side by side prove a bound, so one or two removed still leave a proof.
const (
	tailPapers = 3
	headPapers = 4
)

// WalkEnd is how a walk ended.
type WalkEnd struct {
	// Why: "last page", "past the end", "proven", "the same papers again",
	// or why it was cut (WhyMaxPages, …).
	Why string
	// Incomplete: the walk stopped short with gaps it did not close;
	// State.Marks are where the next walk carries on.
	Incomplete bool
	// Page is the last page walked.
	Page int
	// State is what the walk leaves (head, marks, audit).
	State ledger.WalkState
	// Dropped: marks beyond MaxMarks that were forgotten (their pages are
	// left to the audit and a backfill).
	Dropped []ledger.WalkMark
	// Audit: the audit's end rather than the walk's.
	Audit bool
	// AuditFrom and AuditTo are the pages the audit re-read tonight (0:
	// none); Wrapped, it reached the listing's end and starts again.
	AuditFrom, AuditTo int
	Wrapped            bool
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

// Ended is how the walk ended at the step that gave w (nil: it goes on).
func (w Walk) Ended() *WalkEnd { return w.end }

// phase is w.Phase, "" read as top.
func (w Walk) phase() Phase { return cmpPhase(w.Phase) }

func cmpPhase(p Phase) Phase {
	if p == "" {
		return PhaseTop
	}
	return p
}

// giveUp is the pages in a row of known papers after which a search for
// the papers that prove a bound gives up on them.
func (w Walk) giveUp() int { return w.StopAfterKnown + 1 }

// NewWalk is a journal's nightly walk from page 1 over the state s.
func NewWalk(l Limits, auditPages int, s ledger.WalkState) Walk {
	return Walk{Page: 1, Phase: PhaseTop, StopAfterKnown: l.StopAfterKnownPages, StopAfterRepeat: l.StopAfterRepeatPages,
		MaxPages: l.MaxPages, AuditPages: auditPages, State: s.Clone()}
}

// Next is the one walk rule: after page w.Page was delivered as d, where
// does the walk go? false: it is over (the audit too). A step that ends
// the walk sets Ended; with audit pages, the walk goes on in PhaseAudit.
func (w Walk) Next(d Delivered) (Walk, bool) {
	if w.phase() == PhaseAudit {
		return w.auditNext(d)
	}
	n := w
	n.Notes, n.end = nil, nil
	n.State = w.State.Clone()
	n.Phase = w.phase()
	page := w.Page
	n.Page++
	n.Walked++
	ps := d.Papers
	if page == 1 {
		n.NewHead = MarkOf(ps[:min(len(ps), headPapers)])
		n.PerPage = max(d.Records, len(ps))
	}
	if page == w.Contig+1 {
		n.Contig = page
	}
	cnt := len(ps) // distinct papers (a paper listed twice counts once)
	if cnt == 0 {
		cnt = d.Records
	}
	if cnt > 0 && d.FromEarlierRuns == cnt {
		n.KnownRun++
	} else {
		n.KnownRun = 0
	}
	revisit := page <= w.Reached // walked before going back
	switch {
	case revisit:
	case d.Records > 0 && d.NewToRun == 0:
		n.RepeatRun++
	default:
		n.RepeatRun = 0
	}
	n.Reached = max(w.Reached, page)
	if len(ps) > 0 && (revisit || len(d.Delivery) < len(ps) || d.Delivery[len(ps)-1] != ledger.DeliveredThisRun) {
		n.Tail = tailOf(ps)
	}
	if d.Last {
		n.LastPage = page
	}
	if n.Phase != PhaseTop {
		n.Spent++
	}
	if n.Phase != PhaseTop && !d.Held {
		for _, sn := range d.Delivery {
			if sn == ledger.NeverDelivered {
				n.Gained++
			}
		}
	}
	n.follow(page, d, revisit)
	done := n.scan(page, d)
	if len(ps) > 0 {
		n.Prev = MarkOf(ps[len(ps)-1:])
	}
	switch {
	case n.Page <= page: // going back: the page after is not where it goes
		if n.Walked >= w.MaxPages {
			return n.stop(d, page, WhyMaxPages)
		}
		return n, true
	case done:
		return n.complete(page, "proven")
	case d.Last && n.Phase != PhaseSeek:
		return n.complete(page, "last page")
	case w.StopAfterRepeat > 0 && n.RepeatRun >= w.StopAfterRepeat:
		return n.complete(page, "the same papers again")
	case n.Walked >= w.MaxPages:
		return n.stop(d, page, WhyMaxPages)
	}
	return n, true
}

// follow measures the listing's shift (Shift): papers arriving while the
// walk goes on push the listing down, and the next page begins with the
// last papers of the page before (or of the one before that) again. The
// page's first papers met on those two pages, as a run in the same order
// and at the same distance (two of them, or all the page has), tell how
// far; a paper merely listed twice does not. Only for the page right
// after the last one walked (after a jump the pages between are unknown).
// Then the page becomes one of Recent (its last papers: recentPapers).
func (n *Walk) follow(page int, d Delivered, revisit bool) {
	pp := max(n.PerPage, 1)
	if !revisit && page == n.RecentPage+1 && len(d.Papers) > 0 {
		delta, run := 0, 0
		for i, p := range d.Papers {
			k := paperIndex(p, n.Recent)
			if k < 0 || k >= len(n.RecentAt) {
				break
			}
			dd := (page-1)*pp + i + 1 - n.Shift - n.RecentAt[k]
			if run > 0 && dd != delta || dd <= 0 {
				break
			}
			delta, run = dd, run+1
		}
		if run >= min(2, len(d.Papers)) {
			n.Shift += delta
		}
	}
	keep := min(max(n.RecentLast, 0), len(n.Recent), len(n.RecentAt))
	if page != n.RecentPage+1 {
		keep = 0 // not the page after: the page before it was not walked
	}
	recent := slices.Clone(n.Recent[len(n.Recent)-keep:])
	at := slices.Clone(n.RecentAt[len(n.RecentAt)-keep:])
	from := max(0, len(d.Papers)-recentPapers)
	for i := from; i < len(d.Papers); i++ {
		for _, e := range MarkOf(d.Papers[i : i+1]) {
			recent, at = append(recent, e), append(at, (page-1)*pp+i+1-n.Shift)
		}
	}
	n.Recent, n.RecentAt, n.RecentLast, n.RecentPage = recent, at, len(recent)-keep, page
}

// recentPapers bounds the papers of a page Recent keeps (its last ones):
// arrivals of more than that while a walk goes on are not measured (the
// audit finds what they hide), and a fleet job stays small.
const recentPapers = 256

// scan walks the page's papers through the phases; true when the walk is
// done: the top part and every gap closed. Each paper is read by its
// phase's rules (pageScan.paper), then the page as a whole
// (pageScan.whole).
func (n *Walk) scan(page int, d Delivered) (done bool) {
	s := &pageScan{n: n, page: page, d: d, ps: d.Papers}
	n.jump = 0
	landing := n.Phase == PhaseSeek
	phase, marks := n.Phase, len(n.State.Marks)
	for i := range s.ps {
		if st := s.paper(i); st != goOn {
			return st == finished
		}
	}
	if n.Phase != phase || len(n.State.Marks) != marks {
		// The phase began on this page: its rules count the pages after.
		n.KnownRun = 0
	} else if n.Phase == PhaseGap && shifted(d, n.State.Marks[0].Papers) {
		// The gap's own start, or papers delivered earlier in this run,
		// again: papers arrived while the walk went on and pushed the
		// listing down; this page lies above where the walk got to.
		n.KnownRun = 0
	}
	if st := s.whole(landing); st != goOn {
		return st == finished
	}
	if n.Phase == PhaseSweep && n.jump > 0 {
		n.Phase, n.SkipFrom, n.Page = PhaseSeek, page+1, n.jump
	}
	return false
}

// scanStep is what a paper, or a page as a whole, tells the scan.
type scanStep int

const (
	goOn     scanStep = iota // read on
	stop                     // the scan ends here, the walk not done (it goes back a page)
	finished                 // the walk is done
)

// finishedIf is finished when the walk is done, else goOn.
func finishedIf(done bool) scanStep {
	if done {
		return finished
	}
	return goOn
}

// pageScan is one page read by the walk's rules.
type pageScan struct {
	n    *Walk
	page int
	d    Delivered
	ps   []ledger.Paper
	// movedSaid, metSaid: the page's note of a moved paper, or of one
	// never delivered above the gap, is said (once a page).
	movedSaid, metSaid bool
}

// seen is what the ledger knew of ps[i] before the page.
func (s *pageScan) seen(i int) ledger.Delivery {
	if i < len(s.d.Delivery) {
		return s.d.Delivery[i]
	}
	return ledger.DeliveredBefore
}

// proof: ps[i] and the paper before it (maybe the last page's last) are
// two of bound's papers, in their order; a bound of one paper: that paper.
func (s *pageScan) proof(i int, bound []string) bool {
	k := paperIndex(s.ps[i], bound)
	switch {
	case k < 0:
		return false
	case papersIn(bound) == 1:
		return true
	}
	p := entriesIndex(s.n.Prev, bound)
	if i > 0 {
		p = paperIndex(s.ps[i-1], bound)
	}
	return p >= 0 && p < k
}

// pos is a paper's place in the listing as it was when the walk read
// page 1 (Shift).
func (s *pageScan) pos(i int) int {
	return (s.page-1)*max(s.n.PerPage, 1) + i + 1 - s.n.Shift
}

// paper reads ps[i] by the rules of the walk's phase.
func (s *pageScan) paper(i int) scanStep {
	n := s.n
	var mark ledger.WalkMark
	if len(n.State.Marks) > 0 {
		mark = n.State.Marks[0]
	}
	var next []string // the next mark's papers
	if len(n.State.Marks) > 1 {
		next = n.State.Marks[1].Papers
	}
	switch n.Phase {
	case PhaseTop:
		return s.top(i, mark)
	case PhaseSeek, PhaseSweep:
		return s.seek(i, mark, next)
	case PhaseGap:
		return s.gap(i, mark, next)
	}
	return goOn
}

// top: the top part ends where the papers that began the listing last
// night are proven; met first, the first gap's start sends the walk into
// the gap.
func (s *pageScan) top(i int, mark ledger.WalkMark) scanStep {
	n := s.n
	switch {
	case len(n.State.Head) > 0 && s.proof(i, n.State.Head):
		n.Bound = s.pos(i) - ordinal(s.ps[i], n.State.Head)
		return finishedIf(n.toMark(s.page))
	case len(mark.Papers) > 0 && s.proof(i, mark.Papers):
		n.note("page %d: the papers that began the listing last night were not met before the first gap's start: the walk goes on into the gap", s.page)
		n.Phase, n.Bound = PhaseGap, 0
	}
	return goOn
}

// seek (a jump toward a gap's start) and sweep (page by page to it): where
// the gap starts, or that it moved, or that its start is gone.
func (s *pageScan) seek(i int, mark ledger.WalkMark, next []string) scanStep {
	n, page, p := s.n, s.page, s.ps[i]
	before := n.Phase == PhaseSeek && (s.seen(i) == ledger.NeverDelivered && i == 0 || len(mark.End) > 0 && s.proof(i, mark.End) || in(p, next))
	switch {
	case in(p, mark.Papers):
		n.Phase, n.jump = PhaseGap, 0
	case before && page-1 >= n.SkipFrom:
		// The jump landed below the gap's start: papers above the mark
		// were removed, and its gap moved up. A page back, until the page
		// before shows where it starts.
		n.note("page %d does not show the papers of the gap at page %d where they were expected, but what lies below them: the walk goes back a page", page, mark.Page)
		n.Page, n.Back = page-1, s.pos(0)
		return stop
	case n.Phase == PhaseSeek && s.seen(i) == ledger.NeverDelivered:
		n.note("page %d: papers never delivered after papers delivered before, without the papers that began the gap at page %d: the gap starts here", page, mark.Page)
		n.Phase, n.jump = PhaseGap, 0
	case len(mark.End) > 0 && s.proof(i, mark.End):
		n.note("page %d: the papers that began the gap at page %d are gone, and its end is here", page, mark.Page)
		return finishedIf(n.closeGap(page, s.pos(i)-ordinal(p, mark.End)))
	case len(next) > 0 && s.proof(i, next):
		n.note("page %d: neither the papers that began the gap at page %d nor those that end it were met before the next gap's start: the walk goes on into it", page, mark.Page)
		n.State.Marks, n.Bound, n.Phase, n.jump, n.Closed = n.State.Marks[1:], 0, PhaseGap, 0, n.Closed+1
	case s.seen(i) == ledger.NeverDelivered && page >= n.Target-1:
		n.note("page %d: a paper never delivered before the papers that began the gap at page %d: the gap starts here", page, mark.Page)
		n.Phase, n.jump = PhaseGap, 0
	case s.seen(i) == ledger.NeverDelivered:
		n.Met = true
		if !s.metSaid {
			s.metSaid = true
			n.note("page %d: paper %s, never delivered, is above the gap at page %d (moved up, or the gap moved): delivered", page, p.ID, mark.Page)
		}
	}
	return goOn
}

// gap: the gap closes where its end is proven; the next gap's start met
// first carries the walk into that gap.
func (s *pageScan) gap(i int, mark ledger.WalkMark, next []string) scanStep {
	n, page, p := s.n, s.page, s.ps[i]
	switch {
	case len(mark.End) > 0 && s.proof(i, mark.End):
		return finishedIf(n.closeGap(page, s.pos(i)-ordinal(p, mark.End)))
	case len(next) > 0 && s.proof(i, next):
		n.note("page %d: the papers that end the gap at page %d were not met before the next gap's start: the walk goes on into it", page, mark.Page)
		n.State.Marks, n.Bound, n.Closed = n.State.Marks[1:], 0, n.Closed+1
	case s.seen(i) == ledger.DeliveredBefore && !in(p, mark.End) && !in(p, mark.Papers) && !s.movedSaid:
		s.movedSaid = true
		n.note("page %d: paper %s, delivered before, is inside the gap at page %d (moved, re-dated, listed twice, or read by an audit before): not taken as the gap's end", page, p.ID, mark.Page)
	}
	return goOn
}

// whole is what the page as a whole says, after its papers: the rules
// that count pages (the known-pages rule, giving up unproven), and a
// seek's landing.
func (s *pageScan) whole(landing bool) scanStep {
	n, page := s.n, s.page
	switch n.Phase {
	case PhaseTop:
		switch {
		case len(n.State.Head) == 0 && n.StopAfterKnown > 0 && n.KnownRun >= n.StopAfterKnown:
			// No head to prove against (a state of an earlier version, or
			// a first walk after a backfill): the known-pages rule.
			n.Bound = 0
			return finishedIf(n.toMark(page))
		case len(n.State.Head) > 0 && n.KnownRun >= n.giveUp():
			n.unproven(page, fmt.Sprintf("the papers that began the listing last night were not met in %d pages of papers delivered before: the top part ends here, unproven", n.KnownRun))
			n.Bound = 0
			return finishedIf(n.toMark(page))
		}
	case PhaseSeek:
		switch {
		case s.d.Last && page-1 >= n.SkipFrom:
			n.note("page %d, the listing's last, does not show the papers of the gap at page %d: the walk goes back a page", page, n.State.Marks[0].Page)
			n.Page, n.Back = page-1, s.pos(0)
			return stop
		case landing:
			n.Phase = PhaseSweep // landed above the gap: on page by page
		}
	case PhaseSweep:
		if mark := n.State.Marks[0]; n.jump == 0 && page > n.Target+n.giveUp() && n.KnownRun >= n.giveUp() {
			n.unproven(page, fmt.Sprintf("the papers that began the gap at page %d were not found %d pages past where they were expected: the gap is given up", mark.Page, page-n.Target))
			n.State.Marks, n.Bound = n.State.Marks[1:], 0
			return finishedIf(n.toMark(page))
		}
	case PhaseGap:
		if n.KnownRun >= n.giveUp() {
			return s.giveUpGap()
		}
	}
	return goOn
}

// giveUpGap closes the gap unproven after giveUp pages of papers
// delivered before.
func (s *pageScan) giveUpGap() scanStep {
	n, mark := s.n, s.n.State.Marks[0]
	what := fmt.Sprintf("the papers that end the gap at page %d were not met in %d pages of papers delivered before: the gap is closed here, unproven", mark.Page, n.KnownRun)
	if len(mark.End) == 0 {
		// A first crawl's gap, or one of an earlier version: its end is
		// not known.
		what = fmt.Sprintf("the gap at page %d, whose end is not known (a first crawl's, or one left by an earlier version), met %d pages of papers delivered before: it is closed here", mark.Page, n.KnownRun)
	}
	n.unproven(s.page, what)
	n.State.Marks, n.Bound = n.State.Marks[1:], 0
	return finishedIf(n.toMark(s.page))
}

// closeGap closes Marks[0] on page, its End proven there with its first
// paper at position bound, and heads for the next mark: true when the walk
// is done.
func (n *Walk) closeGap(page, bound int) bool {
	n.Bound = bound
	n.State.Marks, n.Closed = n.State.Marks[1:], n.Closed+1
	return n.toMark(page)
}

// toMark heads for Marks[0], the bound above it passed on page: true
// when no mark is left (the walk is done). The rest of the page is walked
// as a sweep (the mark's papers may be there); then, unless they were, the
// walk jumps to where they are expected (jump).
func (n *Walk) toMark(page int) bool {
	n.Met = false
	if len(n.State.Marks) == 0 {
		n.State.Marks = nil
		return true
	}
	m := n.State.Marks[0]
	mc := m.Clone()
	n.Looking, n.Back = &mc, 0
	pp := max(n.PerPage, 1)
	pageOf := func(at int) int { return (at+n.Shift-1)/pp + 1 }
	target := m.Page
	at := 0 // where the mark's last paper is expected now: as far below the bound as it was
	if n.Bound > 0 && m.Offset > 0 {
		at = n.Bound + m.Offset - 1
		target = pageOf(at)
	}
	n.Target = max(target, 1)
	// Land a page early when the expected position is near the top of
	// its page, or not known: a few papers removed above the mark move it
	// up.
	land := n.Target
	if at == 0 || (at+n.Shift-1)%pp < 2 {
		land--
	}
	if n.Bound > 0 && m.From > 0 && pageOf(n.Bound+m.From-1) > land {
		land = pageOf(n.Bound + m.From - 1) // a sweep got there last time: on from there
	}
	n.Phase, n.jump = PhaseSweep, 0
	if land > page+1 {
		n.jump = land
	}
	return false
}

// unproven says that a search gave up. What it could not prove is left
// to the audit, whose round goes on where it stands (sending it back
// would put off the rest of the listing, and its bound with it).
func (n *Walk) unproven(page int, what string) {
	n.Unproven = true
	n.note("page %d: %s; left to the audit, which re-reads every page within pages ÷ audit_pages nights", page, what)
}

func (n *Walk) note(format string, a ...any) { n.Notes = append(n.Notes, fmt.Sprintf(format, a...)) }

// complete ends a walk by its rule after page last: every gap it could
// prove closed is closed.
func (w Walk) complete(last int, why string) (Walk, bool) {
	if why == "proven" && w.Unproven {
		why = "unproven (a search gave up: see the walk's notes)"
	}
	w.State.Head = w.headAfter()
	if why != "proven" {
		w.State.Marks = nil // the listing's end closes every gap
	}
	return w.ended(WalkEnd{Why: why, Page: last})
}

// headAfter is the head the walk leaves: page 1's papers as it read them.
func (w Walk) headAfter() []string {
	if len(w.NewHead) > 0 {
		return w.NewHead
	}
	return w.State.Head
}

// ended sets the walk's end, and starts the audit when it has pages.
func (w Walk) ended(e WalkEnd) (Walk, bool) {
	if len(w.State.Marks) > 0 && w.State.Marks[0].Stuck >= MaxStuck {
		// The rule that ends any search: a gap no walk got further on for
		// MaxStuck nights is given up, and left to the audit.
		m := w.State.Marks[0]
		w.note("the gap at page %d: %d nights in a row got no further on it (its papers removed, or the listing moving under it): it is given up, and left to the audit, which re-reads every page within pages ÷ audit_pages nights", m.Page, m.Stuck)
		w.State.Marks = w.State.Marks[1:]
		if len(w.State.Marks) == 0 {
			w.State.Marks = nil
		} else {
			// Its places counted from the given-up gap's end, which is not
			// found: its page is the guess now.
			nm := &w.State.Marks[0]
			nm.Offset, nm.From, nm.Far = 0, 0, 0
		}
	}
	if len(w.State.Marks) > MaxMarks {
		e.Dropped = w.State.Marks[MaxMarks:]
		w.State.Marks = w.State.Marks[:MaxMarks]
	}
	e.State = w.State
	w.end = &e
	if w.AuditPages <= 0 || e.Why == WhyStopped {
		// A run stopped is not to fetch more; otherwise the audit runs
		// every night, a walk cut short or not: its bound holds only so.
		return w, false
	}
	a := &w.State.Audit
	if a.Next == 0 {
		a.Next, a.Since = 1, time.Now().Unix()
	}
	// Pages 1 to Contig were read tonight, in order.
	from := max(a.Next, w.Contig+1)
	if w.LastPage > 0 && from > w.LastPage {
		// Read to the listing's last page tonight: the round is complete.
		w = w.wrap(w.LastPage)
		w.end.State, w.end.Wrapped = w.State, true
		return w, false
	}
	w.Phase, w.Page, w.AuditLeft, w.AuditFrom = PhaseAudit, from, w.AuditPages, from
	return w, true
}

// stop is how a walk that stopped short after page last (delivered as d)
// ends: at MaxPages, at a failed page, or when the run was stopped. It
// leaves a mark where it stopped (see cut).
func (w Walk) stop(d Delivered, last int, why string) (Walk, bool) {
	w.State = w.cut(d, last)
	return w.ended(WalkEnd{Why: why, Incomplete: true, Page: last})
}

// cut is the state a walk leaves that stopped short after page last,
// delivered as d:
//   - in its top part: a new mark above the others, its papers the last
//     page's last ones, its End the head the walk began with;
//   - in a gap: the gap's mark moves down to where the walk stopped;
//   - looking for a mark (seek, sweep): the mark stays, where the walk
//     expected it.
//
// The head is page 1's papers as this walk read them; the first mark's
// Offset counts from it.
func (w Walk) cut(d Delivered, last int) ledger.WalkState {
	s := w.State.Clone()
	tail := w.Tail
	if len(tail) == 0 && len(d.Papers) > 0 {
		tail = tailOf(d.Papers)
	}
	// at is the position of the last paper of the page last.
	at := 0
	if w.PerPage > 0 && len(d.Papers) > 0 {
		at = (last-1)*w.PerPage + len(d.Papers) - w.Shift
	}
	// far is how far down walks got on Marks[0] before (its Far, counted
	// from the head now), reach how far this one got: a night that got no
	// further is no progress (Stuck), whatever the mark became.
	far, reach := 0, 0
	if len(s.Marks) > 0 && s.Marks[0].Far > 0 && w.Bound > 0 {
		far = w.Bound + s.Marks[0].Far - 1
	}
	if ph := w.phase(); (ph == PhaseSweep || ph == PhaseGap) && at > 0 {
		reach = at
	}
	switch w.phase() {
	case PhaseTop:
		if len(tail) > 0 {
			s.Marks = append([]ledger.WalkMark{{Page: last, Papers: tail, Offset: at, Far: at, End: w.State.Head}}, s.Marks...)
		}
	case PhaseGap:
		if len(s.Marks) > 0 && len(tail) > 0 {
			s.Marks[0].Page, s.Marks[0].Papers, s.Marks[0].Offset, s.Marks[0].From = last, tail, at, 0
		}
	case PhaseSweep, PhaseSeek:
		if len(s.Marks) > 0 {
			w.placeLooked(&s.Marks[0], tail, last, at)
		}
	}
	if len(s.Marks) > 0 && w.phase() != PhaseTop {
		w.countStuck(&s.Marks[0], far, reach)
	}
	s.Head = w.headAfter()
	if len(s.Marks) == 0 {
		s.Marks = nil
	}
	return s
}

// placeLooked places the mark a walk was looking for (seek, sweep) when
// it stopped: below where a sweep stopped when it met papers never
// delivered on the way (the gap, or what is left of it, lies below: it
// went page by page from a page above the gap); else, not reached, where
// the walk expected it, a sweep's next walk going on from where it
// stopped (From).
func (w Walk) placeLooked(m *ledger.WalkMark, tail []string, last, at int) {
	if w.phase() == PhaseSweep && w.Met && len(tail) > 0 {
		m.Page, m.Papers, m.Offset, m.From = last, tail, at, 0
		return
	}
	off, from := 0, 0
	if w.Bound > 0 && m.Offset > 0 {
		off = w.Bound + m.Offset - 1
	}
	if w.phase() == PhaseSweep && at > 0 {
		from = at
	} else if w.Bound > 0 && m.From > 0 {
		from = w.Bound + m.From - 1
	}
	m.Page, m.Offset, m.From = max(w.Target, 1), off, from
	if w.EndBefore > 0 && m.Page >= w.EndBefore {
		// Expected past the listing's end: its places are stale.
		m.Page, m.Offset, m.From = max(w.EndBefore-1, 1), 0, 0
	}
	if w.Back > 0 {
		// Went back from a page below the gap: it starts above.
		m.Page, m.Offset, m.From = max(w.Page, 1), w.Back, 0
	}
}

// countStuck keeps how far walks got on the mark (Far) and counts a night
// that tried the gap (two pages or more past its top part: one landing
// page is a night short of pages) and got no further on it — no paper of
// it delivered, none closed, no page further down, however its mark moved
// (two states taking turns are no progress either) — towards giving it
// up.
func (w Walk) countStuck(m *ledger.WalkMark, far, reach int) {
	m.Far = max(far, reach)
	switch {
	case w.Looking == nil || w.Spent < 2:
	case w.Gained == 0 && w.Closed == 0 && (reach <= far || w.Bound == 0 && reach == 0):
		m.Stuck++
	default:
		m.Stuck = 0
	}
}

// Stop ends a walk that did not end by its rule: after page last (the
// last page it delivered, as d; 0: none) a page failed, or the run was
// stopped (why: WhyFailedPage, WhyStopped). Nothing delivered leaves the
// state as it was.
//
// After a failed page the audit still runs: the walk Stop gives is then
// in PhaseAudit, and the caller carries on with it.
func (w Walk) Stop(d Delivered, last int, why string) Walk {
	if w.phase() == PhaseAudit {
		w.end = &WalkEnd{Why: why, Audit: true, Page: w.Page - 1, State: w.State}
		if w.Page > w.AuditFrom {
			w.end.AuditFrom, w.end.AuditTo = w.AuditFrom, w.Page-1
		}
		return w
	}
	if last == 0 {
		w.end = &WalkEnd{Why: why, Page: 0, State: w.State}
		return w
	}
	w, _ = w.stop(d, last, why)
	return w
}

// PassOver is the audit passing over its page, which failed for good (a
// 4xx): its round goes on after it, so that a page that always fails
// does not hold the round for ever (it is said as failed each time). A
// page that failed for now (a 5xx, the network, a host down) is not
// passed over: the next audit reads it again.
func (w Walk) PassOver() Walk {
	if w.phase() == PhaseAudit {
		w.State = w.State.Clone()
		w.State.Audit.Next = w.Page + 1
	}
	return w
}

// PastEnd is where a walk goes whose page lies past the end of the
// listing: on a jump, back to the pages it skipped; in the audit, round to
// the top again (the audit is over for tonight); otherwise the walk is
// complete. false: nothing more tonight.
func (w Walk) PastEnd() (Walk, bool) {
	switch w.phase() {
	case PhaseAudit:
		w = w.wrap(w.Page - 1)
		e := &WalkEnd{Why: "past the end", Audit: true, Page: w.Page - 1, State: w.State, Wrapped: true}
		if w.Page > w.AuditFrom {
			e.AuditFrom, e.AuditTo = w.AuditFrom, w.Page-1
		}
		w.end = e
		return w, false
	case PhaseSeek:
		w.EndBefore = w.Page
		if w.Walked+1 < w.MaxPages {
			w.Walked++
			w.Notes = []string{fmt.Sprintf("page %d lies past the listing's end: the gap at page %d moved up; the walk goes back to page %d", w.Page, w.State.Marks[0].Page, w.SkipFrom)}
			w.Phase, w.Page = PhaseSweep, w.SkipFrom
			return w, true
		}
		w.State = w.cut(Delivered{}, w.Page-1)
		return w.ended(WalkEnd{Why: WhyMaxPages, Incomplete: true, Page: w.Page - 1})
	}
	w.State.Head = w.headAfter()
	w.State.Marks = nil
	w.LastPage = w.Page - 1
	return w.ended(WalkEnd{Why: "past the end", Page: w.Page - 1})
}

// auditNext: the audit re-read page w.Page as d.
func (w Walk) auditNext(d Delivered) (Walk, bool) {
	n := w
	n.Notes, n.end = nil, nil
	n.State = w.State.Clone()
	n.AuditLeft--
	n.State.Audit.Next = w.Page + 1
	if d.Last {
		n = n.wrap(w.Page)
	}
	if n.AuditLeft > 0 && !d.Last {
		n.Page++
		return n, true
	}
	n.end = &WalkEnd{Why: "audit", Audit: true, Page: w.Page, State: n.State, AuditFrom: w.AuditFrom, AuditTo: w.Page, Wrapped: d.Last}
	return n, false
}

// wrap ends the audit's round at page last, the listing's last: the next
// round starts at the top.
func (w Walk) wrap(last int) Walk {
	a := &w.State.Audit
	a.Round, a.Since, a.Next, a.Pages = a.Since, time.Now().Unix(), 1, last
	return w
}

// shifted: page d shows papers of mark, or papers delivered earlier in
// this run.
func shifted(d Delivered, mark []string) bool {
	for i, p := range d.Papers {
		if in(p, mark) || i < len(d.Delivery) && d.Delivery[i] == ledger.DeliveredThisRun {
			return true
		}
	}
	return false
}

// Hold says whether the walk's next page is to be held back
// (PageOptions): the page a jump lands on, when it shows the jump went too
// far (scan). Its papers are then not delivered: the walk goes back to the
// pages it skipped and meets them in order, so that no paper delivered out
// of order looks like a page of the gap delivered before. nil when the
// walk did not jump.
func (w Walk) Hold() func(papers []ledger.Paper, seen []ledger.Delivery) bool {
	if w.phase() != PhaseSeek {
		return nil
	}
	return func(papers []ledger.Paper, seen []ledger.Delivery) bool {
		n := w
		n.State = w.State.Clone()
		n.Page++
		n.scan(w.Page, Delivered{Papers: papers, Delivery: seen})
		return n.Page <= w.Page
	}
}

// CrashState gives, for the page the walk is on, the state a walk
// stopped right after it would leave: committed with the page
// (Item.Walk), it makes a run killed at any moment carry on as one stopped
// there.
func (w Walk) CrashState() func(d Delivered) ledger.WalkState {
	page := w.Page
	return func(d Delivered) ledger.WalkState {
		next, goOn := w.Next(d)
		if e := next.Ended(); e != nil {
			return next.State
		}
		if !goOn || next.phase() == PhaseAudit {
			return next.State
		}
		return next.cut(d, page)
	}
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

// paperIndex is the place of paper p in a mark's entries (the first of
// its id or DOI key), or -1.
func paperIndex(p ledger.Paper, mark []string) int {
	k := p.DOIKey()
	for i, m := range mark {
		if p.ID == m || k != "" && "doi:"+k == m {
			return i
		}
	}
	return -1
}

// entriesIndex is paperIndex for a paper given as its entries.
func entriesIndex(entries, mark []string) int {
	for i, m := range mark {
		if slices.Contains(entries, m) {
			return i
		}
	}
	return -1
}

// ordinal is how many papers of the mark come before p (p in it).
func ordinal(p ledger.Paper, mark []string) int {
	return papersIn(mark[:max(paperIndex(p, mark), 0)])
}

// papersIn counts the papers of a mark (its entries less DOI keys).
func papersIn(mark []string) int {
	n := 0
	for _, m := range mark {
		if !strings.HasPrefix(m, "doi:") {
			n++
		}
	}
	return n
}

// in says whether paper p is one of the mark's.
func in(p ledger.Paper, mark []string) bool { return paperIndex(p, mark) >= 0 }
