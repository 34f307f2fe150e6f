package state_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/state"
)

var t0 = time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)

// seen looks one paper up for run.
func seen(t *testing.T, s *state.Store, id, doi, run string) state.Seen {
	t.Helper()
	got, err := s.Lookup([]state.Paper{{ID: id, DOI: doi}}, run)
	if err != nil {
		t.Fatal(err)
	}
	return got[0]
}

func open(t *testing.T, dir string) *state.Store {
	t.Helper()
	s, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A commit is durable across reopen: the page is done, its papers known by
// id and by DOI (whatever the case), the sink token stored.
func TestCommitSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	page := state.PageKey{Journal: 501422, Page: 7}
	n, err := s.CommitPage(state.Commit{Page: page, OnPage: 3, RunID: "run-1", At: t0,
		SinkToken: []byte(`{"0":{"path":"out.jsonl","offset":42}}`),
		Papers:    []state.Paper{{ID: "142210977", DOI: "arxiv-2409.01075"}, {ID: "doi:10.1000/x.1", DOI: "10.1000/X.1"}}})
	if err != nil || n != 2 {
		t.Fatalf("CommitPage: new=%d err=%v", n, err)
	}
	s.Close()

	s = open(t, dir)
	defer s.Close()
	st, ok, err := s.Page(page)
	if err != nil || !ok || st.State != state.PageDone || st.Papers != 3 || st.NewPapers != 2 || st.RunID != "run-1" || st.Attempts != 1 {
		t.Errorf("page status = %+v ok=%v err=%v", st, ok, err)
	}
	for _, q := range []struct{ id, doi string }{
		{"142210977", ""},
		{"other-id", "ARXIV-2409.01075"}, // same DOI, other case, other id
		{"160000009", "10.1000/x.1"},     // seen before only as doi:…, now with its JSON id
	} {
		if got := seen(t, s, q.id, q.doi, "run-1"); got != state.SeenThisRun {
			t.Errorf("Lookup(%q, %q) for run-1 = %v, want delivered by run-1", q.id, q.doi, got)
		}
	}
	if got := seen(t, s, "nope", "10.9/none", "run-1"); got != state.Unknown {
		t.Error("an unknown paper is known")
	}
	tok, err := s.SinkToken()
	if err != nil || string(tok) != `{"0":{"path":"out.jsonl","offset":42}}` {
		t.Errorf("sink token = %s %v", tok, err)
	}
}

// Papers delivered again are not new, and keep the run that first
// delivered them (nightly mode asks "known before this run?").
func TestKnownKeepsFirstRun(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	p := []state.Paper{{ID: "1", DOI: "10.1/a"}}
	s.CommitPage(state.Commit{Page: state.PageKey{Journal: 1, Page: 1}, Papers: p, RunID: "r1", At: t0})
	n, _ := s.CommitPage(state.Commit{Page: state.PageKey{Journal: 1, Page: 2}, Papers: p, RunID: "r2", At: t0})
	if n != 0 {
		t.Errorf("a known paper counted as new")
	}
	if got := seen(t, s, "1", "", "r1"); got != state.SeenThisRun {
		t.Errorf("Lookup for r1 = %v: the first run is not kept", got)
	}
	if tok, _ := s.SinkToken(); tok != nil {
		t.Errorf("commits without a token stored one: %s", tok)
	}
}

func TestFailedPages(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	a, b := state.PageKey{Journal: 7, Page: 3}, state.PageKey{Journal: 7, Page: 4}
	s.FailPage(a, "r1", errors.New("503 Service Unavailable"), t0)
	s.FailPage(a, "r1", errors.New("timeout"), t0)
	s.FailPage(b, "r1", errors.New("reset"), t0)
	s.CommitPage(state.Commit{Page: b, RunID: "r1", At: t0})
	failed, err := s.FailedPages()
	if err != nil || !slices.Equal(failed, []state.PageKey{a}) {
		t.Fatalf("failed pages = %v %v", failed, err)
	}
	st, _, _ := s.Page(a)
	if st.Attempts != 2 || st.LastError != "timeout" {
		t.Errorf("status = %+v", st)
	}
	if st, _, _ := s.Page(b); st.State != state.PageDone || st.Attempts != 2 {
		t.Errorf("a failed page committed later: %+v", st)
	}
}

