package report_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/history"
	"github.com/litcrawl/litcrawl/internal/report"
)

// The runs table numbers the runs as the charts do (1 the oldest, every
// run counted, a run without a summary too) and shows skipped pages.
func TestRunsAreNumberedAsTheChartsNumberThem(t *testing.T) {
	at := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	summary := func(id string) *history.RunSummary {
		return &history.RunSummary{RunID: id, Kind: "backfill", Started: at.Format(time.RFC3339), DurationSeconds: 2,
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

// Lines with the same values are drawn once with their names joined (a
// legend entry never points at a line hidden under another); the pages
// per second chart rates a worker by its busy time, not its idle time,
// and leaves out runs too short to have a rate.
func TestChartsShowEverySeriesAndRateWork(t *testing.T) {
	at := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	run := func(id string, kind history.Kind, i int, pages int64, duration, busy float64) history.RunView {
		rep := &history.RunSummary{RunID: id, Kind: kind, Started: at.Format(time.RFC3339), DurationSeconds: duration, BusySeconds: busy,
			Pages: map[string]int64{"done": pages}, Papers: map[string]int64{"new": 10 * pages},
			Quality: engine.Quality{Pages: int(pages), Records: 20, WithTitle: 20, WithDOI: 15, WithAuthor: 20, WithDate: 20}}
		return history.RunView{ID: id, Kind: kind, Status: history.StatusFinished, Started: at.Add(time.Duration(i) * time.Second),
			DurationSeconds: duration, Summary: rep}
	}
	runs := []history.RunView{
		run("run-c", "nightly", 2, 2, 0.01, 0.01), // 200 pages/s: too short to rate
		run("run-b", "worker", 1, 40, 400, 20),    // 2 pages/s of work, 0.1 over its length
		run("run-a", "backfill", 0, 30, 10, 10),   // 3 pages/s
	}
	var b bytes.Buffer
	if err := report.Write(&b, report.Data{StateDir: "st", Runs: runs, Generated: at}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	quality := between(page, `id="chart-quality"`, "</figure>")
	for _, want := range []string{`data-series="with title, authors, date; all fields plausible|title, DOI, authors, date minimum|with DOI|plausible minimum"`, "Lines with the same values are drawn once"} {
		if !strings.Contains(quality, want) {
			t.Errorf("the quality chart does not merge its equal lines (%q): %s", want, quality[:min(len(quality), 300)])
		}
	}
	speed := between(page, `id="chart-speed"`, "</figure>")
	if !strings.Contains(speed, `data-series="backfill|worker"`) {
		t.Errorf("the speed chart draws %s; want backfill and worker, not the 2-page nightly", speed[:min(len(speed), 200)])
	}
	// The y axis goes to about 3.3 (3 pages/s, and room above), not 200.
	if !strings.Contains(speed, ">3</text>") || strings.Contains(speed, ">200</text>") {
		t.Errorf("the speed chart's scale is not the work's")
	}
}

func between(s, from, to string) string {
	_, rest, _ := strings.Cut(s, from)
	out, _, _ := strings.Cut(rest, to)
	return out
}

// A history of one journal draws one line of new papers: all journals
// (which is that journal), not a second "other journals" line over it.
func TestOneJournalDrawsOneLine(t *testing.T) {
	at := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	var runs []history.RunView
	for i := range 3 {
		rep := &history.RunSummary{RunID: fmt.Sprint("run-", i), Kind: "nightly", Started: at.Format(time.RFC3339), DurationSeconds: 1,
			Pages: map[string]int64{"done": 2}, Papers: map[string]int64{"new": int64(10 * i)},
			PerJournal: map[string]engine.JournalCounts{"1001": {PagesDone: 2, PapersNew: int64(10 * i)}}}
		runs = append(runs, history.RunView{ID: rep.RunID, Kind: "nightly", Status: history.StatusFinished,
			Started: at.Add(time.Duration(i) * time.Hour), DurationSeconds: 1, Summary: rep})
	}
	var b bytes.Buffer
	if err := report.Write(&b, report.Data{StateDir: "st", Runs: runs, Generated: at}); err != nil {
		t.Fatal(err)
	}
	if papers := between(b.String(), `id="chart-papers"`, "</figure>"); !strings.Contains(papers, `data-series="all journals"`) {
		t.Errorf("the new papers chart of one journal: %.200s", papers)
	}
}
