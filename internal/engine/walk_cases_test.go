package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/internal/testsite"
)

// nightHarness runs nightly walks over a listing that changes between and
// during nights, and logs each night for a failing test.
type nightHarness struct {
	t       *testing.T
	site    *testsite.Site
	ledger  *ledger.Memory
	out     *memSink
	listing []string
	pp      int
	n       int
	log     strings.Builder
}

const hj = 4848

func newNightHarness(t *testing.T, pp int, initial []string) *nightHarness {
	h := &nightHarness{t: t, site: testsite.New(), pp: pp, listing: initial, ledger: ledger.NewMemory(), out: &memSink{}}
	h.site.SetListing(hj, h.listing, pp)
	return h
}

func (h *nightHarness) arrive(ids []string) {
	h.listing = append(append([]string{}, ids...), h.listing...)
	h.site.SetListing(hj, h.listing, h.pp)
}

// night runs one nightly walk and logs what it fetched and left.
func (h *nightHarness) night(sak, maxPages int, stop chan struct{}) {
	h.t.Helper()
	h.n++
	before := map[int]int{}
	for p := 1; p <= 100; p++ {
		before[p] = h.site.Hits(testsite.PagePath(hj, p))
	}
	r := memRun(h.site, h.ledger, h.out, fmt.Sprint("n", h.n))
	if err := r.Nightly(context.Background(), engine.NightlyOptions{Journals: []int64{hj}, StopAfterKnownPages: sak, MaxPages: maxPages, Stop: stop}); err != nil {
		h.t.Fatal(err)
	}
	r.Close()
	ws, _ := h.ledger.WalkState(context.Background(), hj)
	marks := ws.Marks
	iw := r.Summary().IncompleteWalks()
	var pages []int
	for p := 1; p <= 100; p++ {
		if h.site.Hits(testsite.PagePath(hj, p)) > before[p] {
			pages = append(pages, p)
		}
	}
	var ms []string
	for _, m := range marks {
		ms = append(ms, fmt.Sprintf("p%d%v", m.Page, m.Papers[:1]))
	}
	fmt.Fprintf(&h.log, "night %d: pages %v incomplete %v marks %v\n", h.n, pages, iw, ms)
}

// check: every paper listed was delivered, each once.
func (h *nightHarness) check() {
	got := h.out.ids()
	var missing []string
	for _, id := range h.listing {
		if got[id] == 0 {
			missing = append(missing, id)
		}
	}
	for id, c := range got {
		if c != 1 {
			h.t.Errorf("%s delivered %d times", id, c)
		}
	}
	if len(missing) > 0 {
		h.t.Errorf("%d of %d papers never delivered: %v\n%s", len(missing), len(h.listing), missing, h.log.String())
	} else {
		h.t.Logf("ok\n%s", h.log.String())
	}
}

func pfx(p string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%03d", p, i+1)
	}
	return out
}

// Two marks, the walk stopping at max_pages just past the first: the mark
// it leaves must not take the place of the second one, nor end the gap
// below the first at that mark's own papers on the next page.
func TestWalkCutAfterPassingAMark(t *testing.T) {
	h := newNightHarness(t, 5, pfx("91", 30)) // A
	h.night(1, 4, nil)                        // A1-15, mark @3
	h.arrive(pfx("92", 20))                   // B
	h.night(1, 4, nil)                        // B1-15, marks [@3 B11-15, @3 A11-15]
	h.arrive(pfx("93", 2))                    // C
	for i := 0; i < 12; i++ {
		h.night(1, 4, nil)
	}
	h.check()
}

// A mark's papers spilling onto the next page do not end the gap below it.
func TestWalkMarkSpillingOntoTheNextPage(t *testing.T) {
	h := newNightHarness(t, 5, pfx("91", 50))
	h.night(1, 5, nil)
	h.arrive(pfx("92", 30))
	h.night(1, 5, nil)
	h.arrive(pfx("93", 2))
	for i := 0; i < 12; i++ {
		h.night(1, 5, nil)
	}
	h.check()
}

