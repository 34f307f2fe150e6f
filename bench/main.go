// Command bench measures crawl backfill against a minimal baseline (plain
// colly + goquery + encoding/json, bench/baseline) on the same synthetic
// site, side by side in one run: wall time, CPU time (user+sys), peak RSS
// (and peak anonymous RSS: the state store's memory map counts in RSS),
// papers/s, and the ratios.
//
//	go run ./bench [-pages 2000] [-concurrency 4] [-rounds 1]
//	go run ./bench -scale [-scale-pages 1000,10000,100000] [-journals 1000]
//	go run ./bench -atom -pages 500 -rounds 5
//
// With -rounds N the two run N times each, interleaved and alternating
// which goes first, and the ratios printed are the medians of the rounds'
// ratios: on a noisy machine one pair of runs can be off by 20 %.
//
// With -scale it prints instead how the crawl's costs grow: a backfill of
// each size on a fresh state (CPU per page, peak RSS, the state
// directory's bytes per paper as du -sb counts them, papers/s), then a
// nightly over -journals journals with nothing new (listing requests per
// journal, CPU).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/litcrawl/litcrawl/internal/testsite"
	"github.com/litcrawl/litcrawl/site"
)

const journal = 1001

// synthSite serves pages 1..n of a synthetic journal, generated per request (no
// memory grows with n).
type synthSite struct{ n int }

func (s synthSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	j, p, ok := site.Default.ParseURL(r.URL.Path)
	if !ok || j != journal || p > s.n {
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
	cpu, sys          time.Duration // user+sys, and sys alone
	maxRSS, maxAnonKB int64
	papers            int
	groups            float64 // commits of a crawl that logs JSON (0: unknown)
}

// logTail keeps the end of a command's standard error (for its error)
// and counts, from a crawl's JSON log, the groups it committed: each
// "page committed" line names its group's size, so a group of n pages is
// n lines of 1/n.
type logTail struct {
	partial []byte
	tail    []byte
	groups  float64
}

func (l *logTail) Write(p []byte) (int, error) {
	l.tail = append(l.tail, p...)
	if len(l.tail) > 64<<10 {
		l.tail = l.tail[len(l.tail)-32<<10:]
	}
	l.partial = append(l.partial, p...)
	for {
		line, rest, ok := bytes.Cut(l.partial, []byte("\n"))
		if !ok {
			break
		}
		var entry struct {
			Msg   string `json:"msg"`
			Batch int    `json:"batch"`
		}
		if bytes.Contains(line, []byte(`"page committed"`)) && json.Unmarshal(line, &entry) == nil && entry.Batch > 0 {
			l.groups += 1 / float64(entry.Batch)
		}
		l.partial = append(l.partial[:0], rest...)
	}
	return len(p), nil
}

// run starts a command and samples its peak RSS (VmHWM) and anonymous RSS
// from /proc until it exits. The peak is not taken from rusage: a child
// started with vfork reports its parent's high-water mark from before exec.
func run(name string, args ...string) (result, error) {
	cmd := exec.Command(name, args...)
	var stderr logTail
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var peak, peakAnon int64
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			r := result{wall: time.Since(start), maxRSS: peak, maxAnonKB: peakAnon, groups: stderr.groups}
			if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
				r.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
				r.sys = time.Duration(ru.Stime.Nano())
			}
			if err != nil {
				return r, fmt.Errorf("%s: %v\n%s", name, err, stderr.tail)
			}
			return r, nil
		case <-tick.C:
			hwm, anon := memory(cmd.Process.Pid)
			peak, peakAnon = max(peak, hwm), max(peakAnon, anon)
		}
	}
}

// memory reads a process's peak RSS and current anonymous RSS, in KiB.
func memory(pid int) (hwm, anon int64) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmHWM" && k != "RssAnon") {
			continue
		}
		n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
		if k == "VmHWM" {
			hwm = n
		} else {
			anon = n
		}
	}
	return hwm, anon
}

