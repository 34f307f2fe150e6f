package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/internal/browsertest"
	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/frontier"
	"github.com/litcrawl/litcrawl/internal/history"
	"github.com/litcrawl/litcrawl/internal/natstest"
	"github.com/litcrawl/litcrawl/internal/testsite"
)

// A fleet loses a worker, on the Go module's nats-server, on Debian's
// 2.9.10 and on a three-node cluster: the dead worker's job is back
// within the ack wait, status shows the worker gone and its job in flight
// until then, the other workers (--exit-when-idle 5s) stay until the
// queue is drained, every paper reaches the records stream once, and the
// fleet's runs are in its history.
func TestFleetLosesAWorker(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs worker processes")
	}
	for _, tc := range []struct {
		name string
		url  func(t *testing.T) string
		args []string
	}{
		{"module server", func(t *testing.T) string { return natstest.Start(t).URL() }, []string{"--live-page"}},
		{"debian 2.9.10", func(t *testing.T) string { return natstest.StartBinary(t).URL }, nil},
		{"three-node cluster", func(t *testing.T) string {
			c := natstest.StartCluster(t, 3)
			c.WaitReady(t)
			return c.URL()
		}, []string{"--replicas", "3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fleetLosesAWorker(t, tc.url(t), tc.args)
		})
	}
}

func fleetLosesAWorker(t *testing.T, natsURL string, extra []string) {
	bin := buildBinary(t)
	livePage := slices.Contains(extra, "--live-page") // once is enough for the browser
	extra = slices.DeleteFunc(slices.Clone(extra), func(a string) bool { return a == "--live-page" })
	site := testsite.New()
	site.SynthJournal(41, 6, 20)
	site.SynthJournal(42, 6, 20)
	// The first fetch of page 41/1 hangs: the worker that holds it is
	// killed there, mid-page. The next fetch of it is the job taken again.
	victimPage := testsite.PagePath(41, 1)
	held, retaken := make(chan struct{}), make(chan time.Time, 1)
	release := make(chan struct{})
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == victimPage {
			switch hits.Add(1) {
			case 1:
				close(held)
				<-release
				return
			case 2:
				retaken <- time.Now()
			}
		}
		site.ServeHTTP(w, r)
	}))
	defer srv.Close()
	defer close(release)

	const ackWait = 12 * time.Second
	args := func(a ...string) []string { return append(append(a, "--frontier", natsURL), extra...) }
	read := func(a ...string) []string { return append(a, "--frontier", natsURL) }
	if code, _, errs := crawl(t, args("enqueue", "--journal", "41", "--journal", "42", "--pages", "1-6", "--ack-wait", ackWait.String())...); code != exitcode.OK {
		t.Fatalf("enqueue: exit %d: %s", code, errs)
	}
	worker := func() *exec.Cmd {
		return exec.Command(bin, args("worker", "--base-url", srv.URL, "--delay", "0", "--concurrency", "1",
			"--sink", strings.Split(natsURL, ",")[0]+"/papers.fleet?stream=FLEET", "--exit-when-idle", "5s")...)
	}
	victim := worker()
	victim.Dir = t.TempDir()
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	<-held // the victim holds page 41/1, the first job

	type ended struct {
		at  time.Time
		out string
		err error
	}
	var wg sync.WaitGroup
	ends := make([]ended, 2)
	started := make(chan struct{}, 2)
	for i := range 2 {
		wg.Go(func() {
			cmd := worker()
			cmd.Dir = t.TempDir()
			pipe, _ := cmd.StderrPipe()
			if err := cmd.Start(); err != nil {
				ends[i].err = err
				return
			}
			var out strings.Builder
			sc := bufio.NewScanner(pipe)
			once := sync.OnceFunc(func() { started <- struct{}{} })
			for sc.Scan() {
				out.WriteString(sc.Text() + "\n")
				if strings.Contains(sc.Text(), "job done") {
					once()
				}
			}
			err := cmd.Wait()
			ends[i] = ended{time.Now(), out.String(), err}
		})
	}
	<-started
	victim.Process.Kill()
	killed := time.Now()
	victim.Wait()

	// Until its job is taken again, status shows the victim gone and the
	// job in flight, held by it, with its age; --json has the same facts.
	var text, last string
	defer func() {
		if t.Failed() {
			t.Logf("last status: %s", last)
		}
	}()
	natstest.Eventually(t, ackWait, "status never showed the killed worker gone with its job in flight", func() bool {
		code, out, errs := crawl(t, args("status", "--json")...)
		last = out + errs
		if code != exitcode.OK {
			return false
		}
		var got struct{ Status frontier.Status }
		if json.Unmarshal([]byte(out), &got) != nil {
			return false
		}
		gone := false
		for _, w := range got.Status.Workers {
			gone = gone || (w.PID == victim.Process.Pid && w.State == frontier.WorkerGone)
		}
		for _, h := range got.Status.InFlightJobs {
			if gone && h.Journal == 41 && h.Page == 1 && h.WorkerState == frontier.WorkerGone && !h.Since.IsZero() {
				_, text, _ = crawl(t, args("status")...)
				return true
			}
		}
		return false
	})
	if !strings.Contains(text, " gone ") || !strings.Contains(text, "in flight:") {
		t.Errorf("status as text:\n%s", text)
	}

	var at time.Time
	select {
	case at = <-retaken:
	case <-time.After(ackWait + 5*time.Second):
		t.Fatalf("the killed worker's job was not taken again within the ack wait (%v) + 5s", ackWait)
	}
	t.Logf("the killed worker's job was taken again %v after the kill", at.Sub(killed).Round(time.Millisecond))
	wg.Wait()
	for i, e := range ends {
		if e.err != nil {
			t.Errorf("worker %d: %v\n%s", i, e.err, e.out)
		}
		if e.at.Before(at) {
			t.Errorf("worker %d exited before the killed worker's job was back (--exit-when-idle 5s):\n%s", i, e.out)
		}
	}
	ids := natstest.RecordIDs(t, strings.Split(natsURL, ",")[0], "FLEET")
	if len(ids) != 240 {
		t.Errorf("%d papers in the records stream, want 240", len(ids))
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("paper %s %d times", id, n)
		}
	}

	// The fleet's history: three worker runs, the killed one as killed;
	// the new papers they count are the papers in the records stream.
	code, out, errs := crawl(t, read("runs", "--json", "--state-dir", filepath.Join(t.TempDir(), "none"))...)
	if code != exitcode.OK {
		t.Fatalf("runs --frontier: exit %d: %s", code, errs)
	}
	var runs []history.RunView
	if err := json.Unmarshal([]byte(out), &runs); err != nil {
		t.Fatal(err)
	}
	var newPapers int64
	statuses := map[string]int{}
	for _, r := range runs {
		statuses[r.Status]++
		if r.Kind != "worker" {
			t.Errorf("run %s: kind %q", r.ID, r.Kind)
		}
		if r.Summary != nil {
			newPapers += r.Summary.Papers["new"]
		}
	}
	if len(runs) != 3 || statuses[history.StatusFinished] != 2 || statuses[history.StatusKilled] != 1 || newPapers != int64(len(ids)) {
		t.Errorf("fleet runs: %d (%v), %d new papers, want 3 (2 finished, 1 killed) and %d", len(runs), statuses, newPapers, len(ids))
	}
	report := filepath.Join(t.TempDir(), "fleet.html")
	if code, _, errs := crawl(t, read("report", "-o", report, "--state-dir", filepath.Join(t.TempDir(), "none"))...); code != exitcode.OK {
		t.Fatalf("report --frontier: exit %d: %s", code, errs)
	}
	if html, _ := os.ReadFile(report); !strings.Contains(string(html), runs[0].ID) {
		t.Errorf("the report does not show the fleet's runs")
	}
	if livePage {
		checkLivePage(t, bin, natsURL, runs)
	}
}