// Papers arriving while the walk goes on push the listing down: papers
// delivered earlier in the run reappear; they neither end a gap nor make
// the walk's mark, which is left at its true frontier.
func TestWalkArrivalsDuringTheWalk(t *testing.T) {
	h := newNightHarness(t, 5, pfx("91", 50))
	h.night(1, 4, nil) // A1-20, mark @4 A16-20
	h.arrive(pfx("92", 3))
	h.site.AfterServe(testsite.PagePath(hj, 2), func() { h.arrive(pfx("93", 15)) })
	h.night(1, 4, nil)
	for i := 0; i < 12; i++ {
		h.night(1, 4, nil)
	}
	h.check()
}

// Papers removed above a mark (its own among them) move its gap up: the
// page of slack before the mark's page still finds it.
func TestWalkPapersRemovedAboveAMark(t *testing.T) {
	h := newNightHarness(t, 5, pfx("91", 40))
	h.night(1, 4, nil) // mark @3 = 91011-91015
	var l []string
	for _, id := range h.listing {
		if id == "91005" || id >= "91011" && id <= "91015" {
			continue
		}
		l = append(l, id)
	}
	h.listing = l
	h.site.SetListing(hj, l, 5)
	for i := 0; i < 12; i++ {
		h.night(1, 4, nil)
	}
	h.check()
}

// A page that lists a paper twice still counts as all known.
func TestWalkPaperListedTwice(t *testing.T) {
	h := newNightHarness(t, 5, pfx("91", 50))
	h.night(1, 4, nil) // A1-15, mark @3 = A11-15
	h.arrive(pfx("92", 5))
	// the site shows 91007 twice (page 3 now: 91006 91007 91007 91008 91009)
	var l []string
	for _, id := range h.listing {
		l = append(l, id)
		if id == "91007" {
			l = append(l, id)
		}
	}
	h.listing = l
	h.site.SetListing(hj, l, 5)
	for i := 0; i < 12; i++ {
		h.night(1, 4, nil)
	}
	h.check()
}

func (h *nightHarness) remove(keep func(i int, id string) bool) {
	var l []string
	for i, id := range h.listing {
		if keep(i, id) {
			l = append(l, id)
		}
	}
	h.listing = l
	h.site.SetListing(hj, l, h.pp)
}

// The newest papers removed above a mark, more than a page of them: the
// gap below the mark moves up past the page the walk jumps to. The walk
// must find that it landed below the mark and go back, not skip the gap.
// (100 papers, 5 a page, max_pages 6, the 15 newest removed before night 2:
// a walk that trusts the jump loses 5 papers for good.)
func TestWalkNewestRemovedAboveAMark(t *testing.T) {
	for _, sak := range []int{1, 2} {
		t.Run(fmt.Sprint("stop_after_known_", sak), func(t *testing.T) {
			h := newNightHarness(t, 5, pfx("91", 100))
			h.night(sak, 6, nil) // 91001-91030, mark @6
			h.remove(func(i int, _ string) bool { return i >= 15 })
			for i := 0; i < 12; i++ {
				h.night(sak, 6, nil)
			}
			h.check()
		})
	}
}

// The listing shrinks so that the mark lies past its new last page: the
// walk jumps past the end and must go back to the pages it skipped rather
// than call the walk complete.
func TestWalkListingShrinksPastTheMark(t *testing.T) {
	h := newNightHarness(t, 5, pfx("91", 100))
	h.night(1, 6, nil)
	h.night(1, 6, nil) // 91001-91050 delivered, mark @10
	// The mark's papers and most delivered ones are removed, and the oldest:
	// 5 pages are left, the gap's papers on pages 3-5.
	h.remove(func(i int, _ string) bool { return i < 10 || i >= 45 && i < 60 })
	for i := 0; i < 12; i++ {
		h.night(1, 6, nil)
	}
	h.check()
}

// More than a page of papers arrives while the walk is in a gap it jumped
// to: the next page shows papers from above the mark, delivered before.
// They are papers the walk saw on its last pages, not the gap's end.
func TestWalkArrivalsWhileInAJumpedToGap(t *testing.T) {
	h := newNightHarness(t, 3, pfx("91", 30))
	h.night(1, 4, nil) // 91001-91012, mark @4 = 91010-91012
	h.site.AfterServe(testsite.PagePath(hj, 4), func() { h.arrive(pfx("92", 8)) })
	h.night(1, 6, nil) // page 1 known, jump to 3, the mark on 4, then 8 arrive
	h.site.AfterServe(testsite.PagePath(hj, 4), nil)
	for i := 0; i < 12; i++ {
		h.night(1, 6, nil)
	}
	h.check()
}

