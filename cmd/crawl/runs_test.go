package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/history"
	"github.com/litcrawl/litcrawl/internal/state"
	"github.com/litcrawl/litcrawl/internal/testsite"
)

// crawl runs lists the history newest first with each run's exit code,
// journals and counts; a run with no end recorded shows as killed; runs
// show prints one run with its failed pages and per-journal counts.
func TestRunsHistory(t *testing.T) {
	t.Parallel()
	site, srv := fixtureSite(t)
	dir := t.TempDir()
	stateDir := filepath.Join(dir, "state")
	// A run killed before its end, recorded by hand as a killed crawl leaves it.
	st, err := state.Open(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	killed := state.Run{ID: "20200101T000000Z-0000dead", Kind: "nightly", Started: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), Journals: []int64{7}, PID: 1}
	if err := st.PutRun(killed); err != nil {
		t.Fatal(err)
	}
	st.Close()

	site.Inject(testsite.PagePath(501422, 2), testsite.Fault{Kind: testsite.Status, Status: 403})
	args := []string{"backfill", "--journal", "501422", "--pages", "1-3", "--base-url", srv.URL, "--delay", "0",
		"--state-dir", stateDir, "-o", filepath.Join(dir, "p.jsonl")}
	if code, _, errs := crawl(t, args...); code != exitcode.Incomplete {
		t.Fatalf("backfill: exit %d: %s", code, errs)
	}

	code, out, errs := crawl(t, "runs", "--state-dir", stateDir, "--json")
	if code != exitcode.OK {
		t.Fatalf("runs --json: exit %d: %s", code, errs)
	}
	var runs []history.RunView
	if err := json.Unmarshal([]byte(out), &runs); err != nil {
		t.Fatalf("runs --json: %v\n%s", err, out)
	}
	if len(runs) != 2 || runs[1].ID != killed.ID {
		t.Fatalf("runs, newest first: %+v", runs)
	}
	r := runs[0]
	if r.Kind != "backfill" || r.Status != history.StatusFinished || r.ExitCode == nil || *r.ExitCode != exitcode.Incomplete ||
		len(r.Journals) != 1 || r.Journals[0] != 501422 || r.Summary == nil || r.Quality != "ok" || r.PID != os.Getpid() {
		t.Errorf("the backfill's entry: %+v", r)
	}
	if ok, failed, _ := r.Pages(); ok != 2 || failed != 1 || r.Summary.PerJournal["501422"].PagesFailed != 1 || r.Summary.FetchSeconds == nil {
		t.Errorf("the backfill's counts: %+v", r.Summary)
	}
	if k := runs[1]; k.Status != history.StatusKilled || k.ExitCode != nil || k.Summary != nil {
		t.Errorf("the killed run's entry: %+v", k)
	}

	code, out, _ = crawl(t, "runs", "--state-dir", stateDir)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	// Numbered as the report numbers them (1 the oldest), with skipped
	// pages beside ok, failed and past the end.
	if code != exitcode.OK || len(lines) != 3 || !strings.HasPrefix(lines[0], "#  RUN") || !strings.Contains(lines[0], "OK/FAILED/SKIPPED/PAST END") ||
		!strings.HasPrefix(lines[1], "2 ") || !strings.Contains(lines[1], "2/1/0/0") || !strings.HasPrefix(lines[2], "1 ") || !strings.Contains(lines[2], "killed") {
		t.Errorf("runs: exit %d:\n%s", code, out)
	}

	code, out, _ = crawl(t, "runs", "show", r.ID[:12], "--state-dir", stateDir)
	for _, want := range []string{"exit 3 (some pages failed, or records quarantined)", "failed pages (1):", "journal 501422 page 2: ", "HTTP 403", "per journal:", "quality      ok"} {
		if !strings.Contains(out, want) {
			t.Errorf("runs show lacks %q (exit %d):\n%s", want, code, out)
		}
	}
	if code, _, errs := crawl(t, "runs", "show", "19990101", "--state-dir", stateDir); code != exitcode.Usage || !strings.Contains(errs, "no such run") {
		t.Errorf("runs show of an unknown run: exit %d: %s", code, errs)
	}
	if code, _, errs := crawl(t, "runs", "--state-dir", filepath.Join(dir, "none")); code != exitcode.Fatal || !strings.Contains(errs, "no crawl has run") {
		t.Errorf("runs without a state: exit %d: %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "none")); err == nil {
		t.Error("runs created the state directory it was asked to read")
	}
}

// While a crawl holds the state, crawl runs does not wait for it: it
// shows the snapshot that crawl wrote when it started, and says so.
func TestRunsWhileACrawlHoldsTheState(t *testing.T) {
	t.Parallel()
	stateDir := t.TempDir()
	st, err := state.Open(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	host, _ := os.Hostname()
	cur := state.Run{ID: "20261203T030000Z-0000beef", Kind: "nightly", Started: time.Now(), Journals: []int64{9}, PID: os.Getpid(), Host: host}
	if err := st.PutRun(cur); err != nil {
		t.Fatal(err)
	}
	if err := st.WriteSnapshot(cur); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	code, out, errs := crawl(t, "runs", "--state-dir", stateDir)
	if code != exitcode.OK || !strings.Contains(errs, "nightly run "+cur.ID) || !strings.Contains(errs, "holds the state") ||
		!strings.Contains(out, cur.ID) || !strings.Contains(out, "running") {
		t.Errorf("runs while a crawl holds the state: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("runs took %v while a crawl held the state", d)
	}
	// Without a snapshot, it says who holds the state, and fails.
	os.Remove(filepath.Join(stateDir, state.SnapshotName))
	if code, _, errs := crawl(t, "runs", "--state-dir", stateDir); code != exitcode.Fatal || !strings.Contains(errs, "in use by another process") {
		t.Errorf("runs while the state is held, no snapshot: exit %d: %s", code, errs)
	}
}

// crawl report writes the HTML report of the history (and of --report
// files), and refuses a missing or directory -o.
func TestReportCommand(t *testing.T) {
	t.Parallel()
	_, srv := fixtureSite(t)
	dir := t.TempDir()
	stateDir := filepath.Join(dir, "state")
	rep := filepath.Join(dir, "run.json")
	if code, _, errs := crawl(t, "backfill", "--journal", "501422", "--pages", "1-2", "--base-url", srv.URL, "--delay", "0",
		"--state-dir", stateDir, "-o", filepath.Join(dir, "p.jsonl"), "--report", rep); code != exitcode.OK {
		t.Fatalf("backfill: exit %d: %s", code, errs)
	}
	out := filepath.Join(dir, "report.html")
	code, _, errs := crawl(t, "report", "--state-dir", stateDir, "-o", out, rep)
	b, err := os.ReadFile(out)
	if code != exitcode.OK || err != nil || !strings.Contains(errs, "report: "+out) || !strings.Contains(string(b), "chart-papers") ||
		!strings.Contains(string(b), "run.json") {
		t.Fatalf("report: exit %d (%v): %s", code, err, errs)
	}
	for _, bad := range []string{"<script", "<link", "<img", "<iframe", `src=`, `href="http`, "@import", "url("} {
		if strings.Contains(string(b), bad) {
			t.Errorf("the report holds %q: it must load nothing from elsewhere", bad)
		}
	}
	// A --report file alone, its state gone.
	out2 := filepath.Join(dir, "alone.html")
	if code, _, errs := crawl(t, "report", "--state-dir", filepath.Join(dir, "gone"), "--out", out2, rep); code != exitcode.OK || !strings.Contains(errs, "the --report files alone") {
		t.Errorf("report from a --report file alone: exit %d: %s", code, errs)
	}
	// Paths a rename would wreck: a FIFO (like /dev/null, not a file), a
	// symbolic link, the state file itself.
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.html")
	if err := os.Symlink(out, link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"report", "--state-dir", stateDir, "-o", fifo}, exitcode.Usage, "is not a regular file"},
		{[]string{"report", "--state-dir", stateDir, "-o", link}, exitcode.Usage, "is a symbolic link"},
		{[]string{"report", "--state-dir", stateDir, "-o", filepath.Join(stateDir, "crawl.db")}, exitcode.Usage, "is inside the state directory"},
		{[]string{"report", "--state-dir", stateDir, "-o", filepath.Join(dir, "file", "r.html")}, exitcode.Usage, "file is not a directory"},
		{[]string{"report", "--state-dir", stateDir, "-o", out, fifo}, exitcode.Fatal, "not a regular file"},
		{[]string{"backfill", "--journal", "501422", "--pages", "1", "--base-url", srv.URL, "--state-dir", stateDir, "-o", filepath.Join(dir, "p.jsonl"), "--report", fifo}, exitcode.Usage, "is not a regular file"},
		{[]string{"runs", "--state-dir", stateDir, "--metrics-file", fifo}, exitcode.Usage, "is not a regular file"},
		{[]string{"runs", "--state-dir", stateDir, "--metrics-file", filepath.Join(stateDir, "crawl.db")}, exitcode.Usage, "is inside the state directory"},
		{[]string{"runs", "--state-dir", stateDir, "--cpuprofile", filepath.Join(stateDir, "crawl.db")}, exitcode.Usage, "is inside the state directory"},
		{[]string{"backfill", "--journal", "501422", "--pages", "1", "--base-url", srv.URL, "--state-dir", stateDir, "-o", filepath.Join(dir, "p.jsonl"), "--report", filepath.Join(dir, "p.jsonl")}, exitcode.Usage, "is the records' JSONL file"},
		{[]string{"backfill", "--journal", "501422", "--pages", "1", "--base-url", srv.URL, "--state-dir", stateDir, "-o", filepath.Join(dir, "p.jsonl"), "--metrics-file", filepath.Join(dir, "p.jsonl")}, exitcode.Usage, "--metrics-file " + filepath.Join(dir, "p.jsonl") + ": is the records' JSONL file"},
		{[]string{"backfill", "--journal", "501422", "--pages", "1", "--base-url", srv.URL, "--state-dir", stateDir, "--sink", "atom:" + filepath.Join(dir, "feeds"), "--cpuprofile", filepath.Join(dir, "feeds", "501422.atom")}, exitcode.Usage, "is in the feeds' directory"},
		{[]string{"backfill", "--journal", "501422", "--pages", "1", "--base-url", srv.URL, "--state-dir", stateDir, "--sink", "jsonl:" + filepath.Join(dir, "p-{date}.jsonl"), "--metrics-file", filepath.Join(dir, "p-2026-12-01.jsonl")}, exitcode.Usage, "is the records' JSONL file"},
		{[]string{"backfill", "--journal", "501422", "--pages", "1", "--base-url", srv.URL, "--state-dir", stateDir, "-o", filepath.Join(dir, "p.jsonl"), "--report", filepath.Join(stateDir, "r.json")}, exitcode.Usage, "is inside the state directory"},
		{[]string{"report", "--state-dir", stateDir}, exitcode.Usage, "-o/--out FILE is required"},
		{[]string{"report", "--state-dir", stateDir, "-o", dir}, exitcode.Usage, "is a directory"},
		{[]string{"report", "--state-dir", stateDir, "-o", out, filepath.Join(dir, "p.jsonl")}, exitcode.Fatal, "not a run report"},
		{[]string{"report", "--state-dir", filepath.Join(dir, "gone"), "-o", out}, exitcode.Fatal, "no crawl has run"},
	} {
		if code, _, errs := crawl(t, tt.args...); code != tt.code || !strings.Contains(errs, tt.want) {
			t.Errorf("crawl %v: exit %d, want %d with %q: %s", tt.args, code, tt.code, tt.want, errs)
		}
	}
	if info, err := os.Lstat(fifo); err != nil || info.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v %v", info, err)
	}
	// A report (--report too) into a directory that does not exist yet:
	// made, as the file sinks make theirs.
	for _, args := range [][]string{
		{"report", "--state-dir", stateDir, "-o", filepath.Join(dir, "new", "r.html")},
		{"backfill", "--journal", "501422", "--pages", "1", "--base-url", srv.URL, "--state-dir", stateDir, "-o", filepath.Join(dir, "p2.jsonl"), "--report", filepath.Join(dir, "runs", "last.json")},
	} {
		if code, _, errs := crawl(t, args...); code != exitcode.OK {
			t.Errorf("crawl %v: exit %d: %s", args, code, errs)
		}
	}
	for _, made := range []string{filepath.Join(dir, "new", "r.html"), filepath.Join(dir, "runs", "last.json")} {
		if _, err := os.Stat(made); err != nil {
			t.Errorf("not written: %v", err)
		}
	}
	if _, err := state.OpenReadOnly(stateDir); err != nil {
		t.Errorf("the state was damaged: %v", err)
	}
}