// checkLivePage serves the fleet's status (crawl status --serve) and opens
// it in headless Chromium: the workers and their states, the journals, the
// charts of the fleet's runs drawn, a page that reloads itself and asks
// nothing of anyone else.
func checkLivePage(t *testing.T, bin, natsURL string, runs []history.RunView) {
	cmd := exec.Command(bin, "status", "--frontier", natsURL, "--serve", "127.0.0.1:0", "--watch", "3s")
	pipe, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Signal(os.Interrupt)
	sc := bufio.NewScanner(pipe)
	var url string
	for url == "" && sc.Scan() {
		if _, rest, ok := strings.Cut(sc.Text(), "serving the fleet's status on "); ok {
			url, _, _ = strings.Cut(rest, " ")
		}
	}
	if url == "" {
		t.Fatal("crawl status --serve did not say where it serves")
	}
	go io.Copy(io.Discard, pipe)
	p := browsertest.Open(t, url)
	if len(p.ConsoleErrors) > 0 || len(p.Requests) > 0 {
		t.Errorf("console errors %q, requests elsewhere %q", p.ConsoleErrors, p.Requests)
	}
	if p.Refresh != "3" {
		t.Errorf("the page reloads itself every %q s, want 3", p.Refresh)
	}
	for _, want := range []string{"Fleet status", "Workers", "gone", "exited", "Jobs in flight", "Journals", runs[0].ID, "0 pending (0 in flight)"} {
		if !strings.Contains(p.Text, want) {
			t.Errorf("the live page lacks %q:\n%s", want, p.Text)
		}
	}
	if len(p.Charts) != 5 {
		t.Errorf("%d charts, want 5", len(p.Charts))
	}
	for _, c := range p.Charts {
		if c.ID == "chart-papers" && (c.Empty || c.Paths < 10 || c.Width < 300) {
			t.Errorf("the fleet's papers chart is not drawn: %+v", c)
		}
	}
}
