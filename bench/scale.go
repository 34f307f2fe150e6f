package main

import (
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/litcrawl/litcrawl/internal/testsite"
	"github.com/litcrawl/litcrawl/site"
)

// multiSite serves pages 1..pages of journals first..first+journals-1,
// generated per request, and counts the listing requests (those past the
// end, answered 404, too).
type multiSite struct {
	first    int64
	journals int64
	pages    int
	requests atomic.Int64
}

func (s *multiSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	j, p, ok := site.Default.ParseURL(r.URL.Path)
	if ok && j >= s.first && j < s.first+s.journals {
		s.requests.Add(1) // a page past the end is a request too
	}
	if !ok || j < s.first || j >= s.first+s.journals || p > s.pages {
		http.NotFound(w, r)
		return
	}
	body := testsite.Synth(j, p, 20)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Write(body)
}

// serve starts a site on loopback and returns its base URL.
func serve(h http.Handler) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go http.Serve(ln, h)
	return "http://" + ln.Addr().String()
}

// duBytes is what du -sb prints for dir: the apparent sizes of the
// directory and everything in it.
func duBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := d.Info(); err == nil {
			n += info.Size()
		}
		return nil
	})
	return n
}

// parseSizes reads a comma-separated list of page counts.
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-scale-pages: %q is not a page count (a list such as 1000,10000,100000)", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// scale prints the cost-growth table: a backfill of each size on a fresh
// state, then a nightly over journals journals with nothing new.
func scale(crawlBin, dir, config string, sizes []int, journals, conc, nights int) {
	fmt.Printf("backfills of one journal, pages of 20 papers, concurrency %d, fresh state each:\n", conc)
	fmt.Printf("%9s %10s %10s %11s %12s %12s %14s %12s %10s\n", "pages", "papers", "wall", "CPU/page", "peak RSS", "peak anon", "state bytes", "bytes/paper", "papers/s")
	for _, n := range sizes {
		s := &multiSite{first: journal, journals: 1, pages: n}
		base := serve(s)
		stateDir := filepath.Join(dir, fmt.Sprintf("scale-state-%d", n))
		out := filepath.Join(dir, fmt.Sprintf("scale-%d.jsonl", n))
		r, err := run(crawlBin, "backfill", "--journal", strconv.Itoa(journal), "--pages", fmt.Sprintf("1-%d", n),
			"--base-url", base, "--delay", "0", "--concurrency", strconv.Itoa(conc), "--config", config,
			"--state-dir", stateDir, "--sink", "jsonl:"+out, "--log-format", "json")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		r.papers = lines(out)
		if r.papers != 20*n {
			fmt.Fprintf(os.Stderr, "bench: %d pages delivered %d papers, not %d\n", n, r.papers, 20*n)
			os.Exit(1)
		}
		size := duBytes(stateDir)
		fmt.Printf("%9d %10d %9.1fs %9.2fms %9.1f MB %9.1f MB %14d %12.1f %10.0f\n", n, r.papers, r.wall.Seconds(),
			r.cpu.Seconds()*1000/float64(n), float64(r.maxRSS)/1024, float64(r.maxAnonKB)/1024, size, float64(size)/float64(r.papers), float64(r.papers)/r.wall.Seconds())
		os.Remove(out)
		os.RemoveAll(stateDir)
	}

	// A nightly over many journals whose first pages hold only known
	// papers: what a quiet night costs.
	s := &multiSite{first: journal, journals: int64(journals), pages: 2}
	base := serve(s)
	stateDir := filepath.Join(dir, "scale-nightly")
	defer os.RemoveAll(stateDir)
	args := []string{"--base-url", base, "--delay", "0", "--concurrency", strconv.Itoa(conc), "--config", config,
		"--state-dir", stateDir, "--sink", "jsonl:" + filepath.Join(dir, "scale-nightly.jsonl"), "--log-format", "json"}
	for j := range journals {
		args = append(args, "--journal", strconv.Itoa(journal+j))
	}
	if _, err := run(crawlBin, append([]string{"backfill", "--pages", "1-2"}, args...)...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	known := lines(filepath.Join(dir, "scale-nightly.jsonl"))
	for night := 1; night <= nights; night++ {
		s.requests.Store(0)
		r, err := run(crawlBin, append([]string{"nightly"}, args...)...)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if got := lines(filepath.Join(dir, "scale-nightly.jsonl")); got != known {
			fmt.Fprintf(os.Stderr, "bench: the nightly delivered %d papers, not 0\n", got-known)
			os.Exit(1)
		}
		req := s.requests.Load()
		fmt.Printf("\nnightly %d over %d journals with nothing new (%d papers known): %d listing requests (%.2f a journal), CPU %.2f s (%.2f ms a journal), wall %.1f s, peak RSS %.1f MB\n",
			night, journals, known, req, float64(req)/float64(journals), r.cpu.Seconds(), r.cpu.Seconds()*1000/float64(journals), r.wall.Seconds(), float64(r.maxRSS)/1024)
	}
}
