// Package ledgertest is the conformance suite every ledger.Ledger runs:
// papers are found by id and by DOI, the first run to deliver a paper keeps
// it, a commit reports what was new, and the optional abilities (pages,
// tokens) behave.
package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/internal/ledger"
)

// Run runs the suite; fresh makes a new, empty ledger for each test, and
// may give a function that reopens it (closing the first), to check that
// what was committed outlives a restart; nil reuses the ledger.
func Run(t *testing.T, fresh func(t *testing.T) (l ledger.Ledger, reopen func() ledger.Ledger)) {
	t.Run("LookupByIDAndDOI", func(t *testing.T) { byIDAndDOI(t, fresh) })
	t.Run("FirstRunKeepsAPaper", func(t *testing.T) { firstRunKeeps(t, fresh) })
	t.Run("EmptyAndRepeatedCommits", func(t *testing.T) { emptyAndRepeated(t, fresh) })
	t.Run("PageBook", func(t *testing.T) { pageBook(t, fresh) })
	t.Run("TokenStore", func(t *testing.T) { tokens(t, fresh) })
	t.Run("WalkStates", func(t *testing.T) { walkStates(t, fresh) })
	t.Run("CancelledContext", func(t *testing.T) { cancelled(t, fresh) })
	t.Run("LargeGroup", func(t *testing.T) { largeGroup(t, fresh) })
	t.Run("SharedKeysInAGroup", func(t *testing.T) { sharedKeys(t, fresh) })
	t.Run("LongIDs", func(t *testing.T) { longIDs(t, fresh) })
	t.Run("Prints", func(t *testing.T) { prints(t, fresh) })
}

func printOf(b byte) ledger.Print {
	var p ledger.Print
	for i := range p {
		p[i] = b + byte(i)
	}
	return p
}

// prints checks the prints a ledger keeps: a new paper's print is found
// by its id (its DOI for an id "doi:…"), not by its DOI alone (a read
// without the JSON cannot carry its site id), and a look-up says whether
// it found the paper by its own id (ByID: "x", known by its DOI alone, is
// not); a later commit with another print replaces
// it and keeps the paper's first run; a zero print keeps what is there;
// a paper whose id changed (seen by its DOI first, "doi:…", then with a
// site id) is found with its latest print by either; all of it outlives
// a reopen.
func prints(t *testing.T, fresh func(*testing.T) (ledger.Ledger, func() ledger.Ledger)) {
	l, reopen := fresh(t)
	a := ledger.Paper{ID: "501", DOI: "10.1000/P1", Print: printOf(1)}
	b := ledger.Paper{ID: "doi:10.1000/p2", Print: printOf(40)}
	c := ledger.Paper{ID: "503"} // recorded without a print
	commit(t, l, "r1", []ledger.Paper{a, b, c})
	want := func(l ledger.Ledger, ps []ledger.Paper, run string, wantSeen ...ledger.Seen) {
		t.Helper()
		if got := look(t, l, ps, run); !slices.Equal(got, wantSeen) {
			t.Errorf("Lookup(%v) = %v; want %v", ps, got, wantSeen)
		}
	}
	before := ledger.DeliveredBefore
	want(l, []ledger.Paper{{ID: "501"}, {ID: "doi:10.1000/p1"}, {ID: "x", DOI: "10.1000/p2"}, c},
		"r2", ledger.Seen{Delivery: before, Print: printOf(1), ByID: true}, ledger.Seen{Delivery: before, ByID: true},
		ledger.Seen{Delivery: before, Print: printOf(40)}, ledger.Seen{Delivery: before, ByID: true})
	// A new revision of a, and b seen with its site id.
	a2 := ledger.Paper{ID: "501", DOI: "10.1000/p1", Print: printOf(80)}
	b2 := ledger.Paper{ID: "502", DOI: "10.1000/P2", Print: printOf(120)}
	if n := commit(t, l, "r2", []ledger.Paper{a2, b2, {ID: "503"}}); n[0] != 0 {
		t.Errorf("second commit: %v new; want 0 (502 is known by its DOI)", n)
	}
	if reopen != nil {
		l = reopen()
	}
	want(l, []ledger.Paper{{ID: "501"}, {ID: "502"}, {ID: "doi:10.1000/p2"}, {ID: "503"}},
		"r3", ledger.Seen{Delivery: before, Print: printOf(80), ByID: true}, ledger.Seen{Delivery: before, Print: printOf(120), ByID: true},
		ledger.Seen{Delivery: before, Print: printOf(120), ByID: true}, ledger.Seen{Delivery: before, ByID: true})
}

