package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/internal/testsite"
	"github.com/litcrawl/litcrawl/record"
)

// faulty wraps a site: scripted statuses per path for the current night,
// and per-night request counts.
type faulty struct {
	site   *testsite.Site
	mu     sync.Mutex
	faults map[string][]int
	hits   map[string]int
}

func (f *faulty) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.hits[r.URL.Path]++
	var st int
	if q := f.faults[r.URL.Path]; len(q) > 0 {
		st, f.faults[r.URL.Path] = q[0], q[1:]
	}
	f.mu.Unlock()
	if st != 0 {
		http.Error(w, http.StatusText(st), st)
		return
	}
	f.site.ServeHTTP(w, r)
}

func (f *faulty) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults, f.hits = map[string][]int{}, map[string]int{}
}

type variant struct {
	name                        string
	deletions, midRun, failures bool
	stops                       bool
	// kills: a run dies at a sink write (the write fails and the run
	// ends at once, with no mark left by stopping: a kill -9 after the
	// pages before it were committed).
	kills bool
	// removals: runs of up to max_pages+2 pages of papers removed between
	// nights, the newest often; shrinks: most of the listing removed.
	removals, shrinks bool
	// reorder: the listing changes the way sites reorder it: adjacent
	// swaps, papers moved up from deep pages, delivered papers moved down
	// into a gap (re-dated), papers listed twice, a page reversed, papers
	// moved anywhere; removeMid: papers removed while a walk goes on.
	reorder, removeMid bool
	sakChoices         []int
}

func envInt(k string, d int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil {
		return v
	}
	return d
}

// variants are the harness's kinds of scenario.
var variants = []variant{
	{name: "arrivals-only", sakChoices: []int{1, 2}},
	{name: "fail-stop", failures: true, stops: true, sakChoices: []int{1, 2}},
	{name: "fail-stop-delete", failures: true, stops: true, deletions: true, sakChoices: []int{1, 2}},
	{name: "midrun", midRun: true, sakChoices: []int{1, 2}},
	{name: "all", failures: true, stops: true, deletions: true, midRun: true, sakChoices: []int{1, 2}},
	{name: "removals", removals: true, sakChoices: []int{1, 2}},
	{name: "shrinks", shrinks: true, removals: true, failures: true, stops: true, sakChoices: []int{1, 2}},
	{name: "kills", kills: true, failures: true, stops: true, midRun: true, sakChoices: []int{1, 2}},
	{name: "reorder", reorder: true, sakChoices: []int{1, 2}},
	{name: "everything", reorder: true, removeMid: true, kills: true, failures: true, stops: true, deletions: true,
		midRun: true, removals: true, shrinks: true, sakChoices: []int{1, 2}},
}

// TestNightlyRandomNights runs nightly walks over a listing for many
// random scenarios: papers arriving before a night (often more than a
// night's max_pages can take) and while it goes on, pages failing once or
// for a night, runs stopped mid-walk, papers removed from the listing
// (including those of a mark), stop_after_known_pages 1 and 2, max_pages
// from its minimum up. After the disturbed nights, quiet nights run until
// a walk is complete; in two variants, runs of papers (the newest, or
// anywhere) removed between nights, and listings shrinking past the marks.
// Every paper still listed must then have been
// delivered exactly once, and no night may fetch more than max_pages.
// SEEDS (default 6 per variant), SEED0, VARIANT and SHOW choose what runs
// (SHOWLISTING=1 adds the final listing to a failing seed's log):
//
//	SEEDS=200 go test ./internal/engine -run TestNightlyRandomNights -timeout 30m
func TestNightlyRandomNights(t *testing.T) {
	only := os.Getenv("VARIANT")
	seeds := envInt("SEEDS", 6)
	first := envInt("SEED0", 1)
	for _, v := range variants {
		if only != "" && only != v.name {
			continue
		}
		t.Run(v.name, func(t *testing.T) {
			t.Parallel() // each scenario has a site, a ledger and a sink of its own
			fails := 0
			for seed := first; seed < first+seeds; seed++ {
				if msg := attackNight(t, v, int64(seed)); msg != "" {
					fails++
					if fails <= envInt("SHOW", 3) {
						t.Errorf("seed %d:\n%s", seed, msg)
					} else {
						t.Errorf("seed %d fails: %s", seed, strings.SplitN(msg, "\n", 2)[0])
					}
				}
			}
			t.Logf("%s: %d of %d seeds failed", v.name, fails, seeds)
		})
	}
}

