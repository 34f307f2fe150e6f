// Command bench measures crawl backfill against a minimal baseline (plain
// colly + goquery + encoding/json, bench/baseline) on the same synthetic
// site, side by side in one run: wall time, CPU time (user+sys), peak RSS
// (and peak anonymous RSS: the state store's memory map counts in RSS),
// papers/s, and the ratios.
//
//	go run ./bench [-pages 2000] [-concurrency 4]
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/litcrawl/litcrawl/testsite"
)

const journal = 1001

// site serves pages 1..n of a synthetic journal, generated per request (no
// memory grows with n).
type site struct{ n int }

var rePage = regexp.MustCompile(`^/literature_d(\d+)(?:_(\d+))?\.htm$`)

func (s site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := rePage.FindStringSubmatch(r.URL.Path)
	if m == nil {
		http.NotFound(w, r)
		return
	}
	p := 1
	if m[2] != "" {
		p, _ = strconv.Atoi(m[2])
	}
	if p > s.n {
		http.NotFound(w, r)
		return
	}
	body := testsite.Synth(journal, p, 20)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Write(body)
}

type result struct {
	wall              time.Duration
	cpu               time.Duration
	maxRSS, maxAnonKB int64
	papers            int
}

// run starts a command and samples its anonymous RSS from /proc until it
// exits.
func run(name string, args ...string) (result, error) {
	cmd := exec.Command(name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var peakAnon int64
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			r := result{wall: time.Since(start), maxAnonKB: peakAnon}
			if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
				r.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
				r.maxRSS = ru.Maxrss // KiB on Linux
			}
			if err != nil {
				return r, fmt.Errorf("%s: %v\n%s", name, err, stderr.String())
			}
			return r, nil
		case <-tick.C:
			if kb := rssAnon(cmd.Process.Pid); kb > peakAnon {
				peakAnon = kb
			}
		}
	}
}

func rssAnon(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "RssAnon:"); ok {
			n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return n
		}
	}
	return 0
}

func lines(path string) int {
	data, _ := os.ReadFile(path)
	return bytes.Count(data, []byte("\n"))
}

func build(dir, pkg, name string) string {
	bin := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build:", err)
		os.Exit(1)
	}
	return bin
}

func main() {
	pages := flag.Int("pages", 2000, "pages of 20 papers on the synthetic site")
	conc := flag.Int("concurrency", 4, "requests at once, for both")
	flag.Parse()
	dir, _ := os.MkdirTemp("", "litcrawl-bench")
	defer os.RemoveAll(dir)
	crawlBin := build(dir, "./cmd/crawl", "crawl")
	baseBin := build(dir, "./bench/baseline", "baseline")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go http.Serve(ln, site{n: *pages})
	base := "http://" + ln.Addr().String()
	fmt.Printf("site: %d pages of 20 papers (%d KB a page) on %s; concurrency %d\n", *pages, len(testsite.Synth(journal, 1, 20))>>10, base, *conc)

	crawlOut := filepath.Join(dir, "crawl.jsonl")
	c, err := run(crawlBin, "backfill", "--journal", strconv.Itoa(journal), "--pages", fmt.Sprintf("1-%d", *pages),
		"--base-url", base, "--delay", "0", "--concurrency", strconv.Itoa(*conc), "--config", "config.yaml",
		"--state-dir", filepath.Join(dir, "state"), "--sink", "jsonl:"+crawlOut, "--log-format", "json")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	c.papers = lines(crawlOut)
	baseOut := filepath.Join(dir, "baseline.jsonl")
	b, err := run(baseBin, "-base-url", base, "-journal", strconv.Itoa(journal), "-pages", strconv.Itoa(*pages),
		"-concurrency", strconv.Itoa(*conc), "-out", baseOut)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	b.papers = lines(baseOut)

	row := func(name string, r result) {
		fmt.Printf("%-9s %9.2fs %9.2fs %9.1f MB %9.1f MB %10d %10.0f\n", name, r.wall.Seconds(), r.cpu.Seconds(),
			float64(r.maxRSS)/1024, float64(r.maxAnonKB)/1024, r.papers, float64(r.papers)/r.wall.Seconds())
	}
	fmt.Printf("%-9s %10s %10s %12s %12s %10s %10s\n", "", "wall", "cpu", "peak RSS", "peak anon", "papers", "papers/s")
	row("crawl", c)
	row("baseline", b)
	fmt.Printf("ratio crawl/baseline: wall %.2f, cpu %.2f, peak RSS %.2f\n", c.wall.Seconds()/b.wall.Seconds(),
		c.cpu.Seconds()/b.cpu.Seconds(), float64(c.maxRSS)/float64(b.maxRSS))
	if c.papers != b.papers {
		fmt.Printf("papers differ: crawl %d, baseline %d\n", c.papers, b.papers)
		os.Exit(1)
	}
}