// backfill delivers the whole listing as crawl backfill --pages 1- does.
func (h *nightHarness) backfill() {
	h.t.Helper()
	h.n++
	r := memRun(h.site, h.ledger, h.out, fmt.Sprint("b", h.n))
	if err := r.Backfill(context.Background(), engine.BackfillOptions{Journals: []int64{hj}, From: 1}); err != nil {
		h.t.Fatal(err)
	}
	r.Close()
	fmt.Fprintf(&h.log, "backfill %d: %d papers\n", h.n, r.Summary().PapersNew.Load())
}

// nightWith runs one nightly walk with audit pages, and gives its
// summary.
func (h *nightHarness) nightWith(sak, maxPages, audit int) *engine.Summary {
	h.t.Helper()
	h.n++
	r := memRun(h.site, h.ledger, h.out, fmt.Sprint("n", h.n))
	if err := r.Nightly(context.Background(), engine.NightlyOptions{Journals: []int64{hj}, StopAfterKnownPages: sak, MaxPages: maxPages, AuditPages: audit}); err != nil {
		h.t.Fatal(err)
	}
	r.Close()
	notes, _ := r.Summary().WalkNotes()
	fmt.Fprintf(&h.log, "night %d: %d new, incomplete %v, notes %d\n", h.n, r.Summary().PapersNew.Load(), r.Summary().IncompleteWalks(), len(notes))
	for _, n := range notes {
		fmt.Fprintf(&h.log, "    %s\n", n.Text)
	}
	return r.Summary()
}

// The attack of the issue that made walks end only on proof: 400 papers
// backfilled, 130 arrive, the nightly (max_pages 5, 20 a page) delivers
// 100 and leaves a gap of 30; then a paper delivered long ago moves down
// into that gap (re-dated), or is listed a second time inside it. A walk
// that takes a paper delivered before for the gap's end stops there and
// loses the papers below it for good; this one goes on to the papers
// that began the listing before the 130 arrived, met in their order, says
// what it met, and delivers all 30 the next night, with no audit.
func TestWalkDeliveredPaperInsideTheGap(t *testing.T) {
	for _, how := range []string{"moved down", "listed twice"} {
		t.Run(how, func(t *testing.T) {
			h := newNightHarness(t, 20, pfx("91", 400))
			h.backfill()
			h.nightWith(1, 5, 0) // the head: the listing's first papers
			h.arrive(pfx("92", 130))
			if s := h.nightWith(1, 5, 0); s.PapersNew.Load() != 100 || len(s.IncompleteWalks()) != 1 {
				t.Fatalf("the night of the 130: %d new, incomplete %v\n%s", s.PapersNew.Load(), s.IncompleteWalks(), h.log.String())
			}
			// 92101-92130 are the gap, listed 101-130; an old paper goes
			// to place 112, inside it.
			old := "91250"
			var l []string
			for i, id := range h.listing {
				if i == 111 {
					l = append(l, old)
				}
				if id != old || how == "listed twice" {
					l = append(l, id)
				}
			}
			h.listing = l
			h.site.SetListing(hj, l, h.pp)
			s := h.nightWith(1, 5, 0)
			if s.PapersNew.Load() != 30 || len(s.IncompleteWalks()) != 0 {
				t.Errorf("the night after: %d new (want the 30 of the gap), incomplete %v", s.PapersNew.Load(), s.IncompleteWalks())
			}
			notes, _ := s.WalkNotes()
			if len(notes) == 0 || !strings.Contains(notes[0].Text, "paper "+old+", delivered before, is inside the gap") {
				t.Errorf("the walk did not say what it met in the gap: %v", notes)
			}
			h.check()
		})
	}
}