// An empty history is [] in JSON; a run that fails before it fetches (a
// sink that cannot be opened) is in the history with its error and exit
// code.
func TestRunsEmptyAndEarlyFailure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	stateDir := filepath.Join(dir, "state")
	st, err := state.Open(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if code, out, _ := crawl(t, "runs", "--json", "--state-dir", stateDir); code != exitcode.OK || strings.TrimSpace(out) != "[]" {
		t.Errorf("runs --json of an empty history: exit %d: %q", code, out)
	}
	blocker := filepath.Join(dir, "file")
	os.WriteFile(blocker, nil, 0o644)
	if code, _, errs := crawl(t, "backfill", "--journal", "1", "--pages", "1", "--base-url", "http://127.0.0.1:9", "--state-dir", stateDir,
		"--sink", "jsonl:"+filepath.Join(blocker, "p.jsonl")); code != exitcode.Fatal {
		t.Fatalf("backfill into an unopenable sink: exit %d: %s", code, errs)
	}
	code, out, _ := crawl(t, "runs", "--json", "--state-dir", stateDir)
	var runs []history.RunView
	if err := json.Unmarshal([]byte(out), &runs); code != exitcode.OK || err != nil || len(runs) != 1 {
		t.Fatalf("runs: exit %d, %v: %s", code, err, out)
	}
	if r := runs[0]; r.Status != history.StatusFinished || r.ExitCode == nil || *r.ExitCode != exitcode.Fatal || r.Summary == nil || r.Summary.Error == "" {
		t.Errorf("the failed run's entry: %+v", r)
	}
}

