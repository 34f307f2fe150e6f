package state_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/internal/state"
)

func printN(n int) ledger.Print {
	var p ledger.Print
	p[0], p[1], p[12] = byte(n>>8), byte(n), 0x5a
	return p
}

// Prints outlive merges: with a merge every few papers, new revisions
// written before, across and after merges are what a look-up finds, the
// first run of each paper stays, and a reopen reads them back; the file
// checks sound and counts a key a paper and its DOI.
func TestPrintsAcrossMerges(t *testing.T) {
	dir := t.TempDir()
	open := tunedOpen(merging(40, 7))
	s := open(t, dir)
	paper := func(i int) ledger.Paper {
		return ledger.Paper{ID: fmt.Sprint(1000 + i), DOI: fmt.Sprintf("10.1/%d", i)}
	}
	const n = 60
	for rev := 1; rev <= 3; rev++ {
		for page := range n / 10 {
			var ps []ledger.Paper
			for i := page * 10; i < page*10+10; i++ {
				p := paper(i)
				if rev == 1 || i%rev == 0 {
					p.Print = printN(rev*1000 + i)
				}
				ps = append(ps, p)
			}
			commitPage(t, s, ledger.Page{Key: ledger.PageKey{Journal: 1, Page: page + 1}, Papers: ps, RunID: fmt.Sprint("run-", rev), At: t0}, nil)
		}
	}
	check := func(s *state.Store) {
		t.Helper()
		var ps []ledger.Paper
		for i := range n {
			ps = append(ps, paper(i))
		}
		got, err := s.Lookup(ctx, ps, "run-4")
		if err != nil {
			t.Fatal(err)
		}
		for i, g := range got {
			rev := 1
			for r := 2; r <= 3; r++ {
				if i%r == 0 {
					rev = r
				}
			}
			if g.Delivery != ledger.DeliveredBefore || g.Print != printN(rev*1000+i) {
				t.Fatalf("paper %d: %v, print %x; want revision %d's", i, g.Delivery, g.Print, rev)
			}
		}
		if r, ok, err := s.FirstRun(ctx, paper(6)); err != nil || !ok || r != "run-1" {
			t.Errorf("first run of a revised paper: %q %v %v", r, ok, err)
		}
	}
	check(s)
	s.Close()
	s = open(t, dir)
	check(s)
	s.Close()
	c, problems, err := state.Check(dir)
	if err != nil || len(problems) > 0 || c.Papers != n || c.Keys != 2*n {
		t.Errorf("check: %+v %v %v", c, problems, err)
	}
}

// A format-2 file is upgraded in place: its papers stay known, without a
// print until a commit records one, and the file is format 3 after.
func TestFormat2UpgradedInPlace(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	commitPage(t, s, ledger.Page{Key: ledger.PageKey{Journal: 1, Page: 1}, RunID: "r1", At: t0,
		Papers: []ledger.Paper{{ID: "a", DOI: "10.1/a"}, {ID: "b"}}}, nil)
	s.Close()
	// Make it what format 2 wrote: no prints' buckets, format 2.
	db, err := bolt.Open(filepath.Join(dir, state.FileName), 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range []string{"prints", "recent_prints"} {
			if err := tx.DeleteBucket([]byte(b)); err != nil {
				return err
			}
		}
		return tx.Bucket([]byte("meta")).Put([]byte("format"), []byte("2"))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if c, problems, err := state.Check(dir); err != nil || len(problems) > 0 || c.Format != 2 {
		t.Fatalf("check of the format-2 file: %+v %v %v", c, problems, err)
	}
	s = open(t, dir)
	got, err := s.Lookup(ctx, []ledger.Paper{{ID: "a"}, {ID: "x", DOI: "10.1/A"}, {ID: "b"}}, "r2")
	known := ledger.Seen{Delivery: ledger.DeliveredBefore, ByID: true}
	if err != nil || got[0] != known || got[1] != (ledger.Seen{Delivery: ledger.DeliveredBefore}) || got[2] != known {
		t.Fatalf("after the upgrade: %v %v", got, err)
	}
	if n := commitPage(t, s, ledger.Page{Key: ledger.PageKey{Journal: 1, Page: 1}, RunID: "r2", At: t0,
		Papers: []ledger.Paper{{ID: "a", DOI: "10.1/a", Print: printN(7)}}}, nil); n != 0 {
		t.Errorf("a known paper counted new: %d", n)
	}
	got, err = s.Lookup(ctx, []ledger.Paper{{ID: "a"}}, "r3")
	if err != nil || got[0].Print != printN(7) {
		t.Errorf("the print recorded after the upgrade: %v %v", got, err)
	}
	if r, _, _ := s.FirstRun(ctx, ledger.Paper{ID: "a"}); r != "r1" {
		t.Errorf("first run %q after a print was recorded", r)
	}
	s.Close()
	if c, problems, err := state.Check(dir); err != nil || len(problems) > 0 || c.Format != state.Format || c.Papers != 2 {
		t.Errorf("check after the upgrade: %+v %v %v", c, problems, err)
	}
}

// A format-3 file that lost a prints' bucket, or whose prints name a run
// the file never numbered, is damage: Open refuses it (nothing would be
// known by its primary key, and every paper delivered again) and Check
// names it.
func TestDamagedPrintsRefused(t *testing.T) {
	written := func(t *testing.T) string {
		dir := t.TempDir()
		s := open(t, dir)
		commitPage(t, s, ledger.Page{Key: ledger.PageKey{Journal: 1, Page: 1}, RunID: "r1", At: t0,
			Papers: []ledger.Paper{{ID: "a", DOI: "10.1/a", Print: printN(1)}, {ID: "b", Print: printN(2)}}}, nil)
		s.Close()
		return dir
	}
	damage := func(t *testing.T, dir string, fn func(tx *bolt.Tx) error) {
		db, err := bolt.Open(filepath.Join(dir, state.FileName), 0o644, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Update(fn); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
	for name, fn := range map[string]func(tx *bolt.Tx) error{
		"prints bucket deleted":        func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("prints")) },
		"recent_prints bucket deleted": func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("recent_prints")) },
		"a print naming run 999": func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte("recent_prints"))
			return b.ForEach(func(k, v []byte) error {
				w := append([]byte(nil), v...)
				w[8], w[9], w[10] = 0, 3, 0xe7 // run 999
				return b.Put(k, w)
			})
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := written(t)
			damage(t, dir, fn)
			var d *state.DamagedError
			if s, err := state.Open(dir); !errors.As(err, &d) {
				if s != nil {
					s.Close()
				}
				t.Fatalf("Open: %v; want damage", err)
			}
			if _, problems, err := state.Check(dir); err == nil && len(problems) == 0 {
				t.Errorf("check: sound")
			}
		})
	}
}