// lines counts a file's lines without holding it in memory (the bench's
// own memory must stay small: see run).
func lines(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n, buf := 0, make([]byte, 1<<20)
	for {
		k, err := f.Read(buf)
		n += bytes.Count(buf[:k], []byte("\n"))
		if err != nil {
			return n
		}
	}
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
	rounds := flag.Int("rounds", 1, "runs of each, interleaved (crawl first, then baseline first, …); the ratios printed are the medians")
	scaleMode := flag.Bool("scale", false, "print the cost-growth table instead (backfills of -scale-pages pages, then a nightly over -journals journals)")
	scalePages := flag.String("scale-pages", "1000,10000,100000", "with -scale: the backfill sizes, in pages of 20 papers")
	journals := flag.Int("journals", 1000, "with -scale: journals in the nightly with nothing new")
	fleetMode := flag.Bool("fleet", false, "measure the fleet's ledger instead: a papers bucket on a real nats-server (memory and disk a paper, round trips a page)")
	fleetPapers := flag.Int("fleet-papers", 1_000_000, "with -fleet: papers to commit")
	natsServer := flag.String("nats-server", "", "with -fleet: this nats-server binary (default: build the Go module's)")
	delay := flag.Duration("delay", 5*time.Millisecond, "with -fleet: one-way delay added between the look-up and the server")
	atomMode := flag.Bool("atom", false, "compare a backfill of -pages pages into atom: with one into jsonl: (CPU, interleaved -rounds)")
	atomKeep := flag.Int("atom-keep", 100, "with -atom: the feed's keep (1 to 10000; 100 is the default, 10000 makes every page change the feed)")
	crawlPath := flag.String("crawl", "", "measure this crawl binary instead of building ./cmd/crawl (an older version, say)")
	configPath := flag.String("config", "config.yaml", "with -scale: the configuration the crawl runs with (an older version's, for an older binary)")
	parseMemory := flag.Bool("parse-memory", false, "measure crawl parse's peak RSS on hostile pages instead (a 10 MB text capture of 2 million short lines, 16 MB of small elements, 1 MB of misnested markup read from a DOM)")
	versus := flag.String("versus", "", "run this crawl binary in the baseline's place (another build: before and after a change, side by side, interleaved); -versus-config is its configuration")
	versusConfig := flag.String("versus-config", "config.yaml", "with -versus: the configuration that binary runs with")
	crawlProfile := flag.String("crawl-cpuprofile", "", "write a CPU profile of the crawl's first backfill to this file (go tool pprof -top FILE)")
	nights := flag.Int("nights", 2, "with -scale: quiet nightlies in a row after the backfill (the first walks without a head to prove against)")
	flag.Parse()
	if *pages < 1 || *conc < 1 || *rounds < 1 || *journals < 1 {
		fmt.Fprintln(os.Stderr, "bench: -pages, -concurrency, -rounds and -journals must be at least 1")
		os.Exit(2)
	}
	sizes, err := parseSizes(*scalePages)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	dir, _ := os.MkdirTemp("", "litcrawl-bench")
	defer os.RemoveAll(dir)
	if *fleetMode {
		if *fleetPapers < 20 || *delay < 0 {
			fmt.Fprintln(os.Stderr, "bench: -fleet-papers must be at least 20 and -delay not negative")
			os.Exit(2)
		}
		fleet(dir, *natsServer, *fleetPapers, *delay)
		return
	}
	crawlBin := *crawlPath
	if crawlBin == "" {
		crawlBin = build(dir, "./cmd/crawl", "crawl")
	}
	if *scaleMode {
		scale(crawlBin, dir, *configPath, sizes, *journals, *conc, *nights)
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go http.Serve(ln, synthSite{n: *pages})
	base := "http://" + ln.Addr().String()
	if *atomMode {
		atomVsJSONL(crawlBin, base, dir, *pages, *conc, *rounds, *atomKeep)
		return
	}
	if *parseMemory {
		parseMemoryTable(crawlBin, dir)
		return
	}
	baseBin := build(dir, "./bench/baseline", "baseline")
	fmt.Printf("site: %d pages of 20 papers (%d KB a page) on %s; concurrency %d; %d rounds\n", *pages, len(testsite.Synth(journal, 1, 20))>>10, base, *conc, *rounds)

	runCrawl := func(round int) result {
		out := filepath.Join(dir, fmt.Sprintf("crawl-%d.jsonl", round))
		defer os.Remove(out)
		state := filepath.Join(dir, fmt.Sprintf("state-%d", round))
		defer os.RemoveAll(state)
		args := []string{"backfill", "--journal", strconv.Itoa(journal), "--pages", fmt.Sprintf("1-%d", *pages),
			"--base-url", base, "--delay", "0", "--concurrency", strconv.Itoa(*conc), "--config", "config.yaml",
			"--state-dir", state, "--sink", "jsonl:" + out, "--log-format", "json"}
		if *crawlProfile != "" && round == 0 {
			args = append(args, "--cpuprofile", *crawlProfile)
		}
		r, err := run(crawlBin, args...)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		r.papers = lines(out)
		return r
	}
	runBaseline := func(round int) result {
		out := filepath.Join(dir, fmt.Sprintf("baseline-%d.jsonl", round))
		defer os.Remove(out)
		args := []string{"-base-url", base, "-journal", strconv.Itoa(journal), "-pages", strconv.Itoa(*pages),
			"-concurrency", strconv.Itoa(*conc), "-out", out}
		bin := baseBin
		if *versus != "" {
			state := filepath.Join(dir, fmt.Sprintf("versus-state-%d", round))
			defer os.RemoveAll(state)
			bin, args = *versus, []string{"backfill", "--journal", strconv.Itoa(journal), "--pages", fmt.Sprintf("1-%d", *pages),
				"--base-url", base, "--delay", "0", "--concurrency", strconv.Itoa(*conc), "--config", *versusConfig,
				"--state-dir", state, "--sink", "jsonl:" + out, "--log-format", "json"}
		}
		r, err := run(bin, args...)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		r.papers = lines(out)
		return r
	}

	row := func(name string, r result) {
		fmt.Printf("%-9s %9.2fs %9.2fs %9.2fs %9.1f MB %9.1f MB %10d %10.0f\n", name, r.wall.Seconds(), r.cpu.Seconds(),
			r.sys.Seconds(), float64(r.maxRSS)/1024, float64(r.maxAnonKB)/1024, r.papers, float64(r.papers)/r.wall.Seconds())
	}
	fmt.Printf("%-9s %10s %10s %10s %12s %12s %10s %10s\n", "", "wall", "cpu", "of it sys", "peak RSS", "peak anon", "papers", "papers/s")
	var wall, cpu, rss, groups []float64
	for i := range *rounds {
		var c, b result
		if i%2 == 0 {
			c, b = runCrawl(i), runBaseline(i)
		} else {
			b, c = runBaseline(i), runCrawl(i)
		}
		row("crawl", c)
		row("baseline", b)
		if c.papers != b.papers {
			fmt.Printf("papers differ: crawl %d, baseline %d\n", c.papers, b.papers)
			os.Exit(1)
		}
		wall = append(wall, c.wall.Seconds()/b.wall.Seconds())
		cpu = append(cpu, c.cpu.Seconds()/b.cpu.Seconds())
		rss = append(rss, float64(c.maxRSS)/float64(b.maxRSS))
		if c.groups > 0 {
			groups = append(groups, float64(*pages)/c.groups)
		}
	}
	if len(groups) > 0 {
		fmt.Printf("crawl's commit groups: %.1f pages a group (each round's mean; the median of the rounds)\n", median(groups))
	}
	if *rounds > 1 {
		fmt.Printf("cpu ratios by round: %s\n", fmtRatios(cpu))
	}
	if *rounds > 1 {
		fmt.Printf("ratio crawl/baseline (medians of the rounds): wall %.2f, cpu %.2f, peak RSS %.2f\n", median(wall), median(cpu), median(rss))
		return
	}
	fmt.Printf("ratio crawl/baseline: wall %.2f, cpu %.2f, peak RSS %.2f\n", median(wall), median(cpu), median(rss))
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func fmtRatios(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x, 'f', 2, 64)
	}
	return strings.Join(parts, " ")
}

