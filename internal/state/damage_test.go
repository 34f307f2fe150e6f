package state_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/internal/state"
)

// A state file with bytes flipped never panics nor faults: opening it or
// reading it is a *DamagedError saying how to rebuild, or it still works
// (the flipped bytes were in free space or in a value). Files of an older
// version (no free-page list kept) too: they are upgraded on open.
func TestDamagedFileIsAnErrorNotAPanic(t *testing.T) {
	if raceEnabled {
		// -race adds pointer checks (checkptr) that make a damaged page a
		// fatal runtime error, which no build of the crawler has: run
		// this test in a build without them.
		cmd := exec.Command("go", "test", "-count=1", "-run", "^TestDamagedFileIsAnErrorNotAPanic$", ".")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("without -race: %v\n%s", err, out)
		}
		return
	}
	src := t.TempDir()
	s := open(t, src)
	var papers []ledger.Paper
	for page := range 100 {
		var ps []ledger.Paper
		for i := range 20 {
			ps = append(ps, ledger.Paper{ID: fmt.Sprintf("p%03d-%02d", page, i), DOI: fmt.Sprintf("10.1/%d.%d", page, i)})
		}
		papers = append(papers, ps...)
		commitPage(t, s, ledger.Page{Key: ledger.PageKey{Journal: 1, Page: page + 1}, Papers: ps, OnPage: 20, RunID: "r1", At: time.Now()}, []byte(`{}`))
	}
	s.Close()
	// A file as an older version wrote it: no free-page list kept.
	old := t.TempDir()
	copyFile(t, filepath.Join(src, state.FileName), filepath.Join(old, state.FileName))
	db, err := bolt.Open(filepath.Join(old, state.FileName), 0o644, &bolt.Options{NoFreelistSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("meta")).Delete([]byte("freelist")) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, from := range []string{src, old} {
		damagedTrials(t, from, papers)
	}
	if c, problems, err := state.Check(src); err != nil || len(problems) != 0 || c.Papers != 2000 || c.Pages != 100 {
		t.Errorf("check of a sound file: %+v %v %v", c, problems, err)
	}
	if s, err := state.Open(old); err != nil {
		t.Errorf("an older file that is sound: %v", err)
	} else {
		s.Close()
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func damagedTrials(t *testing.T, src string, papers []ledger.Paper) {
	good, err := os.ReadFile(filepath.Join(src, state.FileName))
	if err != nil {
		t.Fatal(err)
	}
	damaged := 0
	for trial := range 24 {
		rng := rand.New(rand.NewPCG(uint64(trial), 7))
		bad := append([]byte(nil), good...)
		for range 8 {
			bad[rng.IntN(len(bad))] ^= byte(1 + rng.IntN(255))
		}
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, state.FileName), bad, 0o644)
		err := func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("trial %d: a damaged file panicked: %v", trial, p)
				}
			}()
			s, err := state.Open(dir)
			if err != nil {
				return err
			}
			defer s.Close()
			if _, err := s.Lookup(ctx, papers, "r2"); err != nil {
				return err
			}
			if _, err := s.FailedPages(); err != nil {
				return err
			}
			_, err = s.Commit(ctx, ledger.Group{Pages: []ledger.Page{{Key: ledger.PageKey{Journal: 2, Page: 1}, Papers: papers[:40], RunID: "r2", At: time.Now()}}})
			return err
		}()
		var d *state.DamagedError
		if errors.As(err, &d) {
			damaged++
			if !errors.Is(err, state.ErrDamaged) || !strings.Contains(err.Error(), "crawl state rebuild") {
				t.Errorf("trial %d: %v: want the way to rebuild", trial, err)
			}
		}
	}
	if damaged == 0 {
		t.Errorf("none of 24 damaged files was found damaged; the test does not exercise damage")
	}
	t.Logf("%s: %d of 24 trials found damaged", src, damaged)
}

// A state file that is empty, not a bbolt file at all, or not a regular
// file is an error naming it, never a hang or a fresh state.
func TestStateFileThatIsNotOne(t *testing.T) {
	for name, make := range map[string]func(path string) error{
		"empty":  func(p string) error { return os.WriteFile(p, nil, 0o644) },
		"random": func(p string) error { return os.WriteFile(p, []byte(strings.Repeat("not a bbolt file ", 300)), 0o644) },
		"fifo":   func(p string) error { return syscall.Mkfifo(p, 0o600) },
	} {
		dir := t.TempDir()
		if err := make(filepath.Join(dir, state.FileName)); err != nil {
			t.Fatal(err)
		}
		_, err := state.Open(dir)
		var d *state.DamagedError
		if err == nil || name != "fifo" && !errors.As(err, &d) || name == "fifo" && !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
