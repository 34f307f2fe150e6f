package main

import (
	"bufio"
	"encoding/json"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/natstest"
	"github.com/litcrawl/litcrawl/internal/testsite"
)

// Three worker processes of the built binary share a backfill of a flaky
// site; one is killed mid-run. The frontier drains and every paper reaches
// the records stream exactly once.
func TestWorkerProcesses(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	natsURL := natstest.Start(t).URL()
	site := testsite.New()
	site.SynthJournal(31, 4, 20)
	site.SynthJournal(32, 4, 20)
	p := testsite.Profiles["flaky"]
	p.SlowBy = time.Millisecond
	site.SetProfile(p, 5)
	srv := httptest.NewServer(site)
	defer srv.Close()

	cfgPath := filepath.Join(repoRoot, "config.yaml")
	code, _, errs := crawl(t, "enqueue", "--frontier", natsURL, "--journal", "31", "--journal", "32", "--pages", "1-5", "--ack-wait", "1s", "--config", cfgPath)
	if code != exitcode.OK || !strings.Contains(errs, "enqueued 10 jobs") {
		t.Fatalf("enqueue: exit %d: %s", code, errs)
	}
	// A repeated enqueue adds nothing, and status shows each job once.
	code, _, errs = crawl(t, "enqueue", "--frontier", natsURL, "--journal", "31", "--journal", "32", "--pages", "1-5", "--config", cfgPath)
	if code != exitcode.OK || !strings.Contains(errs, "enqueued nothing: 10 jobs already pending or in flight") {
		t.Fatalf("second enqueue: exit %d: %s", code, errs)
	}
	if code, out, errs := crawl(t, "status", "--frontier", natsURL); code != exitcode.OK || !strings.Contains(out, "jobs: 10 pending (0 in flight), 0 dead-lettered, 0 done by the workers of the last hour, of 10 enqueued since the queue was made") {
		t.Fatalf("status after two enqueues: exit %d: %s%s", code, out, errs)
	}
	worker := func() *exec.Cmd {
		return exec.Command(bin, "worker", "--frontier", natsURL, "--base-url", srv.URL, "--delay", "0",
			"--sink", natsURL+"/papers.fleet?stream=FLEET", "--exit-when-idle", "3s", "--config", cfgPath)
	}
	// The first worker is killed after its first job.
	victim := worker()
	stderr, _ := victim.StderrPipe()
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			out, err := worker().CombinedOutput()
			if err != nil {
				t.Errorf("worker: %v\n%s", err, out)
			}
			// The summary reads like a crawl's.
			if !regexp.MustCompile(`crawl worker \S+: pages: \d+ ok, \d+ failed, 0 skipped \(done before\), \d+ past the end; papers: \d+ new, \d+ updated, \d+ known; .*; jobs: \d+ done`).Match(out) ||
				strings.Contains(string(out), "map[") {
				t.Errorf("worker summary:\n%s", out)
			}
		})
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "job done") {
			victim.Process.Kill()
			break
		}
	}
	victim.Wait()
	wg.Wait()

	code, out, errs := crawl(t, "status", "--frontier", natsURL)
	if code != exitcode.OK || !strings.Contains(out, "jobs: 0 pending (0 in flight), 0 dead-lettered") || !strings.Contains(out, "of 10 enqueued since the queue was made") {
		t.Errorf("status: exit %d: %s%s", code, out, errs)
	}
	ids := natstest.RecordIDs(t, natsURL, "FLEET")
	if len(ids) != 160 {
		t.Errorf("%d papers in the records stream, want 160", len(ids))
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("paper %s %d times", id, n)
		}
	}
}

