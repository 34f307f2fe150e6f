package state_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/internal/state"
	"github.com/litcrawl/litcrawl/parser"
	"github.com/litcrawl/litcrawl/record"
)

// format1Dir is a small state file written by the last version of format
// 1 (see its README), with the papers it knows.
const format1Dir = "../../fixtures/state/format1"

type knownPaper struct{ id, doi, run string }

func format1Papers(t *testing.T) []knownPaper {
	t.Helper()
	f, err := os.Open(filepath.Join(format1Dir, "papers.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []knownPaper
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "#") {
			continue
		}
		fs := strings.Split(sc.Text(), "\t")
		if len(fs) != 3 {
			t.Fatalf("papers.tsv: %q", sc.Text())
		}
		out = append(out, knownPaper{fs[0], fs[1], fs[2]})
	}
	if len(out) < 200 {
		t.Fatalf("papers.tsv: only %d papers", len(out))
	}
	return out
}

// copyFormat1 copies the format-1 fixture into a new state directory.
func copyFormat1(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	copyFile(t, filepath.Join(format1Dir, state.FileName), filepath.Join(dir, state.FileName))
	return dir
}

// checkMigrated asserts that dir holds the fixture's content in format 2:
// every paper found by its id alone and by its DOI alone, with the run
// that first delivered it, and the pages, runs, token, writer and marks.
func checkMigrated(t *testing.T, dir string) {
	t.Helper()
	s := open(t, dir)
	defer s.Close()
	for _, p := range format1Papers(t) {
		ways := []ledger.Paper{{ID: p.id, DOI: p.doi}, {ID: p.id}}
		if p.doi != "" {
			ways = append(ways, ledger.Paper{ID: "another-id", DOI: p.doi}, ledger.Paper{ID: "doi:" + ledger.DOIKey(p.doi)})
		}
		for _, w := range ways {
			run, known, err := s.FirstRun(ctx, w)
			if err != nil || !known || run != p.run {
				t.Fatalf("paper %+v: known %v, first run %q (want %q), %v", w, known, run, p.run, err)
			}
			if got := seen(t, s, w.ID, w.DOI, "20261201T020000Z-00000000"); got != ledger.DeliveredBefore {
				t.Fatalf("paper %+v: %v", w, got)
			}
		}
	}
	// The last run of the history delivered nothing: as this run, every
	// paper was delivered before; as the backfill, those it delivered are
	// this run's.
	if got := seen(t, s, "10010000500", "", "20261101T020000Z-1a2b3c4d"); got != ledger.DeliveredThisRun {
		t.Errorf("a paper of the backfill, looked up by the backfill: %v", got)
	}
	if got := seen(t, s, "10010000100", "", "20261101T020000Z-1a2b3c4d"); got != ledger.DeliveredBefore {
		t.Errorf("a paper of the nightly, looked up by the backfill: %v", got)
	}
	for _, p := range []ledger.Paper{{ID: "10010000700"}, {ID: "x", DOI: "10.9999/synth.10010000700"}, {ID: "doi:10.9999/none"}} {
		if _, known, err := s.FirstRun(ctx, p); known || err != nil {
			t.Errorf("a paper never delivered, %+v: known %v, %v", p, known, err)
		}
	}
	done, err := s.PageDone(ctx, ledger.PageKey{Journal: 1002, Page: 6})
	if err != nil || !done {
		t.Errorf("page 1002/6 done: %v %v", done, err)
	}
	st, ok, err := s.Page(ledger.PageKey{Journal: 1001, Page: 1})
	if err != nil || !ok || st.State != state.PageDone || st.Papers != 20 || st.RunID != "20261102T020000Z-5e6f7a8b" || st.Attempts != 1 ||
		!st.UpdatedAt.Equal(time.Date(2026, 11, 1, 2, 1, 0, 0, time.UTC)) {
		t.Errorf("page 1001/1: %+v %v %v", st, ok, err)
	}
	failed, err := s.FailedPages()
	if err != nil || !slices.Equal(failed, []ledger.PageKey{{Journal: 1002, Page: 7}}) {
		t.Errorf("failed pages: %v %v", failed, err)
	}
	if st, _, _ := s.Page(ledger.PageKey{Journal: 1002, Page: 7}); st.LastError != "HTTP 503 after 4 attempts" || st.RunID != "20261101T020000Z-1a2b3c4d" {
		t.Errorf("failed page: %+v", st)
	}
	runs, err := s.Runs()
	if err != nil || len(runs) != 4 || runs[0].ID != "20261101T020000Z-1a2b3c4d" || runs[0].Host != "crawler-1" ||
		string(runs[0].Summary) != `{"papers":{"new":230}}` || runs[2].Kind != "nightly" || !runs[2].Finished.IsZero() || runs[3].Kind != "rebuild" {
		t.Errorf("run history: %+v %v", runs, err)
	}
	if tok, err := s.SinkToken(ctx); err != nil || !strings.HasPrefix(string(tok), `{"jsonl":{"out/papers.jsonl":`) {
		t.Errorf("sink token: %q %v", tok, err)
	}
	if s.WriterID() != "026a5766-58a1-4b21-a166-e322449420cb" {
		t.Errorf("writer id: %q", s.WriterID())
	}
	// The walk marks of an earlier version (a JSON array) read as a walk
	// state with those marks and no head: the next walk ends their gaps
	// by the known-pages rule.
	ws, err := s.WalkState(ctx, 1001)
	if err != nil || len(ws.Marks) != 1 || ws.Marks[0].Page != 3 || len(ws.Marks[0].Papers) != 2 || ws.Head != nil || ws.Marks[0].End != nil {
		t.Errorf("walk marks: %+v %v", ws, err)
	}
	if _, err := os.Stat(filepath.Join(dir, state.FileName+state.MigrateSuffix)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the migration's file is left behind: %v", err)
	}
}