func TestRuns(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	s.PutRun(state.Run{ID: "20261202T030000Z-1", Kind: "nightly", Started: t0})
	s.PutRun(state.Run{ID: "20261201T030000Z-1", Kind: "backfill", Started: t0.Add(-24 * time.Hour), Finished: t0, Summary: []byte(`{"pages":3}`)})
	runs, err := s.Runs()
	if err != nil || len(runs) != 2 || runs[0].Kind != "backfill" || string(runs[0].Summary) != `{"pages":3}` {
		t.Fatalf("runs = %+v %v", runs, err)
	}
}

// A second process (here: a second open) is refused with a clear error.
func TestLocked(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	defer s.Close()
	if _, err := state.Open(dir); !errors.Is(err, state.ErrLocked) {
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
}

// Handing the memory map's pages back to the kernel after commits loses
// nothing: readers running meanwhile and after, and the file reopened, see
// every paper committed.
func TestReleasedMapReadsBack(t *testing.T) {
	defer state.SetReleaseEvery(0)() // release after every commit
	dir := t.TempDir()
	s := open(t, dir)
	id := func(p, i int) string { return fmt.Sprintf("%d-%02d", p, i) }
	const pages = 200
	done := make(chan struct{})
	readErr := make(chan error, 1)
	startReader := func() {
		go func() { // reads while commits release the map
			defer close(readErr)
			for {
				select {
				case <-done:
					return
				default:
				}
				if got, err := s.Lookup([]state.Paper{{ID: id(0, 0)}}, "run-1"); err != nil || got[0] != state.SeenThisRun {
					readErr <- fmt.Errorf("Lookup(%s) = %v, %v during commits", id(0, 0), got, err)
					return
				}
			}
		}()
	}
	for p := range pages {
		c := state.Commit{Page: state.PageKey{Journal: 9, Page: p + 1}, OnPage: 20, RunID: "run-1", At: t0}
		for i := range 20 {
			c.Papers = append(c.Papers, state.Paper{ID: id(p, i), DOI: "10.1/" + id(p, i)})
		}
		if n, err := s.CommitPage(c); err != nil || n != 20 {
			t.Fatalf("page %d: new=%d err=%v", p+1, n, err)
		}
		if p == 0 {
			startReader()
		}
	}
	close(done)
	if err := <-readErr; err != nil {
		t.Error(err)
	}
	check := func(s *state.Store) {
		t.Helper()
		for p := range pages {
			for i := range 20 {
				if got := seen(t, s, "other", "10.1/"+id(p, i), "run-1"); got != state.SeenThisRun {
					t.Fatalf("paper %s: %v, want delivered by run-1", id(p, i), got)
				}
			}
		}
	}
	check(s)
	s.Close()
	s = open(t, dir)
	defer s.Close()
	check(s)
}

// Lookup tells papers never delivered from papers delivered earlier in the
// same run and papers delivered by an earlier run, by id, by DOI (any case)
// and by a "doi:" id.
func TestLookup(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	commit := func(run string, page int, ps ...state.Paper) {
		t.Helper()
		if _, err := s.CommitPage(state.Commit{Page: state.PageKey{Journal: 1, Page: page}, Papers: ps, RunID: run, At: t0}); err != nil {
			t.Fatal(err)
		}
	}
	commit("run-1", 1, state.Paper{ID: "a", DOI: "10.1/A"}, state.Paper{ID: "doi:10.1/b", DOI: "10.1/b"})
	commit("run-2", 2, state.Paper{ID: "c"})
	got, err := s.Lookup([]state.Paper{
		{ID: "a"},                   // by id, earlier run
		{ID: "a2", DOI: " 10.1/a "}, // by DOI, other case and spaces
		{ID: "b", DOI: "10.1/B"},    // known as "doi:10.1/b" alone
		{ID: "c"},                   // this run
		{ID: "d", DOI: "10.1/d"},    // never
		{ID: "", DOI: ""},           // nothing to go by
	}, "run-2")
	want := []state.Seen{state.SeenBefore, state.SeenBefore, state.SeenBefore, state.SeenThisRun, state.Unknown, state.Unknown}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("Lookup = %v, %v; want %v", got, err, want)
	}
}