func TestDistributedUsage(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"enqueue", "--journal", "1", "--pages", "1-2"}, "--frontier"},
		{[]string{"enqueue", "--frontier", "nats://127.0.0.1:1", "--journal", "1"}, "either --pages A-B or --nightly"},
		{[]string{"enqueue", "--frontier", "nats://127.0.0.1:1", "--journal", "1", "--pages", "1-"}, "needs its last page"},
		{[]string{"enqueue", "--frontier", "nats://127.0.0.1:1", "--journal", "1", "--pages", "1-99999999"}, "at most backfill.max_pages (100000) pages a journal"},
		{[]string{"status", "--frontier", "nats://127.0.0.1:1", "--ack-wait", "1s"}, "unknown flag: --ack-wait"},
		{[]string{"enqueue", "--frontier", "nats://127.0.0.1:1", "--journal", "1", "--pages", "1-2", "--replicas", "6"}, "--replicas 6: expected 1 to 5"},
		{[]string{"worker"}, "--frontier"},
		// Each value is checked where it enters, the message naming the
		// flag, the value and what is expected.
		{[]string{"worker", "--frontier", "nats://127.0.0.1:1", "--ack-wait", "0"}, "--ack-wait 0: expected a positive duration"},
		{[]string{"worker", "--frontier", "nats://127.0.0.1:1", "--max-deliver", "0"}, "--max-deliver 0: expected 1 to 100 tries"},
		{[]string{"worker", "--frontier", "nats://127.0.0.1:1", "--exit-when-idle", "-1s"}, "--exit-when-idle -1s: expected 0 or more"},
		{[]string{"enqueue", "--frontier", "nats://127.0.0.1:1", "--journal", "0", "--pages", "1-2"}, "--journal 0: expected a positive journal id"},
		{[]string{"enqueue", "--frontier", "nats://127.0.0.1:1", "--journal", "1,x", "--pages", "1-2"}, "--journal 1,x: expected a positive journal id"},
		{[]string{"status"}, "--frontier"},
		{[]string{"status", "--frontier", "http://u:hunter2@127.0.0.1:1"}, "--frontier http://u:REDACTED@127.0.0.1:1: expected nats://HOST:PORT"},
		// --watch takes its value after a space or an "=", or none (2s).
		{[]string{"status", "--frontier", "http://127.0.0.1:1", "--watch"}, "--frontier http://127.0.0.1:1: expected nats://"},
		{[]string{"status", "--frontier", "http://127.0.0.1:1", "--watch", "5s"}, "--frontier http://127.0.0.1:1: expected nats://"},
		{[]string{"status", "--frontier", "nats://127.0.0.1:1", "--watch", "0.1s"}, "--watch 0.1s: expected a duration from 1s to 1h0m0s"},
		{[]string{"status", "--frontier", "nats://127.0.0.1:1", "--watch", "junk"}, "--watch junk: expected a duration such as 2s"},
		{[]string{"status", "--frontier", "nats://127.0.0.1:1", "--watch=3s", "junk"}, "status takes no arguments"},
	} {
		code, _, errs := crawl(t, tt.args...)
		if code != exitcode.Usage || !strings.Contains(errs, tt.want) {
			t.Errorf("%v: exit %d, stderr %q", tt.args, code, errs)
		}
	}
}

// With --log-format json every line a worker writes on stderr is JSON,
// its summary included.
func TestWorkerJSONSummary(t *testing.T) {
	t.Parallel()
	natsURL := natstest.Start(t).URL()
	site := testsite.New()
	site.SynthJournal(71, 2, 20)
	srv := httptest.NewServer(site)
	defer srv.Close()
	if code, _, errs := crawl(t, "enqueue", "--frontier", natsURL, "--journal", "71", "--pages", "1-3", "--log-format", "json"); code != exitcode.OK {
		t.Fatalf("enqueue: exit %d: %s", code, errs)
	}
	code, _, errs := crawl(t, "worker", "--frontier", natsURL, "--base-url", srv.URL, "--delay", "0", "--log-format", "json",
		"--sink", natsURL+"/papers.json?stream=JSONSUM", "--exit-when-idle", "500ms")
	if code != exitcode.OK {
		t.Fatalf("worker: exit %d: %s", code, errs)
	}
	var summary struct {
		Msg     string
		Summary struct {
			Kind  string
			Pages map[string]int
			Jobs  struct {
				Done    int `json:"done"`
				PastEnd int `json:"past_end"`
			}
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(errs), "\n") {
		var line map[string]any
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("a line of the worker's stderr is not JSON: %q", l)
		}
		if line["msg"] == "run summary" {
			json.Unmarshal([]byte(l), &summary)
		}
	}
	if summary.Summary.Kind != "worker" || summary.Summary.Pages["done"] != 2 || summary.Summary.Jobs.Done != 2 || summary.Summary.Jobs.PastEnd != 1 {
		t.Errorf("summary: %+v\n%s", summary, errs)
	}
}

// A frontier given as a list of full URLs, each with its password: no
// password in any error.
func TestFrontierListIsRedacted(t *testing.T) {
	t.Parallel()
	for _, cmd := range [][]string{{"status"}, {"runs"}} {
		code, out, errs := crawl(t, append(cmd, "--frontier", "nats://admin:hunter2@127.0.0.1:1,nats://admin:hunter2@127.0.0.1:2")...)
		if code == exitcode.OK || strings.Contains(out+errs, "hunter2") || !strings.Contains(errs, "admin:REDACTED@127.0.0.1:2") {
			t.Errorf("%v: exit %d: %s%s", cmd, code, out, errs)
		}
	}
}
