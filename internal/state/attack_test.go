package state_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/internal/state"
)

// Two crawls opening one format-1 state at once: one migrates it, the
// other waits and then opens the migrated file (never the old one), and
// the papers both commit are kept.
func TestTwoOpenersOfAFormat1File(t *testing.T) {
	for trial := range 10 {
		dir := copyFormat1(t)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, err := state.Open(dir)
				if err != nil {
					errs[i] = err
					return
				}
				defer s.Close()
				_, errs[i] = s.Commit(ctx, ledger.Group{Pages: []ledger.Page{{Key: ledger.PageKey{Journal: 9, Page: i + 1}, RunID: "r", At: t0,
					Papers: []ledger.Paper{{ID: fmt.Sprintf("opener-%d", i)}}}}})
			}()
		}
		wg.Wait()
		s := open(t, dir)
		for i, err := range errs {
			if err != nil {
				if !errors.Is(err, state.ErrLocked) {
					t.Fatalf("trial %d, opener %d: %v", trial, i, err)
				}
				continue
			}
			if _, known, _ := s.FirstRun(ctx, ledger.Paper{ID: fmt.Sprintf("opener-%d", i)}); !known {
				t.Fatalf("trial %d: the paper opener %d committed is lost", trial, i)
			}
		}
		s.Close()
		checkMigrated(t, dir)
	}
}

// A format-2 file that lost its version is damage, not a format-1 file to
// migrate (which would forget its papers).
func TestMissingFormatIsDamage(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	if _, err := s.AddKnown(ctx, []state.KnownPaper{{Paper: ledger.Paper{ID: "a", DOI: "10.1/a"}, RunID: "r1"}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, _ := bolt.Open(filepath.Join(dir, state.FileName), 0o644, nil)
	db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("meta")).Delete([]byte("format")) })
	db.Close()
	if _, err := state.Open(dir); !errors.Is(err, state.ErrDamaged) || !strings.Contains(err.Error(), "format version is missing") {
		t.Errorf("a format-2 file without its version: %v", err)
	}
}

// Runs without an id (format 1 recorded them) are numbered like others,
// and a paper first seen without its JSON, then with it, keeps its first
// run.
func TestRunsWithoutIDAndFirstSightings(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	commitPage(t, s, ledger.Page{Key: ledger.PageKey{Journal: 1, Page: 1}, RunID: "", At: t0, Papers: []ledger.Paper{{ID: "doi:10.1/x", DOI: "10.1/x"}}}, nil)
	commitPage(t, s, ledger.Page{Key: ledger.PageKey{Journal: 1, Page: 2}, RunID: "r2", At: t0, Papers: []ledger.Paper{{ID: "y", DOI: "10.1/X"}}}, nil)
	if err := s.FailPage(ctx, ledger.PageKey{Journal: 1, Page: 3}, "", nil, t0); err != nil {
		t.Fatal(err)
	}
	for _, p := range []ledger.Paper{{ID: "y", DOI: "10.1/x"}, {ID: "doi:10.1/x"}, {ID: "z", DOI: "10.1/x"}} {
		if run, known, err := s.FirstRun(ctx, p); err != nil || !known || run != "" {
			t.Errorf("%+v: first run %q, %v, %v; want the run without an id", p, run, known, err)
		}
		if got := seen(t, s, p.ID, p.DOI, "r2"); got != ledger.DeliveredBefore {
			t.Errorf("%+v for r2: %v", p, got)
		}
	}
	// An id "doi:X" with another DOI is known by both.
	commitPage(t, s, ledger.Page{Key: ledger.PageKey{Journal: 1, Page: 4}, RunID: "r3", At: t0, Papers: []ledger.Paper{{ID: "doi:10.1/p", DOI: "10.1/q"}}}, nil)
	for _, p := range []ledger.Paper{{ID: "doi:10.1/p"}, {ID: "w", DOI: "10.1/q"}} {
		if _, known, _ := s.FirstRun(ctx, p); !known {
			t.Errorf("%+v: not known", p)
		}
	}
}

// A format-1 page status that is not JSON is damage, and the file is left
// as it was.
func TestMigrationOfADamagedPage(t *testing.T) {
	dir := copyFormat1(t)
	db, _ := bolt.Open(filepath.Join(dir, state.FileName), 0o644, nil)
	db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("pages")).Put([]byte("xxxxxxxxxxxx"), []byte{1, 2}) })
	db.Close()
	before, _ := os.ReadFile(filepath.Join(dir, state.FileName))
	if _, err := state.Open(dir); !errors.Is(err, state.ErrDamaged) {
		t.Errorf("migrating a damaged page: %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, state.FileName)); string(after) != string(before) {
		t.Error("the file was changed")
	}
}

// state check finds entries of the known papers that name a run the file
// never numbered.
func TestCheckFindsBadRunNumbers(t *testing.T) {
	open := tunedOpen(merging(20, 5))
	dir := t.TempDir()
	s := open(t, dir)
	for p := range 5 {
		commitPage(t, s, ledger.Page{Key: ledger.PageKey{Journal: 1, Page: p + 1}, Papers: synthPage(p), RunID: "r1", At: t0}, nil)
	}
	s.Close()
	if _, problems, err := state.Check(dir); err != nil || len(problems) != 0 {
		t.Fatalf("sound file: %v %v", problems, err)
	}
	db, _ := bolt.Open(filepath.Join(dir, state.FileName), 0o644, nil)
	db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("known"))
		k, v := b.Cursor().First()
		v = append([]byte(nil), v...)
		v[8], v[9], v[10] = 0x7f, 0x7f, 0x7f
		return b.Put(append([]byte(nil), k...), v)
	})
	db.Close()
	if _, problems, err := state.Check(dir); err != nil || len(problems) != 1 || !strings.Contains(problems[0].Error(), "which this file never gave") {
		t.Errorf("an entry naming run 0x7f7f7f: %v %v", problems, err)
	}
}
