package report_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/history"
	"github.com/litcrawl/litcrawl/report"
)

// The runs table numbers the runs as the charts do (1 the oldest, every
// run counted, a run without a summary too) and shows skipped pages.
func TestRunsAreNumberedAsTheChartsNumberThem(t *testing.T) {
	at := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	summary := func(id string) *history.RunReport {
		return &history.RunReport{RunID: id, Kind: "backfill", Started: at.Format(time.RFC3339), DurationSeconds: 2,
			Pages: map[string]int64{"done": 3, "failed": 0, "skipped": 5, "past_end": 1}, Papers: map[string]int64{"new": 60}}
	}
	runs := []history.RunView{ // newest first, seconds apart: the charts number them
		{ID: "run-c", Kind: "backfill", Status: history.StatusFinished, Started: at.Add(2 * time.Second), Summary: summary("run-c")},
		{ID: "run-b", Kind: "nightly", Status: history.StatusKilled, Started: at.Add(time.Second)},
		{ID: "run-a", Kind: "backfill", Status: history.StatusFinished, Started: at, Summary: summary("run-a")},
	}
	var b bytes.Buffer
	if err := report.Write(&b, report.Data{StateDir: "st", Runs: runs, Generated: at}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		`<th class="n">#</th>`, `<th class="n">Skipped</th>`,
		`<td class="n">3</td><td>run-c</td>`, `<td class="n">2</td><td>run-b</td>`, `<td class="n">1</td><td>run-a</td>`,
		`<td class="n">0</td><td class="n">5</td><td class="n">1</td>`, // failed, skipped, past the end
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the report lacks %s", want)
		}
	}
	// On the charts' axis, run-c is 3, not 2 (the killed run counts).
	if !strings.Contains(page, ">3</text>") {
		t.Error("the charts do not number the newest run 3")
	}
}
