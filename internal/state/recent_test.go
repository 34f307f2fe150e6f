package state_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/internal/state"
)

// synthPage is page n's papers: ten, the first of which also was on page
// n-1 (pushed down the listing), and each tenth without a DOI.
func synthPage(n int) []ledger.Paper {
	var ps []ledger.Paper
	for i := range 10 {
		k := n*9 + i
		if i == 0 && n > 0 {
			k = (n-1)*9 + 9 // the last of the page before
		}
		p := ledger.Paper{ID: fmt.Sprintf("p%d", k), DOI: fmt.Sprintf("10.5555/J.%d", k)}
		if k%10 == 3 {
			p.DOI = ""
		}
		ps = append(ps, p)
	}
	return ps
}

// runOf is the run that commits page n.
func runOf(n int) string { return fmt.Sprintf("run-%02d", n/25) }

// checkPages asserts that every paper of pages 0..n-1 is known by its id
// and by its DOI, with the run that committed it first.
func checkPages(t *testing.T, s *state.Store, n int) {
	t.Helper()
	first := map[string]string{}
	for p := range n {
		for _, pp := range synthPage(p) {
			if _, ok := first[pp.ID]; !ok {
				first[pp.ID] = runOf(p)
			}
			ways := []ledger.Paper{pp, {ID: pp.ID}}
			if pp.DOI != "" {
				ways = append(ways, ledger.Paper{ID: "other", DOI: strings.ToLower(pp.DOI)})
			}
			for _, w := range ways {
				run, known, err := s.FirstRun(ctx, w)
				if err != nil || !known || run != first[pp.ID] {
					t.Fatalf("after %d pages, %+v: known %v, first run %q, want %q (%v)", n, w, known, run, first[pp.ID], err)
				}
			}
		}
	}
	if _, known, _ := s.FirstRun(ctx, ledger.Paper{ID: "p999999", DOI: "10.5555/none"}); known {
		t.Fatal("a paper never committed is known")
	}
}

// Papers recorded in the recent log are found, before, during and after
// it is merged into the slots, across reopens, by id and by DOI, with the
// run that first delivered them; a paper is new once.
func TestRecentLogMerges(t *testing.T) {
	open := tunedOpen(merging(57, 7))
	dir := t.TempDir()
	s := open(t, dir)
	fresh := 0
	for p := range 120 {
		fresh += commitPage(t, s, ledger.Page{Key: ledger.PageKey{Journal: 1, Page: p + 1}, Papers: synthPage(p), OnPage: 10, RunID: runOf(p), At: t0}, nil)
		if p%17 == 0 {
			checkPages(t, s, p+1)
		}
		if p == 60 {
			s.Close()
			s = open(t, dir)
		}
	}
	if fresh != 120*9+1 {
		t.Errorf("%d new papers, want %d", fresh, 120*9+1)
	}
	checkPages(t, s, 120)
	if got := seen(t, s, "p500", "", "run-02"); got != ledger.DeliveredThisRun {
		t.Errorf("a paper of run-02 for run-02: %v", got)
	}
	if got := seen(t, s, "x", "10.5555/j.500", "run-03"); got != ledger.DeliveredBefore {
		t.Errorf("a paper of run-02 for run-03: %v", got)
	}
	s.Close()
	c, problems, err := state.Check(dir)
	if err != nil || len(problems) > 0 || c.Papers != 120*9+1 || c.Keys != 2*(120*9+1)-(120*9+1+7)/10 {
		t.Errorf("check: %+v %v %v", c, problems, err)
	}
	s = open(t, dir)
	checkPages(t, s, 120)
	s.Close()
}

// Look-ups running beside commits and merges find every paper committed
// before they began.
func TestLookupsDuringMerges(t *testing.T) {
	open := tunedOpen(merging(40, 5))
	s := open(t, t.TempDir())
	defer s.Close()
	var committed atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				n := int(committed.Load())
				if n == 0 {
					continue
				}
				p := (i*7 + g) % n
				got, err := s.Lookup(ctx, synthPage(p), "a later run")
				if err != nil {
					t.Error(err)
					return
				}
				for j, sn := range got {
					if sn.Delivery != ledger.DeliveredBefore {
						t.Errorf("page %d of %d committed, paper %d: %v", p, n, j, sn)
						return
					}
				}
			}
		}()
	}
	for p := range 200 {
		commitPage(t, s, ledger.Page{Key: ledger.PageKey{Journal: 1, Page: p + 1}, Papers: synthPage(p), OnPage: 10, RunID: runOf(p), At: t0}, nil)
		committed.Store(int64(p + 1))
	}
	close(stop)
	wg.Wait()
}

// Killed (SIGKILL) in the middle of a merge, the store opens and knows
// every paper committed, and goes on.
func TestMergeKilled(t *testing.T) {
	if dir := os.Getenv("LITCRAWL_MERGE_CHILD"); dir != "" {
		pages := 0
		merges := 0
		tun := merging(50, 6)
		tun.Hook = func(step string) {
			if step == "merge" {
				if merges++; merges == 40 {
					fmt.Println("stopped after", pages)
					select {}
				}
			}
		}
		s, err := state.OpenTuned(dir, tun)
		if err != nil {
			fmt.Println("open:", err)
			os.Exit(1)
		}
		for p := range 100 {
			if _, err := s.Commit(ctx, ledger.Group{Pages: []ledger.Page{{Key: ledger.PageKey{Journal: 1, Page: p + 1}, Papers: synthPage(p), RunID: runOf(p), At: t0}}}); err != nil {
				fmt.Println("commit:", err)
				os.Exit(1)
			}
			pages = p + 1
		}
		fmt.Println("not stopped")
		os.Exit(0)
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestMergeKilled$")
	cmd.Env = append(os.Environ(), "LITCRAWL_MERGE_CHILD="+dir)
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	cmd.Process.Kill()
	io.Copy(io.Discard, out)
	cmd.Wait()
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "stopped after ")))
	if err != nil || n < 5 {
		t.Fatalf("the committing process said %q", line)
	}
	open := tunedOpen(merging(50, 6))
	s := open(t, dir)
	checkPages(t, s, n)
	for p := n; p < n+30; p++ {
		commitPage(t, s, ledger.Page{Key: ledger.PageKey{Journal: 1, Page: p + 1}, Papers: synthPage(p), RunID: runOf(p), At: t0}, nil)
	}
	checkPages(t, s, n+30)
	s.Close()
}
