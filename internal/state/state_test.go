package state_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/internal/ledger/ledgertest"
	"github.com/litcrawl/litcrawl/internal/state"
)

var ctx = context.Background()

// The store is a ledger: the conformance suite, across reopens of a real
// bbolt file.
func TestLedgerConformance(t *testing.T) {
	ledgertest.Run(t, func(t *testing.T) (ledger.Ledger, func() ledger.Ledger) {
		dir := t.TempDir()
		s := open(t, dir)
		t.Cleanup(func() { s.Close() })
		return s, func() ledger.Ledger {
			s.Close()
			s = open(t, dir)
			return s
		}
	})
}

// commitPage commits one page in a group of its own.
func commitPage(t *testing.T, s *state.Store, c ledger.Page, token []byte) int {
	t.Helper()
	n, err := s.Commit(ctx, ledger.Group{Pages: []ledger.Page{c}, SinkToken: token})
	if err != nil {
		t.Fatal(err)
	}
	return n[0]
}

var t0 = time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)

// seen looks one paper up for run.
func seen(t *testing.T, s *state.Store, id, doi, run string) ledger.Delivery {
	t.Helper()
	got, err := s.Lookup(ctx, []ledger.Paper{{ID: id, DOI: doi}}, run)
	if err != nil {
		t.Fatal(err)
	}
	return got[0].Delivery
}

func open(t *testing.T, dir string) *state.Store {
	t.Helper()
	s, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tunedOpen opens stores with sizes of a test's (state.Tuning).
func tunedOpen(tun state.Tuning) func(t *testing.T, dir string) *state.Store {
	return func(t *testing.T, dir string) *state.Store {
		t.Helper()
		s, err := state.OpenTuned(dir, tun)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// merging is the default tuning with the recent log merged at at
// entries, chunk entries a transaction.
func merging(at, chunk int) state.Tuning {
	tun := state.DefaultTuning()
	tun.MergeAt, tun.MergeChunk = at, chunk
	return tun
}

// A commit is durable across reopen: the page is done, its papers known by
// id and by DOI (whatever the case), the sink token stored.
func TestCommitSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	page := state.PageKey{Journal: 501422, Page: 7}
	n := commitPage(t, s, ledger.Page{Key: page, OnPage: 3, RunID: "run-1", At: t0,
		Papers: []ledger.Paper{{ID: "142210977", DOI: "arxiv-2409.01075"}, {ID: "doi:10.1000/x.1", DOI: "10.1000/X.1"}}},
		[]byte(`{"0":{"path":"out.jsonl","offset":42}}`))
	if n != 2 {
		t.Fatalf("Commit: new=%d", n)
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
		if got := seen(t, s, q.id, q.doi, "run-1"); got != ledger.DeliveredThisRun {
			t.Errorf("Lookup(%q, %q) for run-1 = %v, want delivered by run-1", q.id, q.doi, got)
		}
	}
	if got := seen(t, s, "nope", "10.9/none", "run-1"); got != ledger.NeverDelivered {
		t.Error("an unknown paper is known")
	}
	tok, err := s.SinkToken(ctx)
	if err != nil || string(tok) != `{"0":{"path":"out.jsonl","offset":42}}` {
		t.Errorf("sink token = %s %v", tok, err)
	}
}

// Papers delivered again are not new, and keep the run that first
// delivered them (nightly mode asks "known before this run?").
func TestKnownKeepsFirstRun(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	p := []ledger.Paper{{ID: "1", DOI: "10.1/a"}}
	commitPage(t, s, ledger.Page{Key: state.PageKey{Journal: 1, Page: 1}, Papers: p, RunID: "r1", At: t0}, nil)
	n := commitPage(t, s, ledger.Page{Key: state.PageKey{Journal: 1, Page: 2}, Papers: p, RunID: "r2", At: t0}, nil)
	if n != 0 {
		t.Errorf("a known paper counted as new")
	}
	if got := seen(t, s, "1", "", "r1"); got != ledger.DeliveredThisRun {
		t.Errorf("Lookup for r1 = %v: the first run is not kept", got)
	}
	if tok, _ := s.SinkToken(ctx); tok != nil {
		t.Errorf("commits without a token stored one: %s", tok)
	}
}

func TestFailedPages(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	a, b := state.PageKey{Journal: 7, Page: 3}, state.PageKey{Journal: 7, Page: 4}
	for _, f := range []struct {
		k   state.PageKey
		err string
	}{{a, "503 Service Unavailable"}, {a, "timeout"}, {b, "reset"}} {
		if err := s.FailPage(ctx, f.k, "r1", errors.New(f.err), t0); err != nil {
			t.Fatal(err)
		}
	}
	commitPage(t, s, ledger.Page{Key: b, RunID: "r1", At: t0}, nil)
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
	// Once the crawl that holds it has written its snapshot, the error
	// says which run holds it, where, and what to do.
	host, _ := os.Hostname()
	if err := s.WriteSnapshot(state.Run{ID: "20261205T090000Z-abcd", Kind: "nightly", Started: time.Now().Add(-time.Minute), PID: os.Getpid(), Host: host}); err != nil {
		t.Fatal(err)
	}
	_, err := state.Open(dir)
	if want := fmt.Sprintf("the nightly run 20261205T090000Z-abcd holds it (pid %d, started 1m", os.Getpid()); !errors.Is(err, state.ErrLocked) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "wait for it to end") {
		t.Fatalf("second Open = %v, want %q", err, want)
	}
	// A hostile snapshot cannot steer the terminal, nor claim an age.
	if err := s.WriteSnapshot(state.Run{ID: "X\x1b[2J\r\nfake: line", Kind: "nightly\x07", PID: os.Getpid(), Host: host}); err != nil {
		t.Fatal(err)
	}
	if _, err := state.Open(dir); err == nil || strings.ContainsAny(err.Error(), "\x1b\r\n\x07") || strings.Contains(err.Error(), "ago") || !strings.Contains(err.Error(), "run X?[2J??fake: line holds it") {
		t.Fatalf("second Open = %q", err)
	}
}

// Handing the memory map's pages back to the kernel after commits loses
// nothing: readers running meanwhile and after, and the file reopened, see
// every paper committed.
func TestReleasedMapReadsBack(t *testing.T) {
	tun := state.DefaultTuning()
	tun.ReleaseEvery = 0 // release after every commit
	open := tunedOpen(tun)
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
				if got, err := s.Lookup(ctx, []ledger.Paper{{ID: id(0, 0)}}, "run-1"); err != nil || got[0].Delivery != ledger.DeliveredThisRun {
					readErr <- fmt.Errorf("Lookup(%s) = %v, %v during commits", id(0, 0), got, err)
					return
				}
			}
		}()
	}
	for p := range pages {
		c := ledger.Page{Key: state.PageKey{Journal: 9, Page: p + 1}, OnPage: 20, RunID: "run-1", At: t0}
		for i := range 20 {
			c.Papers = append(c.Papers, ledger.Paper{ID: id(p, i), DOI: "10.1/" + id(p, i)})
		}
		if n := commitPage(t, s, c, nil); n != 20 {
			t.Fatalf("page %d: new=%d", p+1, n)
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
				if got := seen(t, s, "other", "10.1/"+id(p, i), "run-1"); got != ledger.DeliveredThisRun {
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
	commit := func(run string, page int, ps ...ledger.Paper) {
		t.Helper()
		commitPage(t, s, ledger.Page{Key: state.PageKey{Journal: 1, Page: page}, Papers: ps, RunID: run, At: t0}, nil)
	}
	commit("run-1", 1, ledger.Paper{ID: "a", DOI: "10.1/A"}, ledger.Paper{ID: "doi:10.1/b", DOI: "10.1/b"})
	commit("run-2", 2, ledger.Paper{ID: "c"})
	got, err := s.Lookup(ctx, []ledger.Paper{
		{ID: "a"},                   // by id, earlier run
		{ID: "a2", DOI: " 10.1/a "}, // by DOI, other case and spaces
		{ID: "b", DOI: "10.1/B"},    // known as "doi:10.1/b" alone
		{ID: "c"},                   // this run
		{ID: "d", DOI: "10.1/d"},    // never
		{ID: "", DOI: ""},           // nothing to go by
	}, "run-2")
	want := []ledger.Delivery{ledger.DeliveredBefore, ledger.DeliveredBefore, ledger.DeliveredBefore, ledger.DeliveredThisRun, ledger.NeverDelivered, ledger.NeverDelivered}
	if err != nil || !slices.Equal(ledger.Deliveries(got), want) {
		t.Errorf("Lookup = %v, %v; want %v", got, err, want)
	}
}

// A runs.json that is not the regular file a crawl writes — a FIFO (it
// would block), a link to /dev/zero (it would never end), one naming no
// process — is refused at once.
func TestReadSnapshotRefusesOddFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, state.SnapshotName)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := state.ReadSnapshot(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("FIFO: %v", err)
	}
	os.Remove(path)
	if err := os.Symlink("/dev/zero", path); err != nil {
		t.Fatal(err)
	}
	if _, err := state.ReadSnapshot(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("link to /dev/zero: %v", err)
	}
	os.Remove(path)
	os.WriteFile(path, []byte(`{}`), 0o644)
	if _, err := state.ReadSnapshot(dir); err == nil || !strings.Contains(err.Error(), "names no run") {
		t.Errorf("empty snapshot: %v", err)
	}
}

