package main

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/fetch"
	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/testsite"
)

// crawl parse reads at most parse.max_input_bytes of an input (the flag or
// the config), and fails naming the key instead of taking the memory.
func TestParseCapsItsInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := filepath.Join(dir, "big.htm")
	if err := os.WriteFile(big, bytes.Repeat([]byte("<p>x</p>\n"), 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := crawl(t, "parse", "--max-input-bytes", "2048", big)
	if code != exitcode.Fatal || !strings.Contains(errs, "larger than parse.max_input_bytes (2048 bytes") {
		t.Errorf("a 9,000-byte file with a 2,048-byte cap: exit %d, %q", code, errs)
	}
	cfg := filepath.Join(dir, "config.yaml")
	os.WriteFile(cfg, []byte("parse:\n  max_input_bytes: 4096\n"), 0o644)
	if code, _, errs := crawl(t, "parse", "--config", cfg, big); code != exitcode.Fatal || !strings.Contains(errs, "(4096 bytes") {
		t.Errorf("parse.max_input_bytes from the config: exit %d, %q", code, errs)
	}
	if code, _, errs := crawl(t, "parse", "--max-input-bytes", "10", big); code != exitcode.Usage || !strings.Contains(errs, "parse.max_input_bytes: 10") {
		t.Errorf("--max-input-bytes 10: exit %d, %q; want the config's bound", code, errs)
	}
	if code, _, errs := crawl(t, "parse", "--concurrency", "100000", big); code != exitcode.Usage || !strings.Contains(errs, "expected 1 to 256") {
		t.Errorf("--concurrency 100000: exit %d, %q", code, errs)
	}
}

// --strict on paths that hold no page file at all is not a success.
func TestParseStrictWithNothingToParse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "notes.json"), []byte("{}"), 0o644)
	if code, _, errs := crawl(t, "parse", "--strict", dir); code != exitcode.Incomplete || !strings.Contains(errs, "no page file") {
		t.Errorf("--strict on a directory without page files: exit %d, %q; want 3", code, errs)
	}
	if code, _, errs := crawl(t, "parse", dir); code != exitcode.OK || !strings.Contains(errs, "no page file") {
		t.Errorf("without --strict: exit %d, %q; want 0 and a note", code, errs)
	}
}

// A FIFO whose writer never finishes is read like any input, and the first
// SIGINT stops the wait (exit 130), not only a second one.
func TestParseFIFOStopsOnTheFirstSignal(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	fifo := filepath.Join(t.TempDir(), "capture.txt")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "parse", fifo)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Opening the FIFO for writing returns once the crawler has opened it
	// for reading: it is then blocked in the read.
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.WriteString("<html><body><p>half a page")
	cmd.Process.Signal(os.Interrupt)
	err = cmd.Wait()
	if ctx.Err() != nil {
		t.Fatalf("crawl parse on a FIFO did not stop on the first SIGINT: %s", errb.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != exitcode.Interrupted {
		t.Errorf("exit %d (%v), want %d: %s", code, err, exitcode.Interrupted, errb.String())
	}
}

// A panic that reaches main is exit 1 with one line, never Go's exit 2
// (the usage code) with a trace.
func TestPanicIsExit1WithOneLine(t *testing.T) {
	t.Parallel()
	var errb bytes.Buffer
	code := func() (code int) {
		defer exitOnPanic(&errb, &code)
		var m map[string]int
		m["x"]++ // a nil map: a runtime panic
		return exitcode.OK
	}()
	if code != exitcode.Fatal || strings.Count(errb.String(), "\n") != 1 || !strings.Contains(errb.String(), "internal error: assignment to entry in nil map") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
}

// state rebuild refuses inputs that are not delivered records, and never
// shows a password given by mistake.
func TestStateRebuildRefusesWhatIsNotRecords(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.jsonl")
	os.WriteFile(notes, []byte("root:x:0:0:root:/root:/bin/bash\n{\"no\":\"id\"}\n"), 0o644)
	for _, tt := range []struct {
		from, want string
		code       int
	}{
		{"jsonl:" + notes, "none of its 2 lines is a record", exitcode.Fatal},
		{"nats://bob:PW1234@h:4222/s", "expected jsonl:FILE", exitcode.Usage},
		{"jsonl://bob:PW1234@h/x", "expected jsonl:FILE", exitcode.Usage},
	} {
		code, _, errs := crawl(t, "state", "rebuild", "--state-dir", filepath.Join(dir, "new"), "--from", tt.from)
		if code != tt.code || !strings.Contains(errs, tt.want) || strings.Contains(errs, "PW1234") {
			t.Errorf("--from %s: exit %d, %q", tt.from, code, errs)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "new", "crawl.db")); err == nil {
		t.Error("a refused rebuild left a state behind")
	}
}

// Usage errors exit 2 on every command, an unknown command included, each
// with the hint of the command that failed; --version answers.
func TestUsageErrorsExit2WithTheirCommandsHint(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		hint string
	}{
		{[]string{"nosuch"}, "See 'crawl --help'."},
		{[]string{"parse", "--log-format", "xml", "x"}, "See 'crawl parse --help'."},
		{[]string{"replay", "--log-format", "xml", "--archive", "x"}, "See 'crawl replay --help'."},
		{[]string{"backfill", "--pages", "x"}, "See 'crawl backfill --help'."},
		{[]string{"state", "rebuild"}, "See 'crawl state rebuild --help'."},
	} {
		code, _, errs := crawl(t, tt.args...)
		if code != exitcode.Usage || !strings.Contains(errs, tt.hint) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tt.args, code, errs, tt.hint)
		}
	}
	if code, out, _ := crawl(t, "--version"); code != exitcode.OK || !strings.HasPrefix(out, "crawl ") {
		t.Errorf("--version: exit %d, %q", code, out)
	}
}