// sharedKeys commits, in one group, a paper on two pages and two ids with
// one DOI: each paper is new once, on its first page, and every id is
// recorded.
func sharedKeys(t *testing.T, fresh func(*testing.T) (ledger.Ledger, func() ledger.Ledger)) {
	l, _ := fresh(t)
	for i := range 20 { // the keys are sent at once: any order must give this
		a := ledger.Paper{ID: fmt.Sprintf("sk-a%d", i), DOI: fmt.Sprintf("10.8/a%d", i)}
		b := ledger.Paper{ID: fmt.Sprintf("sk-b%d", i), DOI: fmt.Sprintf("10.8/A%d", i)} // a's DOI under another id
		c := ledger.Paper{ID: fmt.Sprintf("sk-c%d", i), DOI: fmt.Sprintf("10.8/c%d", i)}
		if n := commit(t, l, "r1", []ledger.Paper{a, c}, []ledger.Paper{c, b}); n[0] != 2 || n[1] != 0 {
			t.Fatalf("new papers: %v, want [2 0]", n)
		}
		for _, p := range []ledger.Paper{{ID: b.ID}, {ID: c.ID}, {ID: "x", DOI: c.DOI}} {
			if got := lookup(t, l, []ledger.Paper{p}, "r2"); got[0] != ledger.DeliveredBefore {
				t.Fatalf("%+v: %v", p, got[0])
			}
		}
	}
}

// largeGroup commits pages with more keys than a ledger may have in flight
// at once, half of them known, and looks them all up.
func largeGroup(t *testing.T, fresh func(*testing.T) (ledger.Ledger, func() ledger.Ledger)) {
	l, _ := fresh(t)
	page := func(from, n int) []ledger.Paper {
		var ps []ledger.Paper
		for i := from; i < from+n; i++ {
			ps = append(ps, ledger.Paper{ID: fmt.Sprintf("big-%d", i), DOI: fmt.Sprintf("10.7/big.%d", i)})
		}
		return ps
	}
	if n := commit(t, l, "r1", page(0, 150)); n[0] != 150 {
		t.Fatalf("first group: %v new", n)
	}
	// Two pages of 150: the first half known, then 150 new.
	if n := commit(t, l, "r2", page(75, 150), page(225, 150)); n[0] != 75 || n[1] != 150 {
		t.Fatalf("second group: %v new, want [75 150]", n)
	}
	got := lookup(t, l, append(page(0, 400), ledger.Paper{ID: "other", DOI: "10.7/BIG.5"}), "r2")
	for i, s := range got {
		want := ledger.NeverDelivered
		switch {
		case i < 75 || i == 400:
			want = ledger.DeliveredBefore
		case i < 375:
			want = ledger.DeliveredThisRun
			if i < 150 {
				want = ledger.DeliveredBefore
			}
		}
		if s != want {
			t.Fatalf("paper %d: %v, want %v", i, s, want)
		}
	}
}

var ctx = context.Background()

func lookup(t *testing.T, l ledger.Ledger, ps []ledger.Paper, run string) []ledger.Delivery {
	t.Helper()
	return ledger.Deliveries(look(t, l, ps, run))
}

func look(t *testing.T, l ledger.Ledger, ps []ledger.Paper, run string) []ledger.Seen {
	t.Helper()
	got, err := l.Lookup(ctx, ps, run)
	if err != nil {
		t.Fatalf("Lookup: %v", err)
	}
	if len(got) != len(ps) {
		t.Fatalf("Lookup answered %d papers for %d", len(got), len(ps))
	}
	return got
}

