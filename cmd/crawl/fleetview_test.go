package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/frontier"
	"github.com/litcrawl/litcrawl/internal/history"
	"github.com/litcrawl/litcrawl/internal/natstest"
	"github.com/litcrawl/litcrawl/internal/testsite"
)

// The commands that only read end at once on the first signal; the others
// finish their work first.
func TestReadOnlyCommandsAreMarked(t *testing.T) {
	root := newRootCmd()
	want := map[string]bool{"status": true, "runs": true, "runs show": true, "report": true, "config show": true,
		"quarantine list": true, "state check": true, "state find": true}
	var walk func(prefix string, cmds []*cobra.Command)
	got := map[string]bool{}
	walk = func(prefix string, cmds []*cobra.Command) {
		for _, c := range cmds {
			name := strings.TrimSpace(prefix + " " + c.Name())
			if isReadOnly(c) {
				got[name] = true
			}
			walk(name, c.Commands())
		}
	}
	walk("", root.Commands())
	for name := range want {
		if !got[name] {
			t.Errorf("crawl %s only reads, but is not marked so", name)
		}
	}
	for name := range got {
		if !want[name] {
			t.Errorf("crawl %s is marked as only reading", name)
		}
	}
}

// A status, and a runs --frontier, that wait on a frontier that cannot
// answer (two servers of three down: no leader) say that they wait, end at
// once on the first SIGTERM or SIGINT with its code, and say nothing of
// pages in flight; left alone, status gives up within its time limit,
// saying what is missing, exit 1.
func TestReadOnlyCommandsStopOnTheFirstSignal(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs a cluster and the built binary")
	}
	bin := buildBinary(t)
	c := natstest.StartCluster(t, 3)
	if code, _, errs := crawl(t, "enqueue", "--frontier", c.URL(), "--replicas", "3", "--journal", "5", "--pages", "1-3"); code != exitcode.OK {
		t.Fatalf("enqueue: exit %d: %s", code, errs)
	}
	c.Nodes[1].Stop()
	c.Nodes[2].Stop()
	for _, tc := range []struct {
		args []string
		sig  syscall.Signal
		code int
	}{
		{[]string{"status", "--frontier", c.Nodes[0].URL()}, syscall.SIGTERM, exitcode.Terminated},
		{[]string{"runs", "--frontier", c.Nodes[0].URL(), "--state-dir", t.TempDir()}, syscall.SIGINT, exitcode.Interrupted},
		{[]string{"status", "--frontier", c.Nodes[0].URL()}, 0, exitcode.Fatal},
	} {
		t.Run(fmt.Sprintf("%s %v", tc.args[0], tc.sig), func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(bin, tc.args...)
			cmd.Dir = t.TempDir()
			pipe, _ := cmd.StderrPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			var stderr bytes.Buffer
			sc := bufio.NewScanner(pipe)
			for sc.Scan() {
				stderr.WriteString(sc.Text() + "\n")
				if strings.Contains(sc.Text(), "waiting for the frontier") {
					break
				}
			}
			if !strings.Contains(stderr.String(), "waiting for the frontier") {
				t.Fatalf("%v never said it waits:\n%s", tc.args, stderr.String())
			}
			signalled := time.Now()
			if tc.sig != 0 {
				cmd.Process.Signal(tc.sig)
			}
			rest, _ := io.ReadAll(pipe)
			stderr.Write(rest)
			cmd.Wait()
			took := time.Since(signalled)
			if code := cmd.ProcessState.ExitCode(); code != tc.code {
				t.Errorf("%v: exit %d, want %d:\n%s", tc.args, code, tc.code, stderr.String())
			}
			if strings.Contains(stderr.String(), "in flight") {
				t.Errorf("%v speaks of pages in flight:\n%s", tc.args, stderr.String())
			}
			switch {
			case tc.sig != 0 && took > readOnlyGrace+time.Second:
				t.Errorf("%v took %v to end after the signal", tc.args, took)
			case tc.sig == 0 && (!strings.Contains(stderr.String(), "did not answer within 30s") || !strings.Contains(stderr.String(), "most of its servers")):
				t.Errorf("%v gave up without saying what is missing:\n%s", tc.args, stderr.String())
			}
		})
	}
}

