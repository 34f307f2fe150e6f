package main

import (
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/state"
	"github.com/litcrawl/litcrawl/internal/testsite"
)

// A damaged state file: the crawl stops with exit 1 and says how to
// rebuild (no panic, not the usage code); state check, in a process of its
// own, says damaged; state rebuild builds a new state from the delivered
// JSONL with which a rerun delivers nothing twice.
func TestDamagedStateCheckAndRebuild(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	site := testsite.New()
	site.SynthJournal(1001, 30, 20)
	srv := httptest.NewServer(site)
	defer srv.Close()
	dir := t.TempDir()
	stateDir, out := filepath.Join(dir, "s"), filepath.Join(dir, "p.jsonl")
	crawlBin := func(args ...string) (int, string) {
		cmd := exec.Command(bin, args...)
		b, _ := cmd.CombinedOutput()
		return cmd.ProcessState.ExitCode(), string(b)
	}
	backfill := func(state, pages string) (int, string) {
		return crawlBin("backfill", "--journal", "1001", "--pages", pages, "--base-url", srv.URL, "--delay", "0",
			"--state-dir", state, "--sink", "jsonl:"+out, "--no-resume")
	}
	if code, msg := backfill(stateDir, "1-25"); code != exitcode.OK {
		t.Fatalf("backfill: exit %d: %s", code, msg)
	}
	if code, msg := crawlBin("state", "check", "--state-dir", stateDir); code != exitcode.OK || !strings.Contains(msg, "sound, format 3: 500 papers (1000 ids and DOIs)") {
		t.Fatalf("check of a sound state: exit %d: %s", code, msg)
	}
	// A delivered paper is found by its id and by its DOI, with its run;
	// another is not known.
	for _, args := range [][]string{{"--id", testsite.SynthID(1001, 3, 4)}, {"--doi", "10.9999/SYNTH." + testsite.SynthID(1001, 25, 19)}} {
		code, msg := crawlBin(append([]string{"state", "find", "--state-dir", stateDir}, args...)...)
		if code != exitcode.OK || !strings.HasPrefix(msg, "known: first delivered by run 2") {
			t.Errorf("state find %v: exit %d: %s", args, code, msg)
		}
	}
	if code, msg := crawlBin("state", "find", "--state-dir", stateDir, "--id", testsite.SynthID(1001, 26, 0)); code != 3 || !strings.HasPrefix(msg, "not known: never delivered") {
		t.Errorf("state find of a paper never delivered: exit %d: %s", code, msg)
	}
	if code, msg := crawlBin("state", "find", "--state-dir", stateDir); code != exitcode.Usage || !strings.Contains(msg, "--id ID, --doi DOI or both") {
		t.Errorf("state find without a paper: exit %d: %s", code, msg)
	}
	// Damage every page but the two meta pages and the root pages: each
	// 64th byte flipped.
	db := filepath.Join(stateDir, state.FileName)
	b, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	for i := 4 * 4096; i < len(b); i += 64 {
		b[i] ^= 0x5a
	}
	os.WriteFile(db, b, 0o644)

	code, msg := backfill(stateDir, "1-26")
	if code != exitcode.Fatal || !strings.Contains(msg, "damaged") || !strings.Contains(msg, "crawl state rebuild") || strings.Contains(msg, "goroutine") {
		t.Fatalf("a crawl on a damaged state: exit %d: %s; want exit 1 saying how to rebuild", code, msg)
	}
	if code, msg := crawlBin("state", "check", "--state-dir", stateDir); code != exitcode.Fatal || !strings.Contains(msg, "damaged") {
		t.Errorf("check of a damaged state: exit %d: %s", code, msg)
	}

	rebuilt := filepath.Join(dir, "s2")
	if code, msg := crawlBin("state", "rebuild", "--state-dir", rebuilt, "--from", "jsonl:"+out); code != exitcode.OK || !strings.Contains(msg, "500 known papers") {
		t.Fatalf("rebuild: exit %d: %s", code, msg)
	}
	if code, msg := crawlBin("state", "rebuild", "--state-dir", rebuilt, "--from", "jsonl:"+out); code != exitcode.Usage || !strings.Contains(msg, "already holds a state") {
		t.Errorf("rebuild into a state: exit %d: %s", code, msg)
	}
	if code, msg := backfill(rebuilt, "1-26"); code != exitcode.OK || !strings.Contains(msg, "papers: 20 new, 0 updated, 500 known") {
		t.Fatalf("backfill over the rebuilt state: exit %d: %s", code, msg)
	}
	if ids := papersIn(t, out); len(ids) != 520 {
		t.Errorf("%d papers delivered in all, want 520 once each", len(ids))
	}
}