// A format-1 file is migrated when opened, and then finds every paper it
// knew, by id and by DOI, with the run that first delivered it.
func TestMigrateFormat1(t *testing.T) {
	dir := copyFormat1(t)
	// Read-only, a format-1 file shows its history as it is.
	ro, err := state.OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	if runs, err := ro.Runs(); err != nil || len(runs) != 4 {
		t.Errorf("format-1 history read-only: %d runs, %v", len(runs), err)
	}
	// Read-only, its papers are found as format 1 found them.
	for _, p := range format1Papers(t) {
		for _, w := range []ledger.Paper{{ID: p.id}, {ID: "x", DOI: strings.ToUpper(p.doi)}} {
			if w.ID == "x" && p.doi == "" {
				continue
			}
			if run, known, err := ro.FirstRun(ctx, w); err != nil || !known || run != p.run {
				t.Fatalf("format 1, read-only, %+v: %v %q %v", w, known, run, err)
			}
		}
	}
	if _, known, err := ro.FirstRun(ctx, ledger.Paper{ID: "nope", DOI: "10.1/nope"}); known || err != nil {
		t.Errorf("format 1, read-only, a paper never delivered: %v %v", known, err)
	}
	ro.Close()
	c, problems, err := state.Check(dir)
	if err != nil || len(problems) > 0 || c.Format != 1 || c.Papers != 255 || c.DOIs != 241 {
		t.Errorf("check of the format-1 file: %+v %v %v", c, problems, err)
	}
	s := open(t, dir)
	if m := s.Migrated(); m.From != 1 || m.BytesBefore != 131072 || m.BytesAfter <= 0 || m.BytesAfter >= m.BytesBefore {
		t.Errorf("what Open migrated: %+v", m)
	}
	s.Close()
	checkMigrated(t, dir)
	c, problems, err = state.Check(dir)
	if err != nil || len(problems) > 0 || c.Format != state.Format || c.Pages != 13 || c.Runs != 4 || !c.SinkToken || c.Papers != 255 || c.Keys != 255+241-10 { // "doi:…" ids are known by their DOI alone
		t.Errorf("check of the migrated file: %+v %v %v", c, problems, err)
	}
	// Reopened: the current format already, nothing to do; still every paper.
	checkMigrated(t, dir)
	// A crawl goes on from it: a new paper is new, a known one is not.
	s = open(t, dir)
	if m := s.Migrated(); m.From != 0 {
		t.Errorf("migrated twice: %+v", m)
	}
	n := commitPage(t, s, ledger.Page{Key: ledger.PageKey{Journal: 1001, Page: 7}, RunID: "20261205T020000Z-01020304", At: t0,
		Papers: []ledger.Paper{{ID: "10010000700", DOI: "10.9999/x"}, {ID: "10010000100", DOI: "10.9999/Synth.10010000100"}}}, nil)
	s.Close()
	if n != 1 {
		t.Errorf("after migration, %d new papers of 1", n)
	}
}

