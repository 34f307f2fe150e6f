package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// atomVsJSONL backfills the synthetic site into jsonl: and into atom:,
// interleaved rounds (alternating which goes first), and prints each
// run's wall and CPU time and the median CPU ratio atom/jsonl: what the
// feeds cost (a feed rewritten whole, durably, at every write that
// changes it: with keep 100, the first five pages' writes; with keep
// 10000, every write).
func atomVsJSONL(crawlBin, base, dir string, pages, conc, rounds, keep int) {
	fmt.Printf("backfill of %d pages (%d papers) into jsonl: and into atom: (keep %d), concurrency %d, %d rounds interleaved\n", pages, 20*pages, keep, conc, rounds)
	run1 := func(kind string, round int) result {
		out := filepath.Join(dir, fmt.Sprintf("%s-%d", kind, round))
		defer os.RemoveAll(out)
		state := filepath.Join(dir, fmt.Sprintf("state-%s-%d", kind, round))
		defer os.RemoveAll(state)
		url := "jsonl:" + out + ".jsonl"
		if kind == "atom" {
			url = fmt.Sprintf("atom:%s?keep=%d", out, keep)
		}
		r, err := run(crawlBin, "backfill", "--journal", strconv.Itoa(journal), "--pages", fmt.Sprintf("1-%d", pages),
			"--base-url", base, "--delay", "0", "--concurrency", strconv.Itoa(conc), "--config", "config.yaml",
			"--state-dir", state, "--sink", url, "--log-format", "json")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if kind == "jsonl" {
			r.papers = lines(out + ".jsonl")
		} else {
			data, _ := os.ReadFile(filepath.Join(out, strconv.Itoa(journal)+".atom"))
			r.papers = strings.Count(string(data), "<entry>")
		}
		return r
	}
	fmt.Printf("%-6s %6s %9s %9s %12s %8s\n", "sink", "round", "wall", "cpu", "peak RSS", "entries")
	var ratios []float64
	for i := range rounds {
		var j, a result
		if i%2 == 0 {
			j, a = run1("jsonl", i), run1("atom", i)
		} else {
			a, j = run1("atom", i), run1("jsonl", i)
		}
		for _, x := range []struct {
			name string
			r    result
		}{{"jsonl", j}, {"atom", a}} {
			fmt.Printf("%-6s %6d %8.2fs %8.2fs %9.1f MB %8d\n", x.name, i+1, x.r.wall.Seconds(), x.r.cpu.Seconds(), float64(x.r.maxRSS)/1024, x.r.papers)
		}
		ratios = append(ratios, a.cpu.Seconds()/j.cpu.Seconds())
	}
	fmt.Printf("cpu ratios atom/jsonl by round: %s\n", fmtRatios(ratios))
	fmt.Printf("median cpu ratio atom/jsonl: %.3f\n", median(ratios))
}