func commit(t *testing.T, l ledger.Ledger, run string, pages ...[]ledger.Paper) []int {
	t.Helper()
	g := ledger.Group{}
	for i, ps := range pages {
		g.Pages = append(g.Pages, ledger.Page{Key: ledger.PageKey{Journal: 7, Page: i + 1}, Papers: ps, OnPage: len(ps), RunID: run, At: time.Now()})
	}
	n, err := l.Commit(ctx, g)
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if len(n) != len(pages) {
		t.Fatalf("Commit answered %d pages for %d", len(n), len(pages))
	}
	return n
}

func byIDAndDOI(t *testing.T, fresh func(*testing.T) (ledger.Ledger, func() ledger.Ledger)) {
	l, reopen := fresh(t)
	papers := []ledger.Paper{{ID: "142", DOI: "10.1000/ABC"}, {ID: "doi:10.1000/only"}, {ID: "143"}, {ID: "title:9f2c", DOI: ""}}
	if got := lookup(t, l, papers, "r1"); !slices.Equal(got, []ledger.Delivery{0, 0, 0, 0}) {
		t.Fatalf("an empty ledger knows %v", got)
	}
	if n := commit(t, l, "r1", papers[:2], papers[2:]); !slices.Equal(n, []int{2, 2}) {
		t.Fatalf("new papers %v, want [2 2]", n)
	}
	if reopen != nil {
		l = reopen()
	}
	probe := []ledger.Paper{
		{ID: "142"}, // by id
		{ID: "doi:10.1000/abc", DOI: "10.1000/abc"}, // by DOI, case aside
		{ID: "777", DOI: " 10.1000/ONLY "},          // known as doi:… alone
		{ID: "143", DOI: "10.9/new"},                // by id, with a DOI never seen
		{ID: "title:9f2c"},
		{ID: "999", DOI: "10.9/unknown"},
	}
	want := []ledger.Delivery{ledger.DeliveredThisRun, ledger.DeliveredThisRun, ledger.DeliveredThisRun, ledger.DeliveredThisRun, ledger.DeliveredThisRun, ledger.NeverDelivered}
	if got := lookup(t, l, probe, "r1"); !slices.Equal(got, want) {
		t.Errorf("same run: %v, want %v", got, want)
	}
	for i := range want[:5] {
		want[i] = ledger.DeliveredBefore
	}
	if got := lookup(t, l, probe, "r2"); !slices.Equal(got, want) {
		t.Errorf("a later run: %v, want %v", got, want)
	}
}

func firstRunKeeps(t *testing.T, fresh func(*testing.T) (ledger.Ledger, func() ledger.Ledger)) {
	l, _ := fresh(t)
	p := []ledger.Paper{{ID: "1", DOI: "10.1/one"}}
	commit(t, l, "first", p)
	if n := commit(t, l, "second", p); n[0] != 0 {
		t.Errorf("a paper committed again counted as new (%d)", n[0])
	}
	if got := lookup(t, l, p, "second"); got[0] != ledger.DeliveredBefore {
		t.Errorf("the second run took the paper over: %v", got)
	}
	// The same paper by its DOI only, under another id: not new either.
	if n := commit(t, l, "third", []ledger.Paper{{ID: "doi:10.1/one", DOI: "10.1/ONE"}}); n[0] != 0 {
		t.Errorf("a known DOI under another id counted as new")
	}
}

func emptyAndRepeated(t *testing.T, fresh func(*testing.T) (ledger.Ledger, func() ledger.Ledger)) {
	l, _ := fresh(t)
	if n := commit(t, l, "r", nil); n[0] != 0 {
		t.Errorf("an empty page made %d papers new", n[0])
	}
	if got := lookup(t, l, nil, "r"); len(got) != 0 {
		t.Errorf("Lookup of nothing: %v", got)
	}
	// The same paper twice on one page is new once.
	if n := commit(t, l, "r", []ledger.Paper{{ID: "5"}, {ID: "5"}}); n[0] != 1 {
		t.Errorf("a paper twice on a page: %d new, want 1", n[0])
	}
}