// A state whose branch pages lost a bucket (damage, not an empty history)
// makes crawl runs and crawl report exit 1 with the damage message the
// other commands give; state check refuses a FIFO at once and calls an
// empty file damaged (not "bad file descriptor").
func TestHistoryReadersCallDamageDamage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	stateDir := filepath.Join(dir, "state")
	st, err := state.Open(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	st.PutRun(state.Run{ID: "20261204T000000Z-00000000", Kind: "backfill", Started: time.Now()})
	st.Close()
	db, err := bolt.Open(filepath.Join(stateDir, state.FileName), 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("runs")) })
	db.Close()
	for _, args := range [][]string{{"runs"}, {"runs", "--json"}, {"report", "-o", filepath.Join(dir, "r.html")}} {
		code, _, errs := crawl(t, append(args, "--state-dir", stateDir)...)
		if code != exitcode.Fatal || !strings.Contains(errs, "is damaged") || !strings.Contains(errs, "crawl state rebuild") {
			t.Errorf("%v on a damaged state: exit %d: %s", args, code, errs)
		}
	}
	fifoDir := filepath.Join(dir, "fifo")
	os.MkdirAll(fifoDir, 0o755)
	if err := syscall.Mkfifo(filepath.Join(fifoDir, state.FileName), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := crawl(t, "state", "check", "--state-dir", fifoDir); code != exitcode.Fatal || !strings.Contains(errs, "not a regular file") {
		t.Errorf("state check of a FIFO: exit %d: %s", code, errs)
	}
	emptyDir := filepath.Join(dir, "empty")
	os.MkdirAll(emptyDir, 0o755)
	os.WriteFile(filepath.Join(emptyDir, state.FileName), nil, 0o644)
	if code, _, errs := crawl(t, "state", "check", "--state-dir", emptyDir); code != exitcode.Fatal || !strings.Contains(errs, "empty") || strings.Contains(errs, "bad file descriptor") {
		t.Errorf("state check of an empty file: exit %d: %s", code, errs)
	}
}