// 500 hostile entries in the workers bucket (each of 1,000 journals and
// 1,000 jobs held) on Debian's nats-server 2.9.10: crawl status answers
// within bounded memory, prints under 1 MB, says how many entries it did
// not show, and the live page stays small.
func TestStatusAgainstHostileWorkerEntries(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the built binary")
	}
	bin := buildBinary(t)
	n := natstest.StartBinary(t)
	fr, err := frontier.Connect(context.Background(), n.URL, frontier.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fr.Close()
	kv, err := natstest.JetStream(t, n.URL).KeyValue(context.Background(), frontier.WorkersBucket)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i := range 500 {
		wi := frontier.WorkerInfo{Identity: frontier.Identity{ID: fmt.Sprintf("hostile-%d", i), Host: strings.Repeat("h", 300), Version: "(devel) (no revision recorded: a sentence)"},
			LastSeen: now, Every: 2, DonePerJournal: map[string]int64{}}
		for j := range 1000 {
			wi.DonePerJournal[fmt.Sprint(i*1000+j+1)] = 1 << 40
			wi.Held = append(wi.Held, frontier.HeldJob{Journal: int64(i*1000 + j + 1), Page: j, Since: now, Heartbeat: now, Delivery: 1})
		}
		data, _ := json.Marshal(wi)
		if _, err := kv.Put(context.Background(), fmt.Sprintf("w.hostile-%d", i), data); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"status", "--frontier", n.URL}, {"status", "--frontier", n.URL, "--json"}} {
		var out, errb bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = t.TempDir(), &out, &errb
		start := time.Now()
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, errb.String())
		}
		rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss >> 10 // MiB
		t.Logf("%v: %v, %d MiB at most, %d bytes printed", args[2:], time.Since(start).Round(time.Millisecond), rss, out.Len())
		// A bound, not a measure (docs/security.md has the measure: about
		// 100 MiB on a quiet machine; under the whole suite's load the
		// collector lags). Before the read was bounded, 500 such entries
		// took 555 MB and 5,000 took 2 GB.
		if rss > 512 || out.Len() > 1<<20 && len(args) == 3 {
			t.Errorf("%v: %d MiB, %d bytes printed; want under 512 MiB and 1 MiB", args, rss, out.Len())
		}
		if len(args) == 3 && (!strings.Contains(out.String(), "entries of the workers bucket not shown") || !strings.Contains(out.String(), "more journals") ||
			strings.Contains(out.String(), "no revision recorded")) {
			t.Errorf("status does not say what it left out, or shows the version's sentence:\n%.3000s", out.String())
		}
	}
	// The live page: small, whatever the bucket holds.
	cmd := exec.Command(bin, "status", "--frontier", n.URL, "--serve", "127.0.0.1:0")
	pipe, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var url string
	for sc := bufio.NewScanner(pipe); sc.Scan(); {
		if _, rest, ok := strings.Cut(sc.Text(), "serving the fleet's status on "); ok {
			url = strings.Fields(rest)[0]
			break
		}
	}
	go io.Copy(io.Discard, pipe)
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	t.Logf("the live page: %d bytes", len(page))
	if resp.StatusCode != 200 || len(page) > 1<<20 || !bytes.Contains(page, []byte("more journals")) {
		t.Errorf("the live page: %s, %d bytes", resp.Status, len(page))
	}
}

// The version column shows a version, or "unknown": never a sentence.
func TestVersionColumn(t *testing.T) {
	for in, want := range map[string]string{
		"v1.4.0": "v1.4.0", "devel-0123abcd4567": "devel-0123abcd4567", "": "unknown",
		"(devel) (no revision recorded: go build in a git checkout records it, unless GOFLAGS holds -buildvcs=false) go1.26.0": "unknown",
		"v1.4.0 (0123abcd4567 2026-12-01T00:00:00Z) go1.26.0":                                                                  "v1.4.0",
	} {
		if got := versionColumn(in); got != want {
			t.Errorf("versionColumn(%q) = %q, want %q", in, got, want)
		}
	}
	if got := versionColumn("\x1b[31mred\x1b[0m"); strings.ContainsRune(got, 0x1b) {
		t.Errorf("an escape reaches the terminal: %q", got)
	}
}

// A worker announces its version in one word: a release, or the revision
// of a git checkout (Go stamps a pseudo-version on such a build).
func TestOneWordVersion(t *testing.T) {
	for _, c := range []struct {
		build, module, rev string
		dirty              bool
		want               string
	}{
		{"v2.0.0", "(devel)", "0123abcd4567", false, "v2.0.0"},
		{"", "v1.4.0", "0123abcd4567", false, "v1.4.0"},
		{"", "v0.0.0-20261206050711-7a78bbacf95b", "7a78bbacf95b", false, "devel-7a78bbacf95b"},
		{"", "v0.0.0-20261206050711-7a78bbacf95b+dirty", "7a78bbacf95b", true, "devel-7a78bbacf95b-modified"},
		{"", "v1.4.1-0.20261206050711-7a78bbacf95b", "", false, "devel-7a78bbacf95b"},
		{"", "(devel)", "0123abcd4567", false, "devel-0123abcd4567"},
		{"", "(devel)", "", false, "unknown"},
	} {
		if got := oneWordVersion(c.build, c.module, c.rev, c.dirty); got != c.want {
			t.Errorf("oneWordVersion(%q, %q, %q, %v) = %q, want %q", c.build, c.module, c.rev, c.dirty, got, c.want)
		}
		if got := versionColumn(c.want); got != c.want {
			t.Errorf("the column shows %q as %q", c.want, got)
		}
	}
}

