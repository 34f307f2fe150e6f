package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/litcrawl/litcrawl/internal/archive"
	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/feedtest"
	"github.com/litcrawl/litcrawl/internal/pgtest"
	"github.com/litcrawl/litcrawl/internal/testsite"
)

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// TestMain removes the binary the tests built and stops the PostgreSQL
// server they shared.
func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// buildBinary builds cmd/crawl once per test run.
func buildBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "crawl-bin"); binErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, "crawl"), ".")
		cmd.Stderr = os.Stderr
		binErr = cmd.Run()
	})
	if binErr != nil {
		t.Fatalf("go build: %v", binErr)
	}
	return filepath.Join(binDir, "crawl")
}

// papersIn reads a JSONL file into id → title, failing on a torn or
// repeated record.
func papersIn(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for i, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var r struct{ ID, Title string }
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("line %d is not a record: %v", i+1, err)
		}
		if _, dup := out[r.ID]; dup {
			t.Fatalf("paper %s is in the file twice", r.ID)
		}
		out[r.ID] = r.Title
	}
	return out
}

// The kill -9 test: the built binary backfills a 30-page site and is
// killed at several moments; after a final run the JSONL equals a clean
// run's: every paper once, nothing missing.
func TestBackfillSurvivesKill9(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	site := testsite.New()
	site.SynthJournal(9001, 30, 20)
	srv := httptest.NewServer(site)
	defer srv.Close()

	// runTo runs a backfill into dir. With gate > 0 the run is killed
	// while it is provably under way: page gate is held open at the site
	// (the run cannot end before it is answered) and at least minCommits
	// other pages were committed by this run. A kill timed by log lines
	// alone could land after a fast run had already finished.
	hold := make(chan struct{}) // closed before the final run: gates left unconsumed let it through
	runTo := func(dir string, gate, minCommits int) {
		t.Helper()
		arrived := make(chan struct{})
		if gate > 0 {
			site.Inject(testsite.PagePath(9001, gate), testsite.Fault{Kind: testsite.Gate, Arrived: arrived, Open: hold})
		}
		cmd := exec.Command(bin, "backfill", "--journal", "9001", "--pages", "1-", "--base-url", srv.URL,
			"--delay", "0", "--concurrency", "3", "--config", filepath.Join(repoRoot, "config.yaml"),
			"--state-dir", filepath.Join(dir, "state"), "--sink", "jsonl:"+filepath.Join(dir, "papers.jsonl"), "--sink", "atom:"+filepath.Join(dir, "feeds")+"?keep=250",
			"--archive", filepath.Join(dir, "warc"))
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		commits, eof := make(chan struct{}, 64), make(chan struct{})
		go func() {
			defer close(eof)
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				if strings.Contains(sc.Text(), "page committed") {
					commits <- struct{}{}
				}
			}
		}()
		if gate > 0 {
			n := 0
			for waiting := arrived; waiting != nil || n < minCommits; {
				select {
				case <-waiting:
					waiting = nil
				case <-commits:
					n++
				case <-eof:
					cmd.Wait()
					t.Fatalf("the run ended before it was killed (page %d reached: %v, %d commits)", gate, waiting == nil, n)
				}
			}
			cmd.Process.Kill() // SIGKILL: no cleanup of any kind
		}
		go func() { // the pipe must be drained for the process to go on
			for range commits {
			}
		}()
		<-eof
		close(commits)
		err = cmd.Wait()
		if gate == 0 && err != nil {
			t.Fatalf("final run: %v", err)
		}
	}

	clean := t.TempDir()
	runTo(clean, 0, 0)
	want := papersIn(t, filepath.Join(clean, "papers.jsonl"))
	if len(want) != 600 {
		t.Fatalf("clean run: %d papers, want 600", len(want))
	}

	killed := t.TempDir()
	// Each kill lands with a page in flight and others committed: held
	// on pages 5, 12 and 20, more than the concurrency apart, so that
	// each is still to do when its run starts.
	for _, gate := range []int{5, 12, 20} {
		runTo(killed, gate, 2)
	}
	close(hold)
	runTo(killed, 0, 0)
	got := papersIn(t, filepath.Join(killed, "papers.jsonl"))
	if len(got) != len(want) {
		t.Fatalf("after kills: %d papers, a clean run has %d", len(got), len(want))
	}
	var missing []string
	for id, title := range want {
		if got[id] != title {
			missing = append(missing, id)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Fatalf("%d papers differ or are missing, e.g. %s", len(missing), fmt.Sprint(missing[:min(5, len(missing))]))
	}
	// The feed after the kills is the feed of a run without them: the
	// same entries in the same order, and feedparser reads it.
	cleanFeed, killedFeed := filepath.Join(clean, "feeds", "9001.atom"), filepath.Join(killed, "feeds", "9001.atom")
	if c, k := feedtest.Read(t, cleanFeed), feedtest.Read(t, killedFeed); len(c.Entries) != 250 || !slices.Equal(c.IDs(), k.IDs()) {
		t.Fatalf("the feed after kills holds %d entries, a clean run's %d; same order: %v", len(k.Entries), len(c.Entries), slices.Equal(c.IDs(), k.IDs()))
	}
	feedtest.Feedparser(t, cleanFeed, killedFeed)
	// The history counts what the killed runs delivered: their counts are
	// recovered from the state, so the runs' new papers add up to the
	// papers in the sink, in `crawl runs --json` and in the report.
	out, err := exec.Command(bin, "runs", "--json", "--limit", "0", "--config", filepath.Join(repoRoot, "config.yaml"),
		"--state-dir", filepath.Join(killed, "state")).Output()
	if err != nil {
		t.Fatalf("crawl runs: %v", err)
	}
	var runs []struct {
		Status    string
		Recovered bool
		Summary   *struct{ Papers map[string]int64 }
	}
	if err := json.Unmarshal(out, &runs); err != nil {
		t.Fatal(err)
	}
	var total int64
	recovered := 0
	for _, r := range runs {
		if r.Status == "killed" {
			if !r.Recovered || r.Summary == nil {
				t.Fatalf("a killed run has no recovered counts: %+v", r)
			}
			recovered++
		}
		if r.Summary != nil {
			total += r.Summary.Papers["new"]
		}
	}
	if recovered != 3 || total != int64(len(got)) {
		t.Fatalf("history: %d killed runs recovered (want 3), %d new papers in all; the sink holds %d", recovered, total, len(got))
	}
	html := filepath.Join(killed, "report.html")
	if out, err := exec.Command(bin, "report", "-o", html, "--config", filepath.Join(repoRoot, "config.yaml"),
		"--state-dir", filepath.Join(killed, "state")).CombinedOutput(); err != nil {
		t.Fatalf("crawl report: %v\n%s", err, out)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	card := regexp.MustCompile(`<div class="k">All runs</div><div class="v">(\d+)</div>`).FindSubmatch(page)
	if card == nil || string(card[1]) != fmt.Sprint(len(got)) {
		t.Fatalf("the report's total of new papers is %q; the sink holds %d", card, len(got))
	}
	// `crawl runs` shows what it does not know of a killed run as such.
	if out, err := exec.Command(bin, "runs", "--limit", "0", "--config", filepath.Join(repoRoot, "config.yaml"),
		"--state-dir", filepath.Join(killed, "state")).Output(); err != nil || !regexp.MustCompile(`\d+/\d+/-/-\s.*counts recovered`).Match(out) {
		t.Fatalf("crawl runs: %v: a killed run's skipped and past-the-end pages are not shown as unknown:\n%s", err, out)
	}
	// The archives written by the killed runs read back: every complete
	// record, at least one response per page.
	pagesSeen := map[string]bool{}
	err = archive.Responses(filepath.Join(killed, "warc"), func(r archive.Response) error {
		if r.Status == 200 && strings.Contains(r.URL, "literature_d9001") {
			pagesSeen[r.URL] = true
		}
		return nil
	})
	if err != nil || len(pagesSeen) < 30 {
		t.Fatalf("archive after kills: %d pages readable, err %v", len(pagesSeen), err)
	}
}

// The first SIGINT stops starting pages; the page in flight finishes, is
// delivered and committed; the run exits 130; a rerun does the rest.
func TestBackfillGracefulShutdown(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	site := testsite.New()
	site.SynthJournal(9002, 10, 20)
	arrived, open := make(chan struct{}), make(chan struct{})
	site.Inject(testsite.PagePath(9002, 3), testsite.Fault{Kind: testsite.Gate, Arrived: arrived, Open: open})
	srv := httptest.NewServer(site)
	defer srv.Close()
	dir := t.TempDir()
	args := []string{"backfill", "--journal", "9002", "--pages", "1-", "--base-url", srv.URL, "--delay", "0",
		"--concurrency", "1", "--config", filepath.Join(repoRoot, "config.yaml"),
		"--state-dir", filepath.Join(dir, "state"), "--sink", "jsonl:" + filepath.Join(dir, "papers.jsonl")}
	cmd := exec.Command(bin, args...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	stopping := make(chan struct{})
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			stderr.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "stopping") {
				close(stopping)
			}
		}
	}()
	<-arrived // page 3 is in flight
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	<-stopping // the crawler took the signal: no new page may start
	close(open)
	<-read
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitcode.Interrupted {
		t.Fatalf("exit: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "page=3") || site.Hits(testsite.PagePath(9002, 4)) != 0 {
		t.Fatalf("the page in flight must be committed and no new page started:\n%s", stderr.String())
	}
	if n := len(papersIn(t, filepath.Join(dir, "papers.jsonl"))); n != 60 {
		t.Fatalf("%d papers after the stop, want 60 (pages 1-3)", n)
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("rerun: %v\n%s", err, out)
	}
	if n := len(papersIn(t, filepath.Join(dir, "papers.jsonl"))); n != 200 {
		t.Fatalf("%d papers after the rerun, want 200", n)
	}
}

