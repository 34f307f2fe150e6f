package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/testsite"
)

// buildBinary builds cmd/crawl once per test run.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "crawl")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go build: %v", err)
	}
	return bin
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
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	site := testsite.New()
	site.SynthJournal(9001, 30, 20)
	srv := httptest.NewServer(site)
	defer srv.Close()

	runTo := func(dir string, killAfter int) {
		t.Helper()
		cmd := exec.Command(bin, "backfill", "--journal", "9001", "--pages", "1-", "--base-url", srv.URL,
			"--delay", "0", "--concurrency", "3", "--config", filepath.Join(repoRoot, "config.yaml"),
			"--state-dir", filepath.Join(dir, "state"), "--sink", "jsonl:"+filepath.Join(dir, "papers.jsonl"))
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		commits := 0
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "page committed") {
				commits++
				if killAfter > 0 && commits == killAfter {
					cmd.Process.Kill() // SIGKILL: no cleanup of any kind
					break
				}
			}
		}
		err = cmd.Wait()
		if killAfter == 0 && err != nil {
			t.Fatalf("final run: %v", err)
		}
	}

	clean := t.TempDir()
	runTo(clean, 0)
	want := papersIn(t, filepath.Join(clean, "papers.jsonl"))
	if len(want) != 600 {
		t.Fatalf("clean run: %d papers, want 600", len(want))
	}

	killed := t.TempDir()
	for _, k := range []int{4, 7, 8} { // commits before each kill: 4, 11, 19 pages done
		runTo(killed, k)
	}
	runTo(killed, 0)
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
}
