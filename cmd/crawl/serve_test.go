package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/parser"
)

// crawl demo runs the whole pipeline offline: a backfill of 360 papers and
// three nights of new ones, each paper once; it ends with the report of
// its four runs and what to try next.
func TestDemo(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	code, _, errs := crawl(t, "demo", "--out", out)
	if code != exitcode.OK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	const papers = 360 + 45 + 40 + 37
	ids := papersIn(t, filepath.Join(out, "demo.jsonl")) // fails on a repeated paper
	if len(ids) != papers || !strings.Contains(errs, fmt.Sprintf("%d papers in", papers)) {
		t.Fatalf("%d papers: %s", len(ids), errs)
	}
	report := filepath.Join(out, "report.html")
	if b, err := os.ReadFile(report); err != nil || strings.Count(string(b), `<figure class="chart"`) != 5 || strings.Contains(string(b), "No data:") {
		t.Errorf("the demo's report %s: %v", report, err)
	}
	if !strings.Contains(errs, "report in "+report) || !strings.Contains(errs, "crawl runs --state-dir") {
		t.Errorf("the demo does not say where its report is and what to try next: %s", errs)
	}
	// Newest first, though the four runs started within the same second.
	if code, stdout, _ := crawl(t, "runs", "--state-dir", filepath.Join(out, "demo-state")); code != exitcode.OK || strings.Count(stdout, "nightly") != 3 ||
		!strings.Contains(strings.TrimSpace(stdout)[strings.LastIndex(strings.TrimSpace(stdout), "\n")+1:], "backfill") {
		t.Errorf("the demo's runs: exit %d\n%s", code, stdout)
	}
	// A second demo starts afresh.
	if code, _, errs = crawl(t, "demo", "--out", out, "--faults", "none"); code != exitcode.OK || len(papersIn(t, filepath.Join(out, "demo.jsonl"))) != papers {
		t.Fatalf("second demo: exit %d: %s", code, errs)
	}
}

// crawl serve (the built binary) serves synthetic pages on loopback and
// stops on SIGINT.
func TestServe(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	cmd := exec.Command(bin, "serve", "--synth", "42:3", "--addr", "127.0.0.1:0")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stderr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	base := regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(line)
	if base == "" {
		t.Fatalf("no address in %q", line)
	}
	resp, err := http.Get(base + "/literature_d42_2.htm")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if page, _ := parser.Parse(body, parser.Options{}); len(page.Records) != 20 {
		t.Errorf("served page has %d records", len(page.Records))
	}
	// / is an index of the journals and the URL pattern; robots.txt is
	// served.
	for path, want := range map[string]string{"/": "/literature_d{journal}_{page}.htm", "/robots.txt": "User-agent: *"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("%s: %d %q, want %q", path, resp.StatusCode, b, want)
		}
	}
	cmd.Process.Signal(os.Interrupt)
	rest, _ := io.ReadAll(stderr)
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() != exitcode.Interrupted {
			t.Errorf("serve exit: %v", err)
		}
	}
	if strings.Contains(string(rest), "stopping") {
		t.Errorf("Ctrl-C on serve printed the crawl's stopping notice: %q", rest)
	}
}

func TestServeUsage(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--synth", "1:2", "--addr", "0.0.0.0:8089"}, "loopback only"},
		{[]string{"serve", "--synth", "1:2", "--addr", "192.168.1.5:80"}, "loopback only"},
		{[]string{"serve"}, "nothing to serve"},
		{[]string{"serve", "--synth", "x:2"}, "JOURNAL:PAGES"},
		{[]string{"serve", "--faults", "chaos"}, "--faults: fault profile \"chaos\""},
		{[]string{"serve", "--synth", "1:2", "--faults", "chaos"}, "none, flaky, hostile or attack"},
		{[]string{"demo", "--faults", "chaos"}, "none, flaky or hostile"},
	} {
		code, _, errs := crawl(t, tt.args...)
		if code != exitcode.Usage || !strings.Contains(errs, tt.want) {
			t.Errorf("%v: exit %d, stderr %q", tt.args, code, errs)
		}
	}
	// A missing archive is like a missing path: fatal, and named.
	if code, _, errs := crawl(t, "serve", "--archive", "/no/such/dir"); code != exitcode.Fatal || !strings.Contains(errs, "/no/such/dir") {
		t.Errorf("missing archive: exit %d, stderr %q", code, errs)
	}
}

// crawl serve --grow adds papers at page 1 of each synthetic journal
// between nightlies: a nightly after a growth delivers those papers, and
// only those.
func TestServeGrows(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	srv := exec.Command(bin, "serve", "--synth", "1001:3", "--synth", "1002:2:10", "--grow", "7/1s", "--addr", "127.0.0.1:0")
	pipe, _ := srv.StderrPipe()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	start := waitLine(t, lines, "serving 5 pages on ")
	if !strings.Contains(start, "growing by 7 papers at page 1 of each synthetic journal every") {
		t.Errorf("the start line does not say the site grows: %s", start)
	}
	_, rest, _ := strings.Cut(start, "serving 5 pages on ")
	base := strings.Fields(rest)[0]
	dir := t.TempDir()
	out := filepath.Join(dir, "papers.jsonl")
	args := []string{"--journal", "1001", "--journal", "1002", "--base-url", base, "--delay", "0", "--state-dir", filepath.Join(dir, "state"), "-o", out}
	if code, _, errs := crawl(t, append([]string{"backfill", "--pages", "1-"}, args...)...); code != exitcode.OK {
		t.Fatalf("backfill: exit %d: %s", code, errs)
	}
	before := countLines(t, out)
	// The next growth after the backfill: a nightly delivers what grew.
	waitLine(t, lines, "grew: 7 new papers")
	code, _, errs := crawl(t, append([]string{"nightly"}, args...)...)
	if code != exitcode.OK {
		t.Fatalf("nightly: exit %d: %s", code, errs)
	}
	fresh := countLines(t, out) - before
	if fresh < 14 || fresh%14 != 0 {
		t.Errorf("the nightly after a growth delivered %d papers, want a multiple of 14 (7 a journal a growth): %s", fresh, errs)
	}
	papersIn(t, out) // each paper once
}

// waitLine waits (30 s at most) for a line of a process's output that
// holds want, and returns it.
func waitLine(t *testing.T, lines <-chan string, want string) string {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the process ended without saying %q", want)
			}
			if strings.Contains(l, want) {
				return l
			}
		case <-timeout:
			t.Fatalf("the process did not say %q in 30 s", want)
		}
	}
}

// An address in use is said with the flag that changes it.
func TestAddressInUseNamesTheFlag(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	for flag, args := range map[string][]string{
		"--addr":         {"serve", "--synth", "1:2", "--addr", addr},
		"--metrics-addr": {"parse", filepath.Join(repoRoot, "fixtures", "seeds"), "--metrics-addr", addr, "-o", filepath.Join(t.TempDir(), "p.jsonl")},
	} {
		code, _, errs := crawl(t, args...)
		if code == exitcode.OK || !strings.Contains(errs, flag+" "+addr+": the address is in use") || !strings.Contains(errs, "give another with "+flag) {
			t.Errorf("%v: exit %d: %s", args, code, errs)
		}
	}
}