// A file of a later format is refused, by name, and left as it is.
func TestNewerFormatRefused(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	commitPage(t, s, ledger.Page{Key: ledger.PageKey{Journal: 1, Page: 1}, Papers: []ledger.Paper{{ID: "a", DOI: "10.1/a"}}, RunID: "r1", At: t0}, nil)
	s.Close()
	path := filepath.Join(dir, state.FileName)
	db, err := bolt.Open(path, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("meta")).Put([]byte("format"), []byte("4")) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before, _ := os.ReadFile(path)
	for name, open := range map[string]func(string) (*state.Store, error){"Open": state.Open, "OpenReadOnly": state.OpenReadOnly} {
		s, err := open(dir)
		var fe *state.FormatError
		if !errors.As(err, &fe) || fe.Found != 4 || !strings.Contains(err.Error(), "format 4, written by a newer version") ||
			!strings.Contains(err.Error(), "reads formats 1 to 3") {
			t.Errorf("%s of a format-4 file: %v", name, err)
		}
		if s != nil {
			s.Close()
		}
	}
	if _, _, err := state.Check(dir); !errors.As(err, new(*state.FormatError)) {
		t.Errorf("check of a format-4 file: %v", err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("the refused file was changed")
	}
	// A version no one wrote is damage.
	db, _ = bolt.Open(path, 0o644, nil)
	db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("meta")).Put([]byte("format"), []byte("two")) })
	db.Close()
	if _, err := state.Open(dir); !errors.Is(err, state.ErrDamaged) {
		t.Errorf("format %q: %v", "two", err)
	}
	if _, problems, err := state.Check(dir); err != nil || len(problems) != 1 || !strings.Contains(problems[0].Error(), `format version "two"`) {
		t.Errorf("check of format %q: %v %v", "two", problems, err)
	}
}

// Killed (SIGKILL) at any step of a migration, the state opens, migrates
// if it must, and finds every paper.
func TestMigrateKilled(t *testing.T) {
	if dir := os.Getenv("LITCRAWL_MIGRATE_CHILD"); dir != "" {
		stop := os.Getenv("LITCRAWL_MIGRATE_STOP")
		n := 0
		tun := state.DefaultTuning()
		tun.MigrateBatch = 40
		tun.Hook = func(step string) {
			n++
			if fmt.Sprintf("%s#%d", step, n) == stop || step == stop {
				fmt.Println("stopped at", step)
				select {} // until killed
			}
		}
		s, err := state.OpenTuned(dir, tun)
		if err != nil {
			fmt.Println("open:", err)
			os.Exit(1)
		}
		s.Close()
		fmt.Println("not stopped")
		os.Exit(0)
	}
	// With 40 keys a transaction, the fixture's copy takes about ten
	// transactions: killed after the first, in the middle, when the new
	// file is complete, and once it replaced the old one.
	for _, stop := range []string{"batch#1", "batch#5", "written", "renamed"} {
		t.Run(stop, func(t *testing.T) {
			dir := copyFormat1(t)
			cmd := exec.Command(os.Args[0], "-test.run=^TestMigrateKilled$")
			cmd.Env = append(os.Environ(), "LITCRAWL_MIGRATE_CHILD="+dir, "LITCRAWL_MIGRATE_STOP="+stop)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, _ := bufio.NewReader(out).ReadString('\n')
			if line != "stopped at "+strings.Split(stop, "#")[0]+"\n" {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("the migrating process said %q", line)
			}
			cmd.Process.Kill() // SIGKILL
			io.Copy(io.Discard, out)
			cmd.Wait()
			_, err = os.Stat(filepath.Join(dir, state.FileName+state.MigrateSuffix))
			if left := err == nil; left != (stop != "renamed") {
				t.Errorf("killed at %s: the migration's file left: %v", stop, left)
			}
			checkMigrated(t, dir)
		})
	}
}