// parseMemoryTable prints crawl parse's peak RSS on pages built to cost
// the most memory a byte, and the ratio to the page's size.
func parseMemoryTable(crawlBin, dir string) {
	pages := []struct {
		name, format string
		build        func() []byte
	}{
		{"10 MB text capture, 2 million lines of 4 bytes", "text", func() []byte {
			return bytes.Repeat([]byte("abcd\n"), 2_000_000)
		}},
		{"16 MB of small elements (<p>ab</p>)", "html", func() []byte {
			return append(append([]byte("<html><body>"), bytes.Repeat([]byte("<p>ab</p>"), 16_000_000/9)...), "</body></html>"...)
		}},
		{"16 MB of unclosed inline tags (<b>x)", "html", func() []byte { return bytes.Repeat([]byte("<b>x"), 4<<20) }},
		{"16 MB of unclosed blocks (<div>x)", "html", func() []byte { return bytes.Repeat([]byte("<div>x"), (16<<20)/6) }},
		{"16 MB text capture of 1-byte lines (past the line cap)", "text", func() []byte { return bytes.Repeat([]byte("x\n"), 8<<20) }},
		{"1 MB of misnested links (read from a DOM)", "html", func() []byte {
			return append(append([]byte("<html><body>"), bytes.Repeat([]byte("<p><a href=/x>a<a href=/y>b</p>"), (1<<20-40)/33)...), "</body></html>"...)
		}},
	}
	measure := func(data []byte, format string) result {
		path := filepath.Join(dir, "hostile.page")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		r, err := run(crawlBin, "parse", "--config", "config.yaml", "--max-input-bytes", "100000000", "--format", format, path)
		// (a page of no paper exits 3, one past the line cap 4: the measure stands)
		if err != nil && !strings.Contains(err.Error(), "exit status 3") && !strings.Contains(err.Error(), "exit status 4") {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return r
	}
	base := measure([]byte("<html><body><p>x</p></body></html>"), "html")
	fmt.Printf("an empty parse: %.1f MB peak RSS (the process itself; the ratio is of the rest to the page)\n", float64(base.maxRSS)/1024)
	fmt.Printf("%-52s %10s %12s %8s %8s\n", "page", "size", "peak RSS", "ratio", "wall")
	for _, p := range pages {
		data := p.build()
		r := measure(data, p.format)
		fmt.Printf("%-52s %8.1f MB %9.1f MB %7.1fx %8s\n", p.name, float64(len(data))/1e6, float64(r.maxRSS)/1024,
			float64(r.maxRSS-base.maxRSS)*1024/float64(len(data)), r.wall.Round(time.Millisecond))
	}
}