// A base URL where nothing answers (nothing listening) fails the run fast
// with the default retries: exit 1 and a message saying so, not minutes
// of retries and exit 3.
func TestUnreachableHostFailsTheRunFast(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits for the default retries (up to 15 s)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	dir := t.TempDir()
	start := time.Now()
	code, _, errs := crawl(t, "backfill", "--journal", "1", "--pages", "1-", "--base-url", base, "--state-dir", filepath.Join(dir, "s"))
	took := time.Since(start)
	if code != exitcode.Fatal || !strings.Contains(errs, "has not answered once in this run") {
		t.Fatalf("exit %d after %v: %s", code, took, errs)
	}
	if took > 20*time.Second {
		t.Errorf("took %v with the default retries, want about 15 s at most", took)
	}
	// The error says it once, with the network's words: the base URL is
	// not repeated by every layer (it was five times in 400 characters).
	last := errs[strings.LastIndex(strings.TrimSpace(errs), "\n")+1:]
	if n := strings.Count(last, ln.Addr().String()); n > 2 || len(last) > 300 || !strings.Contains(last, "connection refused") {
		t.Errorf("the error names the host %d times in %d characters: %s", n, len(last), last)
	}
}

// parse and replay do not add to a JSONL file that already holds records
// unless --append says so.
func TestParseRefusesToAppendWithoutAppend(t *testing.T) {
	t.Chdir(repoRoot) // paths relative to the repository, as the goldens hold them
	out := filepath.Join(t.TempDir(), "out.jsonl")
	if code, _, errs := crawl(t, "parse", "--sink", "jsonl:"+out, "fixtures/html/flat-p"); code != exitcode.OK {
		t.Fatalf("first parse: exit %d: %s", code, errs)
	}
	first := countLines(t, out)
	if code, _, errs := crawl(t, "parse", "--sink", "jsonl:"+out, "fixtures/html/flat-p"); code != exitcode.Usage || !strings.Contains(errs, "--append") || countLines(t, out) != first {
		t.Errorf("second parse into the same file: exit %d: %s", code, errs)
	}
	if code, _, errs := crawl(t, "replay", "--archive", t.TempDir(), "--sink", "jsonl:"+out); code != exitcode.Usage || !strings.Contains(errs, "--append") {
		t.Errorf("replay into the same file: exit %d: %s", code, errs)
	}
	if code, _, errs := crawl(t, "parse", "--append", "--sink", "jsonl:"+out, "fixtures/html/flat-p"); code != exitcode.OK || countLines(t, out) != 2*first {
		t.Errorf("with --append: exit %d: %s", code, errs)
	}
}