func pageBook(t *testing.T, fresh func(*testing.T) (ledger.Ledger, func() ledger.Ledger)) {
	l, reopen := fresh(t)
	pb, ok := l.(ledger.PageBook)
	if !ok {
		t.Skip("no PageBook")
	}
	k1, k2 := ledger.PageKey{Journal: 7, Page: 1}, ledger.PageKey{Journal: 7, Page: 2}
	if err := pb.FailPage(ctx, k2, "r", errors.New("HTTP 403"), time.Now()); err != nil {
		t.Fatal(err)
	}
	commit(t, l, "r", []ledger.Paper{{ID: "1"}})
	if reopen != nil {
		l = reopen()
		pb = l.(ledger.PageBook)
	}
	if done, err := pb.PageDone(ctx, k1); err != nil || !done {
		t.Errorf("committed page: done %v (%v)", done, err)
	}
	if done, err := pb.PageDone(ctx, k2); err != nil || done {
		t.Errorf("failed page: done %v (%v)", done, err)
	}
}

func tokens(t *testing.T, fresh func(*testing.T) (ledger.Ledger, func() ledger.Ledger)) {
	l, reopen := fresh(t)
	ts, ok := l.(ledger.TokenStore)
	if !ok {
		t.Skip("no TokenStore")
	}
	if tok, err := ts.SinkToken(ctx); err != nil || tok != nil {
		t.Fatalf("a fresh ledger's token: %q (%v)", tok, err)
	}
	g := ledger.Group{Pages: []ledger.Page{{Key: ledger.PageKey{Journal: 1, Page: 1}, RunID: "r", At: time.Now()}}, SinkToken: []byte(`{"t":1}`)}
	if _, err := l.Commit(ctx, g); err != nil {
		t.Fatal(err)
	}
	g.SinkToken = nil // keeps the stored one
	if _, err := l.Commit(ctx, g); err != nil {
		t.Fatal(err)
	}
	if reopen != nil {
		l = reopen()
		ts = l.(ledger.TokenStore)
	}
	if tok, err := ts.SinkToken(ctx); err != nil || string(tok) != `{"t":1}` {
		t.Errorf("stored token: %q (%v)", tok, err)
	}
}

