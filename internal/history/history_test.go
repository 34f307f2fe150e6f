package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/internal/config"
	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/state"
)

// A --report file's page log is read a line at a time: what is kept is
// its histogram and its failed pages (the first MaxFailedPagesRead), not
// its lines.
func TestReportFilePageLogIsStreamed(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"run_id":"r","kind":"backfill","started":"2026-12-01T03:00:00Z","pages":{"done":5},"page_log":[`)
	const n = 200_000
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		result, secs := "done", 0.2
		if i%10 == 0 {
			result, secs = "failed", 70
		}
		fmt.Fprintf(&b, `{"journal":1,"page":%d,"result":%q,"tries":3,"seconds":%g}`, i+1, result, secs)
	}
	b.WriteString(`],"papers":{"new":9}}`)
	rf, err := decodeSummaryFile(&b)
	if err != nil {
		t.Fatal(err)
	}
	h := rf.PageLog.FetchSeconds
	if rf.RunID != "r" || rf.Papers["new"] != 9 || rf.Pages["done"] != 5 {
		t.Errorf("summary: %+v", rf.RunSummary)
	}
	if h.Counts[2] != n*9/10 || h.Counts[len(h.Counts)-1] != n/10 {
		t.Errorf("histogram: %v", h.Counts)
	}
	if len(rf.PageLog.Failed) != MaxFailedPagesRead || rf.PageLog.Failed[0].Page != 1 {
		t.Errorf("%d failed pages kept", len(rf.PageLog.Failed))
	}
	for _, bad := range []string{`[]`, `{"page_log":{}}`, `{"page_log":[1]}`, `{"run_id":`} {
		if _, err := decodeSummaryFile(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// A summary that cannot mean what it says (edited by hand, from another
// tool) is cleaned up, not shown as is or left to break a chart: a
// histogram of other buckets is dropped, thresholds that are no shares
// too, an impossible duration is unknown, counts below 0 are 0.
func TestHistorySanitizesOddSummaries(t *testing.T) {
	rep := RunSummary{RunID: "r", Kind: "nightly", Started: "2026-12-01T03:00:00Z", DurationSeconds: 1e300,
		Pages: map[string]int64{"done": -4}, Retries: map[string]int{"x": -1},
		Error:             "sink postgres://u:hunter2@h/db: refused",
		Failures:          []engine.PageFailure{{Journal: 1, Page: 2, Error: "nats://u:hunter2@h: refused"}},
		PerJournal:        map[string]engine.JournalCounts{"1": {PapersNew: -99999}},
		FetchSeconds:      &engine.Histogram{LE: []float64{}, Counts: []int64{7}},
		QualityThresholds: &config.Quality{MinTitleShare: 1e308},
		Quality:           engine.Quality{Pages: 1, Records: 2, WithTitle: 9}}
	data, _ := json.Marshal(rep)
	v := view(state.Run{ID: "r", Started: time.Now(), Finished: time.Now().Add(-time.Hour), Summary: data}, config.Default().Quality)
	s := v.Summary
	if s == nil || s.FetchSeconds != nil || s.QualityThresholds != nil || s.DurationSeconds != 0 || v.DurationSeconds != 0 ||
		s.Pages["done"] != 0 || s.Retries["x"] != 0 || s.Quality.WithTitle != 2 || strings.Contains(s.Error, "hunter2") ||
		strings.Contains(s.Failures[0].Error, "hunter2") || s.PerJournal["1"].PapersNew != 0 {
		t.Errorf("sanitized: %+v, duration %v", s, v.DurationSeconds)
	}
}

// A summary with more retry causes than a crawl has keeps the most
// frequent ones and merges the rest: a chart's legend stays readable.
func TestHistoryMergesRareCauses(t *testing.T) {
	rep := RunSummary{RunID: "r", Kind: "worker", Started: "2026-12-01T03:00:00Z", Retries: map[string]int{}}
	for i := range 40 {
		rep.Retries[fmt.Sprintf("cause-%02d", i)] = i + 1
	}
	sanitize(&rep)
	if len(rep.Retries) != maxCauses || rep.Retries["cause-39"] != 40 || rep.Retries["other causes"] != (1+25)*25/2 {
		t.Errorf("causes: %d, %v", len(rep.Retries), rep.Retries)
	}
}

// A run's rate is per second of work: a worker's idle time waiting for
// jobs does not count; a busy time longer than the run is not believed.
func TestPagesPerSecondLeavesIdleTimeOut(t *testing.T) {
	v := func(duration, busy float64) RunView {
		return FromReport(RunSummary{RunID: "r", Kind: "worker", Started: "2026-12-01T03:00:00Z", DurationSeconds: duration,
			BusySeconds: busy, Pages: map[string]int64{"done": 40}}, config.Default().Quality)
	}
	for _, c := range []struct {
		duration, busy, want float64
	}{{400, 20, 2}, {400, 0, 0.1}, {400, 800, 0.1}} {
		if got, ok := v(c.duration, c.busy).PagesPerSecond(); !ok || got != c.want {
			t.Errorf("40 pages in %vs, busy %vs: %v pages/s, want %v", c.duration, c.busy, got, c.want)
		}
	}
}

// While a crawl holds the state, the history shows it, under way, first
// (its snapshot is written before its run is recorded), and does not
// wait long for the state.
func TestHistoryShowsTheRunUnderWay(t *testing.T) {
	dir := t.TempDir()
	st, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	host, _ := os.Hostname()
	old := state.Run{ID: "20261201T030000Z-old", Kind: "backfill", Started: time.Now().Add(-time.Hour), Finished: time.Now().Add(-50 * time.Minute)}
	if err := st.PutRun(old); err != nil {
		t.Fatal(err)
	}
	cur := state.Run{ID: "20261205T090000Z-cur", Kind: "nightly", Started: time.Now(), PID: os.Getpid(), Host: host}
	if err := st.WriteSnapshot(cur); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	h, err := Read(dir, config.Default().Quality)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("reading the history while a crawl holds the state took %v", took)
	}
	if len(h.Runs) != 2 || h.Runs[0].ID != cur.ID || h.Runs[0].Status != StatusRunning || h.HeldBy == nil {
		t.Fatalf("history %+v", h.Runs)
	}
}
