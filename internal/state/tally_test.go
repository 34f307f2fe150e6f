package state_test

import (
	"errors"
	"testing"

	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/internal/state"
)

// What a run committed is counted in the same transaction: a run killed
// before it wrote its summary still has its counts, by journal; a page
// that fails twice in one run counts once; a paper delivered by an earlier
// run counts as known.
func TestTallyCountsWhatEachRunCommitted(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	page := func(j int64, p int, run string, ids ...string) ledger.Page {
		c := ledger.Page{Key: ledger.PageKey{Journal: j, Page: p}, OnPage: len(ids), RunID: run, At: t0}
		for _, id := range ids {
			c.Papers = append(c.Papers, ledger.Paper{ID: id})
		}
		return c
	}
	commitPage(t, s, page(1, 1, "r1", "a", "b"), nil)
	commitPage(t, s, page(1, 2, "r2", "b", "c", "d"), nil)
	updated := page(2, 1, "r2", "e")
	updated.Updated = 1 // and a revision
	commitPage(t, s, updated, nil)
	for range 2 {
		if err := s.FailPage(ctx, ledger.PageKey{Journal: 1, Page: 3}, "r2", errors.New("HTTP 503"), t0); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutRun(state.Run{ID: "r2", Kind: "backfill", Started: t0, PID: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteSnapshot(state.Run{ID: "r3", Kind: "nightly", Started: t0, PID: 1}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, dir)
	defer s.Close()
	got, err := s.Tallies()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[int64]state.Tally{
		"r1": {1: {PagesDone: 1, PapersNew: 2}},
		"r2": {1: {PagesDone: 1, PagesFailed: 1, PapersNew: 2, PapersKnown: 1}, 2: {PagesDone: 1, PapersNew: 1, PapersUpdated: 1}},
	}
	if len(got) != len(want) || got["r1"][1] != want["r1"][1] || got["r2"][1] != want["r2"][1] || got["r2"][2] != want["r2"][2] {
		t.Fatalf("tallies %+v, want %+v", got, want)
	}
	// The snapshot a crawl writes carries the tallies of the runs without
	// a summary, for readers while it holds the state.
	sn, err := state.ReadSnapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	if sn.Tallies["r2"][2] != want["r2"][2] {
		t.Fatalf("snapshot tallies %+v", sn.Tallies)
	}
}

// A tally not as written (damage, a hand edit) is left out: the counts of
// killed runs are never a reason for the history not to read.
func TestDamagedTallyIsLeftOut(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	commitPage(t, s, ledger.Page{Key: ledger.PageKey{Journal: 1, Page: 1}, OnPage: 1, RunID: "r1", At: t0, Papers: []ledger.Paper{{ID: "a"}}}, nil)
	if err := s.PutRawTally([]byte("abc"), []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Tallies()
	if err != nil || got["r1"][1].PapersNew != 1 || len(got) != 1 {
		t.Fatalf("tallies %v, %v", got, err)
	}
}

// A tally a format-2 file wrote (32 bytes: no revisions) is read, its
// updated count 0.
func TestFormat2TallyRead(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	commitPage(t, s, ledger.Page{Key: ledger.PageKey{Journal: 1, Page: 1}, OnPage: 1, RunID: "r1", At: t0, Papers: []ledger.Paper{{ID: "a"}}}, nil)
	k := []byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 7}
	v := make([]byte, 32)
	v[7], v[23] = 2, 5 // 2 pages done, 5 new
	if err := s.PutRawTally(k, v); err != nil {
		t.Fatal(err)
	}
	got, err := s.Tallies()
	if err != nil || got["r1"][7] != (state.Tally{PagesDone: 2, PapersNew: 5}) {
		t.Fatalf("tallies %v, %v", got, err)
	}
}