// --version names the module version and the commit the build recorded
// (go build in a git checkout), and a version given with -ldflags.
func TestVersion(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	build := func(args ...string) string {
		bin := filepath.Join(t.TempDir(), "crawl")
		cmd := exec.Command("go", append(append([]string{"build"}, args...), "-o", bin, ".")...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, b)
		}
		out, err := exec.Command(bin, "--version").Output()
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	git := exec.Command("git", "-C", repoRoot, "rev-parse", "HEAD").Run() == nil
	if out := build("-buildvcs=true"); git && !regexp.MustCompile(`^crawl \S+ \([0-9a-f]{12} \S+(, modified)?\) go1\.`).MatchString(out) {
		t.Errorf("--version of a build that recorded the commit: %q, want the module version and the commit", out)
	}
	if out := build("-buildvcs=false", "-ldflags", "-X main.buildVersion=v9.8.7"); !strings.HasPrefix(out, "crawl v9.8.7 go1.") {
		t.Errorf("--version with -ldflags: %q", out)
	}
	if out := build("-buildvcs=false"); !strings.Contains(out, "no revision recorded") {
		t.Errorf("--version of a build without the commit: %q", out)
	}
}

// A nightly killed after committing its first pages of new papers, with
// more new papers below them: the rerun finds those pages known, and
// still carries on down to the papers the killed run did not reach (each
// commit carries the mark a stop there would leave). Every paper once.
func TestNightlySurvivesKill9(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	site := testsite.New()
	const j = 9003
	var listing []string
	for i := range 100 {
		listing = append(listing, fmt.Sprint(900300000+i))
	}
	site.SetListing(j, listing, 20)
	srv := httptest.NewServer(site)
	defer srv.Close()
	dir := t.TempDir()
	run := func(args ...string) *exec.Cmd {
		return exec.Command(bin, append(args, "--journal", fmt.Sprint(j), "--base-url", srv.URL, "--delay", "0",
			"--config", filepath.Join(repoRoot, "config.yaml"), "--state-dir", filepath.Join(dir, "state"),
			"--sink", "jsonl:"+filepath.Join(dir, "papers.jsonl"))...)
	}
	if out, err := run("backfill", "--pages", "1-").CombinedOutput(); err != nil {
		t.Fatalf("backfill: %v\n%s", err, out)
	}
	// 70 new papers: pages 1-3 and half of page 4 are new.
	var fresh []string
	for i := range 70 {
		fresh = append(fresh, fmt.Sprint(900400000+i))
	}
	listing = append(fresh, listing...)
	site.SetListing(j, listing, 20)
	arrived, hold := make(chan struct{}), make(chan struct{})
	site.Inject(testsite.PagePath(j, 3), testsite.Fault{Kind: testsite.Gate, Arrived: arrived, Open: hold})
	cmd := run("nightly")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	committed := make(chan struct{}, 8)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "page committed") {
				committed <- struct{}{}
			}
		}
	}()
	<-arrived // page 3 in flight: pages 1 and 2 are committed before it starts
	for range 2 {
		<-committed
	}
	cmd.Process.Kill()
	cmd.Wait()
	close(hold)
	if n := len(papersIn(t, filepath.Join(dir, "papers.jsonl"))); n != 140 {
		t.Fatalf("after the kill: %d papers, want 140 (the backfill's 100 and pages 1-2's 40)", n)
	}
	if out, err := run("nightly").CombinedOutput(); err != nil {
		t.Fatalf("nightly after the kill: %v\n%s", err, out)
	}
	got := papersIn(t, filepath.Join(dir, "papers.jsonl"))
	var missing []string
	for _, id := range listing {
		if _, ok := got[id]; !ok {
			missing = append(missing, id)
		}
	}
	if len(got) != len(listing) || len(missing) > 0 {
		t.Fatalf("after the rerun: %d papers of %d; missing %d, e.g. %v", len(got), len(listing), len(missing), missing[:min(5, len(missing))])
	}
}