func walkStates(t *testing.T, fresh func(*testing.T) (ledger.Ledger, func() ledger.Ledger)) {
	l, reopen := fresh(t)
	ws, ok := l.(ledger.WalkStates)
	if !ok {
		t.Skip("no WalkStates")
	}
	if e, ok := l.(ledger.Emptiness); ok {
		if empty, err := e.Empty(ctx); err != nil || !empty {
			t.Errorf("a fresh ledger is not empty: %v (%v)", empty, err)
		}
	}
	if s, err := ws.WalkState(ctx, 7); err != nil || !s.IsZero() {
		t.Fatalf("a fresh ledger's walk state: %+v (%v)", s, err)
	}
	state := ledger.WalkState{
		Head:  []string{"h1", "doi:10.1/h", "h2"},
		Marks: []ledger.WalkMark{{Page: 3, Papers: []string{"p9"}, Offset: 60, End: []string{"e1", "e2"}}, {Page: 12, Papers: []string{"p1", "doi:10.1/x", "p2"}}},
		Audit: ledger.Audit{Next: 5, Since: 1_800_000_000, Round: 1_790_000_000, Pages: 40},
	}
	if err := ws.SetWalkState(ctx, 7, state); err != nil {
		t.Fatal(err)
	}
	if err := ws.SetWalkState(ctx, 8, ledger.WalkState{Marks: []ledger.WalkMark{{Page: 3, Papers: []string{"q"}}}}); err != nil {
		t.Fatal(err)
	}
	if reopen != nil {
		l = reopen()
		ws = l.(ledger.WalkStates)
	}
	got, err := ws.WalkState(ctx, 7)
	if err != nil || !reflect.DeepEqual(got, state) {
		t.Errorf("journal 7's walk state: %+v (%v), want %+v", got, err, state)
	}
	if err := ws.SetWalkState(ctx, 7, ledger.WalkState{}); err != nil {
		t.Fatal(err)
	}
	if s, err := ws.WalkState(ctx, 7); err != nil || !s.IsZero() {
		t.Errorf("journal 7's cleared state: %+v (%v)", s, err)
	}
	if s, err := ws.WalkState(ctx, 8); err != nil || len(s.Marks) != 1 || s.Marks[0].Page != 3 {
		t.Errorf("journal 8's state after clearing 7's: %+v (%v)", s, err)
	}
	// A commit sets the states it carries with its pages (where a walk
	// killed right after it carries on), and clears those it carries
	// empty; the others stay.
	g := ledger.Group{Pages: []ledger.Page{{Key: ledger.PageKey{Journal: 7, Page: 2}, Papers: []ledger.Paper{{ID: "m1"}}, RunID: "r"}},
		Walks: map[int64]ledger.WalkState{7: {Marks: []ledger.WalkMark{{Page: 2, Papers: []string{"m1"}}}, Audit: ledger.Audit{Next: 3}}, 8: {}}}
	if _, err := l.Commit(ctx, g); err != nil {
		t.Fatal(err)
	}
	if reopen != nil {
		l = reopen()
		ws = l.(ledger.WalkStates)
	}
	if s, err := ws.WalkState(ctx, 7); err != nil || len(s.Marks) != 1 || s.Marks[0].Page != 2 || !slices.Equal(s.Marks[0].Papers, []string{"m1"}) || s.Audit.Next != 3 {
		t.Errorf("journal 7's state after a commit that carries it: %+v (%v)", s, err)
	}
	if s, err := ws.WalkState(ctx, 8); err != nil || !s.IsZero() {
		t.Errorf("journal 8's state after a commit that clears it: %+v (%v)", s, err)
	}
	if e, ok := l.(ledger.Emptiness); ok {
		if empty, err := e.Empty(ctx); err != nil || empty {
			t.Errorf("a ledger with a page committed is empty: %v (%v)", empty, err)
		}
	}
}

func cancelled(t *testing.T, fresh func(*testing.T) (ledger.Ledger, func() ledger.Ledger)) {
	l, _ := fresh(t)
	c, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.Lookup(c, []ledger.Paper{{ID: "1"}}, "r"); !errors.Is(err, context.Canceled) {
		t.Errorf("Lookup with a cancelled context: %v", err)
	}
	if _, err := l.Commit(c, ledger.Group{Pages: []ledger.Page{{Papers: []ledger.Paper{{ID: "1"}}}}}); !errors.Is(err, context.Canceled) {
		t.Errorf("Commit with a cancelled context: %v", err)
	}
}

// longIDs: a page may name a paper with an id or DOI of kilobytes (a site
// that pastes its abstract there); it is remembered and found like any
// other, and told apart from another long one that differs at its end.
func longIDs(t *testing.T, fresh func(*testing.T) (ledger.Ledger, func() ledger.Ledger)) {
	l, _ := fresh(t)
	long := strings.Repeat("7", 8000)
	p := ledger.Paper{ID: long + "a", DOI: "10.1/" + long}
	other := ledger.Paper{ID: long + "b"}
	g := ledger.Group{Pages: []ledger.Page{{Key: ledger.PageKey{Journal: 9, Page: 1}, Papers: []ledger.Paper{p}, RunID: "r1"}}}
	if _, err := l.Commit(ctx, g); err != nil {
		t.Fatal(err)
	}
	seen, err := l.Lookup(ctx, []ledger.Paper{p, other, {ID: "x", DOI: "10.1/" + long}}, "r2")
	if err != nil || len(seen) != 3 || seen[0].Delivery != ledger.DeliveredBefore || seen[1].Delivery != ledger.NeverDelivered || seen[2].Delivery != ledger.DeliveredBefore {
		t.Errorf("long ids: %v %v; want known, unknown, known by its DOI", seen, err)
	}
}