// Run summaries no worker writes are left out of the fleet's history: one
// of a million empty failures (decoded, gigabytes), one with a run id of
// kilobytes; a worker's summary with more failed pages than a summary
// keeps shows those it keeps, and says how many it left out.
func TestFleetRunsAgainstHostileSummaries(t *testing.T) {
	t.Parallel()
	n := natstest.Start(t)
	fr, err := frontier.Connect(context.Background(), n.URL(), frontier.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	started := time.Now().UTC().Format(time.RFC3339)
	bomb := `{"run_id":"bomb","kind":"worker","started":"` + started + `","failures":[` + strings.Repeat("{},", 300_000) + `{}]}`
	var many strings.Builder
	many.WriteString(`{"run_id":"20261206T050000Z-0123abcd","kind":"worker","started":"` + started + `","failures":[`)
	for i := range 2000 {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(&many, `{"journal":1,"page":%d,"error":"HTTP 500"}`, i+1)
	}
	many.WriteString("]}")
	for id, summary := range map[string]string{"bomb": bomb, "long": `{"run_id":"` + strings.Repeat("x", 24<<10) + `","started":"` + started + `"}`, "20261206T050000Z-0123abcd": many.String()} {
		if err := fr.PublishRun(context.Background(), id, []byte(summary)); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := crawl(t, "runs", "--frontier", n.URL(), "--state-dir", t.TempDir(), "--json")
	var runs []history.RunView
	if code != exitcode.OK || json.Unmarshal([]byte(out), &runs) != nil {
		t.Fatalf("runs: exit %d: %s%s", code, out, errs)
	}
	if len(runs) != 1 || runs[0].ID != "20261206T050000Z-0123abcd" || runs[0].Summary == nil ||
		len(runs[0].Summary.Failures) != history.MaxFailuresKept || runs[0].Summary.FailuresOmitted != 1000 {
		t.Fatalf("the fleet's runs: %d (want the worker's alone, with %d failures kept and 1000 left out): %.500s", len(runs), history.MaxFailuresKept, out)
	}
}

// A fleet worker ends by the rule a local run does: over a page whose
// blocks lost their meta lines (no DOI, no authors), it says why and exits 4 (with
// --exit-when-idle), its run in crawl runs --frontier shows exit 4 with the
// alarm, and --report writes its summary with the page log.
func TestWorkerQualityGate(t *testing.T) {
	t.Parallel()
	site := testsite.New()
	site.SetPage(57, 1, []byte(driftedPage()), "")
	srv := httptest.NewServer(site)
	defer srv.Close()
	n := natstest.Start(t)
	if code, _, errs := crawl(t, "enqueue", "--frontier", n.URL(), "--journal", "57", "--pages", "1"); code != exitcode.OK {
		t.Fatalf("enqueue: exit %d: %s", code, errs)
	}
	dir := t.TempDir()
	rep := filepath.Join(dir, "worker.json")
	code, _, errs := crawl(t, "worker", "--frontier", n.URL(), "--base-url", srv.URL, "--delay", "0", "--exit-when-idle", "1s",
		"--sink", n.URL()+"/papers.q?stream=Q", "--report", rep)
	if code != exitcode.Quality || !strings.Contains(errs, "have a DOI (quality.min_doi_share 0.50)") || !strings.Contains(errs, "have authors (quality.min_authors_share 0.80)") {
		t.Fatalf("worker: exit %d, want %d: %s", code, exitcode.Quality, errs)
	}
	var r struct {
		ExitCode *int `json:"exit_code"`
		Quality  struct {
			Records int `json:"records"`
		}
		PageLog []struct{ Page, Records int } `json:"page_log"`
	}
	data, _ := os.ReadFile(rep)
	if err := json.Unmarshal(data, &r); err != nil || r.ExitCode == nil || *r.ExitCode != exitcode.Quality || r.Quality.Records != 20 || len(r.PageLog) != 1 {
		t.Errorf("the worker's report: %s (%v)", data, err)
	}
	code, out, errs := crawl(t, "runs", "--frontier", n.URL(), "--state-dir", filepath.Join(dir, "state"), "--json")
	var runs []history.RunView
	if code != exitcode.OK || json.Unmarshal([]byte(out), &runs) != nil || len(runs) != 1 {
		t.Fatalf("runs: exit %d: %s%s", code, out, errs)
	}
	if r := runs[0]; r.ExitCode == nil || *r.ExitCode != exitcode.Quality || r.Quality != "alarm" {
		t.Errorf("the worker's run: exit %v, quality %q; want exit 4 and an alarm", r.ExitCode, r.Quality)
	}
}
