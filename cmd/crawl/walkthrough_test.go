package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/internal/config"
	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/frontier"
	"github.com/litcrawl/litcrawl/internal/history"
	"github.com/litcrawl/litcrawl/internal/natstest"
)

// The walkthrough of docs/distributed.md ("A fleet, step by step") is run
// as written, every crawl command of it in its order, with the test's
// ports for the documented ones: a three-node cluster, three workers, one
// killed, the jobs stream's leader stopped, the fleet drained, its runs
// and report read. Every paper reaches the records stream once. It runs on
// Debian's nats-server 2.9.10, as the walkthrough does, and on the Go
// module's server.
func TestDistributedWalkthrough(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs a cluster and worker processes")
	}
	for _, k := range []struct {
		kind  string
		start func(t *testing.T) natstest.Nodes
	}{
		{"debian 2.9.10", func(t *testing.T) natstest.Nodes { return natstest.StartBinaryCluster(t, 3).Any() }},
		{"module", func(t *testing.T) natstest.Nodes { return natstest.StartCluster(t, 3).Any() }},
	} {
		t.Run(k.kind, func(t *testing.T) {
			t.Parallel()
			walkthrough(t, k.start(t))
		})
	}
}

func walkthrough(t *testing.T, c natstest.Nodes) {
	bin := buildBinary(t)
	cmds := walkthroughCommands(t)
	var hosts []string
	for _, n := range c.Nodes {
		hosts = append(hosts, n.HostPort())
	}
	dir := t.TempDir()
	subs := []string{"nats://127.0.0.1:4222,127.0.0.1:4223,127.0.0.1:4224", "nats://" + strings.Join(hosts, ","),
		"nats://127.0.0.1:4222/", c.Nodes[0].URL() + "/", "127.0.0.1:8090", "127.0.0.1:0", "-o fleet.html", "-o " + filepath.Join(dir, "fleet.html")}
	ran := 0
	// background starts a command's process and returns it with the first
	// line of its stderr that holds marker (its address), then lets the
	// rest go.
	background := func(args []string, marker string) (*exec.Cmd, string) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = t.TempDir()
		pipe, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			if _, rest, ok := strings.Cut(sc.Text(), marker); ok {
				go io.Copy(io.Discard, pipe)
				return cmd, strings.Fields(rest)[0]
			}
		}
		t.Fatalf("%v never said %q", args, marker)
		return nil, ""
	}
	var workers []*exec.Cmd
	var workerLogs []*natstest.LockedBuffer
	plainStatus := 0
	for _, line := range cmds {
		args := shellWords(t, strings.NewReplacer(subs...).Replace(strings.TrimSuffix(line, " &")))[1:]
		ran++
		switch {
		case args[0] == "serve":
			_, site := background(append(args, "--addr", "127.0.0.1:0"), "serving 80 pages on ")
			subs = append(subs, "http://127.0.0.1:8089", site)
		case args[0] == "enqueue":
			if code, _, errs := crawl(t, args...); code != exitcode.OK || !strings.Contains(errs, "enqueued 80 jobs") {
				t.Fatalf("%s: exit %d: %s", line, code, errs)
			}
		case args[0] == "worker":
			for range 3 {
				cmd := exec.Command(bin, args...)
				cmd.Dir = t.TempDir()
				buf := &natstest.LockedBuffer{}
				cmd.Stderr = buf
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
				workers, workerLogs = append(workers, cmd), append(workerLogs, buf)
			}
		case args[0] == "status" && strings.HasSuffix(line, "&"): // --serve
			_, addr := background(args, "serving the fleet's status on ")
			resp, err := http.Get(addr)
			if err != nil {
				t.Fatal(err)
			}
			page, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(page), "Fleet status") {
				t.Errorf("the live page: %s\n%.300s", resp.Status, page)
			}
		case args[0] == "status" && strings.Contains(line, "--json"):
			// Step 5: a worker is killed once it has done a job; status
			// shows it gone.
			// The first worker that has done a job is the one killed (a
			// worker slow to start on a loaded machine may get none).
			natstest.Eventually(t, 30*time.Second, "no worker did a job", func() bool {
				for i, l := range workerLogs {
					if strings.Contains(l.String(), "job done") {
						workers[0], workers[i] = workers[i], workers[0]
						workerLogs[0], workerLogs[i] = workerLogs[i], workerLogs[0]
						return true
					}
				}
				return false
			})
			workers[0].Process.Kill()
			natstest.Eventually(t, 20*time.Second, "status never showed the killed worker gone", func() bool {
				code, out, _ := crawl(t, args...)
				var got struct{ Status frontier.Status }
				if code != exitcode.OK || json.Unmarshal([]byte(out), &got) != nil {
					return false
				}
				for _, w := range got.Status.Workers {
					if w.PID == workers[0].Process.Pid {
						return w.State == frontier.WorkerGone
					}
				}
				return false
			})
		case args[0] == "status":
			plainStatus++
			if plainStatus == 2 { // step 6: the jobs stream's leader goes
				if l := c.StreamLeader(frontier.JobsStream); l != nil {
					l.Stop()
					t.Logf("%s: stopped %s, the jobs stream's leader", c.Kind, l.Name())
				}
			}
			code, out, errs := crawl(t, args...)
			if code != exitcode.OK || !strings.Contains(out, "workers: ") || !strings.Contains(out, "jobs stream led by ") {
				t.Fatalf("%s: exit %d: %s%s", line, code, out, errs)
			}
		case args[0] == "runs" && args[1] == "show":
			code, out, errs := crawl(t, append(args, "--state-dir", filepath.Join(dir, "no-state"))...)
			if code != exitcode.OK || !strings.Contains(out, "worker") {
				t.Errorf("%s: exit %d: %s%s", line, code, out, errs)
			}
		case args[0] == "runs":
			// Step 7: the two workers left exit once the fleet is drained.
			for i, w := range workers[1:] {
				if err := w.Wait(); err != nil {
					t.Errorf("worker %d: %v\n%s", i+2, err, workerLogs[i+1].String())
				}
			}
			code, out, errs := crawl(t, append(args, "--json", "--state-dir", filepath.Join(dir, "no-state"))...)
			var runs []history.RunView
			if code != exitcode.OK || json.Unmarshal([]byte(out), &runs) != nil {
				t.Fatalf("%s: exit %d: %s%s", line, code, out, errs)
			}
			var fresh, failed int64
			for _, r := range runs {
				if r.Summary != nil {
					fresh, failed = fresh+r.Summary.Papers["new"], failed+r.Summary.Pages["failed"]
				}
			}
			// A job that failed in the election was tried again: no page
			// failed for good. The new papers are the stream's, but for a
			// page the killed worker committed in the milliseconds before
			// it could count it (docs/distributed.md): at most one page
			// for each job it held (fetch.concurrency).
			held := int64(config.Default().Fetch.Concurrency) * 20
			if len(runs) != 3 || fresh > 1600 || fresh < 1600-held || failed != 0 {
				t.Errorf("fleet runs: %d with %d new papers and %d failed pages, want 3, 1600 (at least %d) and 0", len(runs), fresh, failed, 1600-held)
			} else if fresh != 1600 {
				t.Logf("the killed worker was killed between a commit and its count: the history has %d new papers of 1600", fresh)
			}
		case args[0] == "report":
			if code, _, errs := crawl(t, append(args, "--state-dir", filepath.Join(dir, "no-state"))...); code != exitcode.OK {
				t.Fatalf("%s: exit %d: %s", line, code, errs)
			}
			if _, err := os.Stat(filepath.Join(dir, "fleet.html")); err != nil {
				t.Error(err)
			}
		default:
			t.Fatalf("the walkthrough has a command this test does not run: %s", line)
		}
	}
	if ran != 10 {
		t.Errorf("ran %d commands of the walkthrough, want its 10", ran)
	}
	var live string
	for _, n := range c.Nodes {
		if n.Running() {
			live = n.URL()
		}
	}
	ids := natstest.RecordIDs(t, live, "FLEET")
	if len(ids) != 1600 {
		t.Errorf("%d papers in the records stream, want 1600", len(ids))
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("paper %s %d times", id, n)
		}
	}
}

// walkthroughCommands are the crawl command lines of the walkthrough's
// shell block in docs/distributed.md.
func walkthroughCommands(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "distributed.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "## A fleet, step by step")
	_, block, ok2 := strings.Cut(section, "```sh\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/distributed.md has no walkthrough block")
	}
	var cmds []string
	for _, l := range strings.Split(block, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "crawl ") {
			cmds = append(cmds, l)
		}
	}
	return cmds
}

// shellWords splits a command line as a shell would, for the quoting the
// docs use: words, and single-quoted words.
func shellWords(t *testing.T, line string) []string {
	var words []string
	var cur strings.Builder
	quoted, in := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			quoted, in = !quoted, true
		case r == ' ' && !quoted:
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quoted {
		t.Fatalf("unbalanced quote in %q", line)
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}