// A new state file appears whole or not at all: it is made under a name
// of its own and linked into place, so a run killed while it is made
// leaves no empty crawl.db that the next run would have to refuse. What a
// killed run left under its own name is removed; two first runs at once
// share one file (the second waits for the first's lock).
func TestNewStateFileAppearsWhole(t *testing.T) {
	dir := t.TempDir()
	left := filepath.Join(dir, state.FileName+".new-999999999")
	if err := os.WriteFile(left, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(filepath.Join(dir, state.FileName)); err != nil || info.Size() == 0 {
		t.Fatalf("the new state file: %v, %v", info, err)
	}
	if olds, _ := filepath.Glob(filepath.Join(dir, "*.new-*")); len(olds) != 0 {
		t.Errorf("left behind: %v", olds)
	}
	if m := s.Migrated(); m.From != 0 {
		t.Errorf("a new state file was migrated from format %d: it must be made whole", m.From)
	}
	if _, err := state.Open(dir); !errors.Is(err, state.ErrLocked) {
		t.Errorf("a second first run: %v, want ErrLocked (one file)", err)
	}
	s.Close()
	// Two first runs at once: one has the state, the other is told it is
	// held; neither fails otherwise.
	both := t.TempDir()
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			s, err := state.Open(both)
			if err == nil {
				s.Close()
			}
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil && !errors.Is(err, state.ErrLocked) {
			t.Errorf("two first runs at once: %v", err)
		}
	}
	// An empty file is still refused: it may be a state cut to nothing.
	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, state.FileName), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var d *state.DamagedError
	if _, err := state.Open(empty); !errors.As(err, &d) {
		t.Errorf("an empty state file: %v, want it said damaged", err)
	}
}