// A state written by the last build of record schema 2 knows the papers
// of every fixture page as this build parses them: arXiv papers now
// carry arXiv's DOI (10.48550/arXiv.…) where that build gave the site's
// arxiv-…, and papers known by their DOI alone keep their "doi:" id, so a
// nightly after the upgrade delivers none of them again.
func TestSchema2StateKnowsSchema3Papers(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, filepath.Join("../../fixtures/state/schema2", state.FileName), filepath.Join(dir, state.FileName))
	tsv, err := os.ReadFile("../../fixtures/state/schema2/papers.tsv")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]bool{}
	arxiv := 0
	for _, l := range strings.Split(strings.TrimSpace(string(tsv)), "\n")[1:] {
		f := strings.Split(l, "\t")
		files[f[0]] = true
		if strings.HasPrefix(f[2], "arxiv-") {
			arxiv++
		}
	}
	if len(files) < 30 || arxiv < 40 {
		t.Fatalf("papers.tsv: %d files, %d arXiv papers", len(files), arxiv)
	}
	s := open(t, dir)
	defer s.Close()
	checked, moved := 0, 0
	for f := range files {
		b, err := os.ReadFile(filepath.Join("../../fixtures", f))
		if err != nil {
			t.Fatal(err)
		}
		page, err := parser.Parse(b, parser.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Records {
			if strings.HasPrefix(r.DOI, "10.48550/") {
				moved++
			}
			if got := seen(t, s, r.ID, r.DOI, "20261204T020000Z-00000000"); got != ledger.DeliveredBefore {
				t.Errorf("%s: paper %s (doi %q) is %v to the schema-2 state", f, r.ID, r.DOI, got)
			}
			// By its DOI alone, as a block without JSON gives it.
			if r.DOI != "" {
				if got := seen(t, s, record.DOIID(r.DOI), r.DOI, "20261204T020000Z-00000000"); got != ledger.DeliveredBefore {
					t.Errorf("%s: paper doi %q by DOI alone is %v", f, r.DOI, got)
				}
			}
			checked++
		}
	}
	if moved < 40 {
		t.Errorf("only %d of %d records carry arXiv's DOI", moved, checked)
	}
}

// A walk state read back is held to the bounds of one from outside: a
// state beyond them (written by someone else, or damaged) is damage,
// named with its journal, never walked on.
func TestWalkStateReadBackIsChecked(t *testing.T) {
	s, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	many := make([]ledger.WalkMark, ledger.MaxMarks+1)
	for i := range many {
		many[i] = ledger.WalkMark{Page: i + 1, Papers: []string{"p"}}
	}
	for name, ws := range map[string]ledger.WalkState{
		"too many marks": {Marks: many},
		"ESC in a mark":  {Marks: []ledger.WalkMark{{Page: 2, Papers: []string{"p\x1b]0;x\x07"}}}},
		"page 0":         {Marks: []ledger.WalkMark{{Page: 0, Papers: []string{"p"}}}},
		"audit -1":       {Audit: ledger.Audit{Next: -1}},
	} {
		if err := s.SetWalkState(ctx, 9, ws); err != nil {
			t.Fatal(err)
		}
		var d *state.DamagedError
		if _, err := s.WalkState(ctx, 9); !errors.As(err, &d) || !strings.Contains(err.Error(), "journal 9") {
			t.Errorf("%s: read back as %v", name, err)
		}
	}
}