// -o FILE is --sink jsonl:FILE on the commands that deliver.
func TestOutputShortcut(t *testing.T) {
	t.Chdir(repoRoot) // paths relative to the repository, as the goldens hold them
	site := testsite.New()
	site.SynthJournal(1001, 2, 5)
	srv := httptest.NewServer(site)
	defer srv.Close()
	dir := t.TempDir()
	out := filepath.Join(dir, "p.jsonl")
	if code, _, errs := crawl(t, "backfill", "--journal", "1001", "--pages", "1-", "--base-url", srv.URL, "--delay", "0",
		"--state-dir", filepath.Join(dir, "s"), "-o", out); code != exitcode.OK || countLines(t, out) != 10 {
		t.Errorf("backfill -o: exit %d, %d lines: %s", code, countLines(t, out), errs)
	}
	parsed := filepath.Join(dir, "parsed.jsonl")
	if code, _, errs := crawl(t, "parse", "-o", parsed, "fixtures/html/flat-p"); code != exitcode.OK || countLines(t, parsed) == 0 {
		t.Errorf("parse -o: exit %d: %s", code, errs)
	}
}

// A sink that does not answer at start is retried; the first SIGINT gives
// it up at once (exit 130), without waiting out shutdown_timeout.
func TestSinkRetryAtStartStopsOnTheFirstSignal(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // shutdown_timeout is 30s
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "backfill", "--journal", "1", "--pages", "1", "--base-url", "http://127.0.0.1:1",
		"--state-dir", filepath.Join(dir, "state"), "--sink", "nats://127.0.0.1:1/s?stream=S")
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	sc := bufio.NewScanner(pipe)
	signalled := false // once: a second signal exits at once anyway
	for sc.Scan() {
		errb.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "sink not reachable; retrying") && !signalled {
			signalled = true
			cmd.Process.Signal(os.Interrupt)
		}
	}
	err = cmd.Wait()
	if ctx.Err() != nil {
		t.Fatalf("the first SIGINT did not stop the sink's retries: %s", errb.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != exitcode.Interrupted {
		t.Errorf("exit %d (%v), want %d: %s", code, err, exitcode.Interrupted, errb.String())
	}
}

// A sink that never answers at the start (a wrong port) fails the run
// within 15 s, exit 1, naming it; a mid-run outage is ridden through for
// longer (sink.DefaultRetry).
func TestSinkThatNeverAnsweredFailsTheStartFast(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits out the start's bound")
	}
	dir := t.TempDir()
	start := time.Now()
	code, _, errs := crawl(t, "backfill", "--journal", "1", "--pages", "1", "--base-url", "http://127.0.0.1:1",
		"--state-dir", filepath.Join(dir, "state"), "--sink", "nats://u:hunter2@127.0.0.1:1/s?stream=S")
	took := time.Since(start)
	if code != exitcode.Fatal || !strings.Contains(errs, "nats://u:REDACTED@127.0.0.1:1/s?stream=S") || !strings.Contains(errs, "not answering") || strings.Contains(errs, "hunter2") {
		t.Errorf("exit %d: %s", code, errs)
	}
	if took > 15*time.Second+2*time.Second { // the bound, and a loaded machine's slack
		t.Errorf("the start failed after %v, want within 15s", took)
	}
}

// The progress line says the longest wait under way: a run that seems
// stalled says what it waits for and until when.
func TestProgressLineSaysWhatItWaitsFor(t *testing.T) {
	t.Parallel()
	sum := engine.NewSummary()
	if line := progressLine(sum); strings.Contains(line, "waiting") {
		t.Fatalf("no wait, yet: %s", line)
	}
	until := time.Now().Add(90 * time.Second)
	sum.Waits.Note(fetch.Wait{Host: "m.booksci.cn", Cause: "circuit-open", Journal: 5, Page: 3, Until: until})
	sum.Waits.Note(fetch.Wait{Host: "m.booksci.cn", Cause: "crawl-delay", Journal: 5, Page: 4, Until: time.Now().Add(5 * time.Second)})
	want := "waiting for m.booksci.cn (circuit-open) until " + until.Format(time.TimeOnly)
	if line := progressLine(sum); !strings.Contains(line, want) || !strings.Contains(line, "(2 pages waiting)") {
		t.Errorf("progress line %q, want %q and the count of pages waiting", line, want)
	}
}