// An open-ended backfill from page 1 that read every page to the
// listing's end counts as a round of the audit (the next nightly's
// coverage says every page was re-read); one with a failed page does not.
func TestBackfillCountsAsAnAuditRound(t *testing.T) {
	h := newNightHarness(t, 10, pfx("91", 45))
	h.backfill()
	ws, err := h.ledger.WalkState(context.Background(), hj)
	if err != nil || ws.Audit.Round == 0 || ws.Audit.Next != 1 || ws.Audit.Pages != 5 {
		t.Fatalf("after a whole backfill: %+v %v", ws.Audit, err)
	}
	s := h.nightWith(1, 5, 1)
	if a := s.Audit(); a == nil || a.Unaudited != 0 || a.Round == 0 {
		t.Errorf("the nightly after it: %+v", a)
	}

	h2 := newNightHarness(t, 10, pfx("92", 45))
	h2.site.Inject(testsite.PagePath(hj, 3), testsite.Fault{Kind: testsite.Status, Status: 403})
	h2.backfill()
	if ws, err := h2.ledger.WalkState(context.Background(), hj); err != nil || ws.Audit.Round != 0 {
		t.Errorf("after a backfill with a failed page: %+v %v", ws.Audit, err)
	}
}

// A stable listing where the walks of an earlier version of these rules
// took turns between two states night after night, each cut at max_pages,
// delivering nothing; the audit never ran after a cut walk, and five
// papers were never delivered. (A paper of page 1 listed again four pages
// down was read as papers arriving during the walk.) Now the audit runs
// every night, a walk cut short or not, a page listed twice is no shift,
// and a gap no night gets further on is given up to the audit.
func TestWalkTakingTurnsStillEnds(t *testing.T) {
	mark := func(ids ...string) []string {
		var o []string
		for _, id := range ids {
			o = append(o, id, "doi:10.9999/synth."+id)
		}
		return o
	}
	listing := []string{"112", "113", "114", "116", "115", "117", "118", "119", "120", "121", "123", "113", "108", "106", "109",
		"110", "107", "111", "103", "080", "104", "105", "091", "092", "093", "097", "098", "048", "063", "064", "066", "067", "044", "043"}
	missing := map[string]bool{"097": true, "098": true, "064": true, "066": true, "067": true}
	var known []string
	for _, id := range listing {
		if !missing[id] {
			known = append(known, id)
		}
	}
	h := newNightHarness(t, 3, known)
	h.backfill()
	h.listing = listing
	h.site.SetListing(hj, listing, 3)
	st := ledger.WalkState{Head: mark("112", "113", "114"),
		Marks: []ledger.WalkMark{{Page: 6, Papers: mark("110", "107", "111"), Offset: 8, Stuck: 1, End: mark("103", "080", "104")}}}
	if err := h.ledger.SetWalkState(context.Background(), hj, st); err != nil {
		t.Fatal(err)
	}
	for range 2 * (len(listing)/3 + 2) { // the audit's bound, twice over
		h.nightWith(1, 4, 1)
	}
	h.check()
}

// The audit runs after a walk cut at a failed page, as after any other
// (a page that fails every night must not starve it); an audit page that
// fails for good (403) is passed over, one that fails for now (503) is
// read again the next night.
func TestAuditAfterAFailedPage(t *testing.T) {
	h := newNightHarness(t, 5, pfx("91", 100))
	h.backfill()
	h.nightWith(1, 5, 1) // the head; the audit's round starts again
	h.arrive(pfx("92", 12))
	h.site.Inject(testsite.PagePath(hj, 2), testsite.Fault{Kind: testsite.Status, Status: 403})
	s := h.nightWith(1, 5, 1)
	a := s.Audits()
	if len(s.IncompleteWalks()) != 1 || len(a) != 1 || a[0].From == 0 {
		t.Fatalf("a walk cut at a failed page: incomplete %v, audit %+v\n%s", s.IncompleteWalks(), a, h.log.String())
	}
	next := a[0].Next
	h.site.Inject(testsite.PagePath(hj, next), testsite.Fault{Kind: testsite.Status, Status: 403})
	s = h.nightWith(1, 5, 1)
	if a := s.Audits(); len(a) != 1 || a[0].Next != next+1 {
		t.Errorf("an audit page that failed for good is not passed over: %+v (was at %d)", a, next)
	}
	ws, _ := h.ledger.WalkState(context.Background(), hj)
	at := ws.Audit.Next
	for range 8 {
		h.site.Inject(testsite.PagePath(hj, at), testsite.Fault{Kind: testsite.Status, Status: 503})
	}
	h.nightWith(1, 5, 1)
	if ws, _ := h.ledger.WalkState(context.Background(), hj); ws.Audit.Next != at {
		t.Errorf("an audit page that failed for now was passed over: next %d, was %d", ws.Audit.Next, at)
	}
	for range 30 {
		h.nightWith(1, 5, 1)
	}
	h.check()
}