// attackNight runs one scenario; "" when it held.
func attackNight(t *testing.T, v variant, seed int64) string {
	rng := rand.New(rand.NewPCG(uint64(seed), 99))
	site := testsite.New()
	ft := &faulty{site: site}
	ft.reset()
	const j = 4747
	pp := 3 + rng.IntN(4)
	sak := v.sakChoices[rng.IntN(len(v.sakChoices))]
	maxPages := sak + 3
	if rng.IntN(2) == 0 {
		maxPages += rng.IntN(5)
	}
	audit := 1 + rng.IntN(2)
	if os.Getenv("AUDIT") != "" {
		audit = envInt("AUDIT", audit) // AUDIT=0: the walks alone
	}
	counter := 0
	fresh := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			counter++
			out[i] = fmt.Sprintf("9%07d", counter)
		}
		return out
	}
	var mu sync.Mutex // guards listing (mid-run arrivals change it from the server)
	listing := fresh(rng.IntN(8 * pp))
	site.SetListing(j, listing, pp)
	l, out := ledger.NewMemory(), &memSink{}
	var log strings.Builder
	fmt.Fprintf(&log, "variant %s seed %d: per_page %d stop_after_known %d max_pages %d audit_pages %d initial %d papers\n", v.name, seed, pp, sak, maxPages, audit, len(listing))
	wraps := 0 // audit rounds ended since the listing is stable: at 2, one whole round read the stable listing
	var marks []ledger.WalkMark
	fail := func(format string, a ...any) string {
		return fmt.Sprintf(format, a...) + "\n" + log.String()
	}
	const disturbed = 15
	for night := 1; night <= 400; night++ {
		ft.reset()
		var stop chan struct{}
		var ev []string
		after := map[int][]func(){}
		if night <= disturbed {
			if rng.IntN(10) < 7 {
				n := rng.IntN((maxPages+2)*pp + 1)
				mu.Lock()
				listing = append(fresh(n), listing...)
				site.SetListing(j, listing, pp)
				mu.Unlock()
				ev = append(ev, fmt.Sprintf("arrive %d", n))
			}
			if v.deletions && rng.IntN(10) < 4 {
				mu.Lock()
				var del []string
				if len(marks) > 0 && rng.IntN(2) == 0 {
					m := marks[rng.IntN(len(marks))]
					for _, id := range m.Papers {
						if !strings.HasPrefix(id, "doi:") {
							del = append(del, id)
						}
					}
				}
				if len(listing) > 2 && rng.IntN(2) == 0 {
					at := 1 + rng.IntN(len(listing)-1)
					k := 1 + rng.IntN(2*pp)
					del = append(del, listing[at:min(at+k, len(listing))]...)
				}
				if len(del) > 0 {
					listing = slices.DeleteFunc(listing, func(id string) bool { return slices.Contains(del, id) })
					site.SetListing(j, listing, pp)
					ev = append(ev, fmt.Sprintf("delete %v", del))
				}
				mu.Unlock()
			}
			if v.removals && len(listing) > 0 && rng.IntN(10) < 4 {
				at := 0
				if rng.IntN(2) == 0 {
					at = rng.IntN(len(listing))
				}
				k := 1 + rng.IntN((maxPages+2)*pp)
				mu.Lock()
				listing = slices.Delete(listing, at, min(at+k, len(listing)))
				site.SetListing(j, listing, pp)
				mu.Unlock()
				ev = append(ev, fmt.Sprintf("remove %d from %d", k, at))
			}
			if v.shrinks && len(listing) > 0 && rng.IntN(10) < 2 {
				q := 3 + rng.IntN(6) // tenths removed
				mu.Lock()
				listing = slices.DeleteFunc(listing, func(string) bool { return rng.IntN(10) < q })
				site.SetListing(j, listing, pp)
				mu.Unlock()
				ev = append(ev, fmt.Sprintf("shrink by %d0%%", q))
			}
			if v.reorder {
				mu.Lock()
				ev = append(ev, reorder(rng, &listing, marks, pp)...)
				site.SetListing(j, listing, pp)
				mu.Unlock()
			}
			if v.removeMid && rng.IntN(10) < 3 {
				p := 1 + rng.IntN(maxPages)
				k := 1 + rng.IntN(2*pp)
				after[p] = append(after[p], func() {
					mu.Lock()
					if len(listing) > 0 {
						at := rng.IntN(len(listing))
						listing = slices.Delete(listing, at, min(at+k, len(listing)))
						site.SetListing(j, listing, pp)
					}
					mu.Unlock()
				})
				ev = append(ev, fmt.Sprintf("remove %d while serving page %d", k, p))
			}
			if v.failures && rng.IntN(10) < 3 {
				p := 1 + rng.IntN(maxPages+1)
				var q []int
				switch rng.IntN(3) {
				case 0:
					q = []int{403}
				case 1:
					q = []int{503, 503, 503, 503, 503, 503, 503, 503}
				case 2:
					q = []int{502, 503}
				}
				ft.mu.Lock()
				ft.faults[testsite.PagePath(j, p)] = q
				ft.mu.Unlock()
				ev = append(ev, fmt.Sprintf("fault page %d %v", p, q))
			}
			if v.stops && rng.IntN(10) < 2 {
				p := 1 + rng.IntN(maxPages)
				stop = make(chan struct{})
				s := stop
				after[p] = append(after[p], func() { close(s) })
				ev = append(ev, fmt.Sprintf("stop after serving page %d", p))
			}
			if v.midRun && rng.IntN(10) < 3 {
				p := 1 + rng.IntN(maxPages)
				n := 1 + rng.IntN(3*pp)
				add := fresh(n)
				after[p] = append(after[p], func() {
					mu.Lock()
					listing = append(add, listing...)
					site.SetListing(j, listing, pp)
					mu.Unlock()
				})
				ev = append(ev, fmt.Sprintf("arrive %d while serving page %d", n, p))
			}
			for p, fs := range after {
				site.AfterServe(testsite.PagePath(j, p), func() {
					for _, f := range fs {
						f()
					}
				})
			}
		}
		var die *dyingSink
		if v.kills && night <= disturbed && rng.IntN(10) < 3 {
			die = &dyingSink{memSink: out, left: rng.IntN(maxPages)}
			ev = append(ev, fmt.Sprintf("die at write %d", die.left+1))
		}
		r := memRun(ft, l, out, fmt.Sprintf("n%d", night))
		if die != nil {
			r = engine.Start(engine.Options{ID: fmt.Sprintf("n%d", night), Fetcher: fakeFetcher{h: ft, attempts: 6}, Ledger: l, Sink: die, Concurrency: 2})
		}
		err := r.Nightly(context.Background(), engine.NightlyOptions{Journals: []int64{j}, StopAfterKnownPages: sak, MaxPages: maxPages, AuditPages: audit, Stop: stop})
		r.Close()
		if die != nil && errors.Is(err, errDied) {
			err = nil
		}
		iw := r.Summary().IncompleteWalks()
		var au []string
		for _, a := range r.Summary().Audits() {
			if a.From > 0 {
				au = append(au, fmt.Sprintf("%d-%d", a.From, a.To))
			}
			if a.Wrapped && night > disturbed {
				wraps++
			}
		}
		newN := r.Summary().PapersNew.Load()
		var merr error
		var ws ledger.WalkState
		ws, merr = l.WalkState(context.Background(), j)
		marks = ws.Marks
		for p := range after {
			site.AfterServe(testsite.PagePath(j, p), nil)
		}
		if err != nil {
			return fail("night %d: nightly error %v", night, err)
		}
		if merr != nil {
			return fail("night %d: marks: %v", night, merr)
		}
		ft.mu.Lock()
		var pages []int
		for p := 1; p <= len(listing)/pp+200; p++ {
			if ft.hits[testsite.PagePath(j, p)] > 0 {
				pages = append(pages, p)
			}
		}
		ft.mu.Unlock()
		var ms []string
		for _, m := range marks {
			var pids []string
			for _, id := range m.Papers {
				if !strings.HasPrefix(id, "doi:") {
					pids = append(pids, id)
				}
			}
			ms = append(ms, fmt.Sprintf("p%d%v", m.Page, pids))
		}
		mu.Lock()
		notes, _ := r.Summary().WalkNotes()
		fmt.Fprintf(&log, "night %d: %v; listing %d papers (%d pages); fetched pages %v; new %d; incomplete %v; marks after %v; audit %v; notes %d\n",
			night, ev, len(listing), (len(listing)+pp-1)/pp, pages, newN, iw, ms, au, len(notes))
		if os.Getenv("SHOWNOTES") != "" {
			for _, n := range notes {
				fmt.Fprintf(&log, "    %s\n", n.Text)
			}
		}
		mu.Unlock()
		if len(pages) > maxPages+audit {
			return fail("night %d fetched %d pages %v, max_pages %d and audit_pages %d", night, len(pages), pages, maxPages, audit)
		}
		if night > disturbed && len(iw) == 0 && (wraps >= 2 || len(listing) == 0 || audit == 0) {
			break
		}
		if night == 400 {
			return fail("still incomplete after 400 nights")
		}
	}
	got := out.ids()
	var dup, missing []string
	for id, n := range got {
		if n != 1 {
			dup = append(dup, fmt.Sprintf("%s×%d", id, n))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range listing {
		if got[id] == 0 {
			missing = append(missing, id)
		}
	}
	if len(dup) > 0 || len(missing) > 0 {
		if os.Getenv("SHOWLISTING") != "" {
			fmt.Fprintf(&log, "final listing: %v\n", listing)
		}
		slices.Sort(dup)
		return fail("duplicates %v; missing %d of %d: %v", dup, len(missing), len(listing), missing)
	}
	return ""
}

// reorder changes the listing as sites reorder theirs, and says how.
func reorder(rng *rand.Rand, listing *[]string, marks []ledger.WalkMark, pp int) []string {
	var ev []string
	l := *listing
	move := func(from, to int) {
		id := l[from]
		l = slices.Delete(l, from, from+1)
		l = slices.Insert(l, min(to, len(l)), id)
	}
	if len(l) > 2 && rng.IntN(10) < 3 {
		i := rng.IntN(len(l) - 1)
		l[i], l[i+1] = l[i+1], l[i]
		ev = append(ev, fmt.Sprintf("swap %d", i))
	}
	if len(l) > 3*pp && rng.IntN(10) < 2 {
		from := 3*pp + rng.IntN(len(l)-3*pp)
		move(from, rng.IntN(pp))
		ev = append(ev, fmt.Sprintf("move up from %d", from))
	}
	if len(marks) > 0 && len(l) > 1 && rng.IntN(10) < 4 {
		// A delivered paper from above the first gap, re-dated into it.
		gap := min(marks[0].Page*pp, len(l)-1)
		from := rng.IntN(gap + 1)
		move(from, gap+rng.IntN(2*pp))
		ev = append(ev, fmt.Sprintf("move %d down into the gap", from))
	}
	if len(l) > 1 && rng.IntN(10) < 2 {
		id := l[rng.IntN(len(l))]
		at := rng.IntN(len(l))
		l = slices.Insert(l, at, id)
		ev = append(ev, fmt.Sprintf("list %s twice, at %d", id, at))
	}
	if len(l) > pp && rng.IntN(10) < 2 {
		p := rng.IntN(len(l) / pp)
		slices.Reverse(l[p*pp : (p+1)*pp])
		ev = append(ev, fmt.Sprintf("reverse page %d", p+1))
	}
	if len(l) > 1 && rng.IntN(10) < 2 {
		from, to := rng.IntN(len(l)), rng.IntN(len(l))
		move(from, to)
		ev = append(ev, fmt.Sprintf("re-date %d to %d", from, to))
	}
	*listing = l
	return ev
}

// Scenarios of the random harness that once failed, run in every test run
// (with the audit, as every scenario now: a walk alone may leave papers to
// it): an empty listing whose audit never went round (shrinks 1054), a
// step back over pages held back whose state no commit carried (removals
// 20), a gap whose mark went back and forth between two pages, night after
// night, delivering nothing (everything 3031); and before the audit:
// a jump that went back every night at the minimum max_pages and never
// got further (shrinks 1187 and 1276, removals 2248, 1005 and 2050), a
// loose mark whose papers were removed while the papers its gap starts
// after were met on the way (removals 1253), papers removed above a mark
// while others arrived (all 2260), and papers arriving while a walk went
// on that then stopped short, its last page above where it got to
// (midrun 1010, 1052, 1147, 1174, 1295; all 1224 and 2027).
func TestNightlyRegressionSeeds(t *testing.T) {
	byName := map[string]variant{}
	for _, v := range variants {
		byName[v.name] = v
	}
	for _, c := range []struct {
		variant string
		seed    int64
	}{{"shrinks", 1187}, {"shrinks", 1276}, {"removals", 2248}, {"removals", 1005}, {"removals", 2050}, {"removals", 1253}, {"all", 2260},
		{"midrun", 1010}, {"midrun", 1052}, {"midrun", 1147}, {"midrun", 1174}, {"midrun", 1295}, {"all", 1224}, {"all", 2027},
		{"all", 344}, {"kills", 257}, {"removals", 20}, {"shrinks", 1054}, {"everything", 3031}} {
		t.Run(fmt.Sprintf("%s-%d", c.variant, c.seed), func(t *testing.T) {
			t.Parallel()
			if msg := attackNight(t, byName[c.variant], c.seed); msg != "" {
				t.Errorf("%s seed %d:\n%s", c.variant, c.seed, msg)
			}
		})
	}
}

// errDied is a dyingSink's failure.
var errDied = errors.New("the run died")

// dyingSink passes left writes to its memSink, then fails every one: the
// run ends there as one killed after its last commit would, leaving only
// what it committed.
type dyingSink struct {
	*memSink
	mu   sync.Mutex
	left int
}

func (s *dyingSink) Write(ctx context.Context, recs []record.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.left == 0 {
		return errDied
	}
	s.left--
	return s.memSink.Write(ctx, recs)
}
