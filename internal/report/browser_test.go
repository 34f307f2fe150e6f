package report_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/internal/browsertest"
	"github.com/litcrawl/litcrawl/internal/config"
	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/history"
	"github.com/litcrawl/litcrawl/internal/report"
	"github.com/litcrawl/litcrawl/internal/state"
)

// fixtureState makes a state whose history has every kind of data: runs
// of both kinds over ten days across ten journals (more than get a line of
// their own), retries of several causes, fetch-time histograms, a quality
// alarm, failed pages, a nightly walk stopped by max_pages, a run killed
// before its end, and a run recorded before per-journal counts, exit codes
// and histograms were (its fetch times come from a --report page log).
func fixtureState(t *testing.T) (dir string, logs map[string]history.PageLogSummary) {
	t.Helper()
	dir = t.TempDir()
	st, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	thresholds := config.Default().Quality
	day0 := time.Date(2026, 11, 20, 3, 0, 0, 0, time.UTC)
	put := func(r state.Run, rep *history.RunSummary) {
		t.Helper()
		if rep != nil {
			data, err := json.Marshal(rep)
			if err != nil {
				t.Fatal(err)
			}
			r.Summary = data
		}
		if err := st.PutRun(r); err != nil {
			t.Fatal(err)
		}
	}
	// An old run: no journals, exit code, per-journal counts or histogram.
	oldID := "20261119T030000Z-00000001"
	started := day0.Add(-24 * time.Hour)
	put(state.Run{ID: oldID, Kind: "backfill", Started: started, Finished: started.Add(90 * time.Second)}, &history.RunSummary{
		RunID: oldID, Kind: "backfill", Started: started.Format(time.RFC3339), DurationSeconds: 90,
		Pages: map[string]int64{"done": 40, "failed": 0, "past_end": 1}, Papers: map[string]int64{"new": 800, "known": 0},
		Retries: map[string]int{"http-5xx": 3}, Failures: []engine.PageFailure{},
		Quality: engine.Quality{Pages: 40, Records: 800, WithTitle: 800, WithDOI: 780, WithAuthor: 790, WithDate: 800}})
	logs = map[string]history.PageLogSummary{oldID: {
		FetchSeconds: engine.Histogram{LE: engine.FetchSecondsBounds, Counts: []int64{0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0}},
	}}
	for d := range 10 {
		started := day0.Add(time.Duration(d) * 24 * time.Hour)
		id := fmt.Sprintf("%s-%08x", started.Format("20060102T150405Z"), d+2)
		journals := []int64{11, 12, 13, 14, 15, 16, 17, 18, 19, 20}
		per := map[string]engine.JournalCounts{}
		var fresh int64
		for i, j := range journals {
			c := engine.JournalCounts{PagesDone: 2, PapersNew: int64((d*7 + i*5) % 23), PapersKnown: 20}
			per[fmt.Sprint(j)] = c
			fresh += c.PapersNew
		}
		code := 0
		rep := &history.RunSummary{RunID: id, Kind: "nightly", Started: started.Format(time.RFC3339), DurationSeconds: 20 + float64(d),
			Journals: journals, Pages: map[string]int64{"done": 20, "failed": 0, "past_end": 0},
			Papers: map[string]int64{"new": fresh, "known": 200}, Retries: map[string]int{"http-5xx": d % 3, "timeout": d % 2, "http-429": (d + 1) % 4},
			Failures: []engine.PageFailure{}, PerJournal: per, QualityThresholds: &thresholds, ExitCode: &code,
			Quality:      engine.Quality{Pages: 20, Records: 400, WithTitle: 400, WithDOI: 390 - 10*d, WithAuthor: 395, WithDate: 400},
			FetchSeconds: &engine.Histogram{LE: engine.FetchSecondsBounds, Counts: []int64{2, 5, 8, 3, 1, 1, 0, 0, 0, 0, int64(d % 2)}}}
		switch d {
		case 4: // pages failed
			code = 3
			rep.Pages["failed"] = 2
			rep.Failures = []engine.PageFailure{{Journal: 12, Page: 3, Error: "HTTP 403 Forbidden <blocked>"}, {Journal: 15, Page: 1, Error: "timeout after 30s"}}
		case 6: // a quality alarm
			code = 4
			rep.Quality.WithAuthor = 100
		case 8: // a walk stopped by max_pages, and what the walks found
			rep.IncompleteWalks = []engine.IncompleteWalk{{Journal: 17, Page: 50}}
			rep.WalkNotes = []engine.WalkNote{{Journal: 17, Text: "page 7: paper 220415, delivered before, is inside the gap at page 6 (moved, re-dated or listed twice): not taken as the gap's end"}}
		}
		// What the audits cover: journal 17 not yet round, 11 round 40 days before.
		rep.Audit = engine.SumAudits([]engine.AuditCoverage{
			{Journal: 11, From: 12, To: 12, Next: 13, Pages: 60, Round: started.Add(-40 * 24 * time.Hour).Unix(), Since: started.Add(-2 * 24 * time.Hour).Unix()},
			{Journal: 17, From: 30, To: 30, Next: 31, Since: started.Add(-30 * 24 * time.Hour).Unix()},
		})
		put(state.Run{ID: id, Kind: "nightly", Started: started, Finished: started.Add(time.Duration(rep.DurationSeconds * float64(time.Second))), Journals: journals, PID: 4242, Host: "crawler-1"}, rep)
	}
	// Killed before its end.
	put(state.Run{ID: "20261201T030000Z-0000dead", Kind: "nightly", Started: day0.Add(11 * 24 * time.Hour), Journals: []int64{11}, PID: 4343, Host: "crawler-1"}, nil)
	return dir, logs
}

// open loads a report file in headless Chromium.
func open(t *testing.T, file string) (charts []browsertest.Chart, consoleErrors, requests []string, png []byte) {
	t.Helper()
	p := browsertest.Open(t, "file://"+file)
	return p.Charts, p.ConsoleErrors, p.Requests, p.PNG
}

// The report of a history with every kind of data, opened in headless
// Chromium: every chart is drawn, with the series expected, titles and
// axis labels; the page logs no console error and asks for nothing from
// the network.
func TestReportInBrowser(t *testing.T) {
	dir, logs := fixtureState(t)
	h, err := history.Read(dir, config.Default().Quality)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "report.html")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	err = report.Write(f, report.Data{StateDir: dir, Runs: h.Runs, Thresholds: config.Default().Quality, PageLogs: logs,
		Sources: []string{"old-run.json"}, Generated: time.Now()})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	// The audit's coverage and what the walks found, as the latest run
	// with an audit says it: the most stale journal first.
	page, _ := os.ReadFile(out)
	for _, w := range []string{`<h2 id="audit">Audit coverage</h2>`, "1 of 2 journals not yet audited whole (the most to go: journal 17, pages from 31 on never re-read)",
		`<td class="bad">pages from 31 on never re-read yet</td>`, ">within 40d</td>", "paper 220415, delivered before, is inside the gap at page 6"} {
		if !strings.Contains(string(page), w) {
			t.Errorf("the report lacks %q", w)
		}
	}
	if a, b := strings.Index(string(page), "pages from 31 on never"), strings.Index(string(page), ">within 40d</td>"); a < 0 || b < a {
		t.Error("the audit table does not list the most stale journal first")
	}
	charts, consoleErrors, requests, png := open(t, out)
	// REPORT_SCREENSHOT_DIR keeps the screenshot (and the page) for a look.
	keep := os.Getenv("REPORT_SCREENSHOT_DIR")
	if keep == "" {
		keep = t.TempDir()
	} else if b, err := os.ReadFile(out); err == nil {
		os.WriteFile(filepath.Join(keep, "report.html"), b, 0o644)
	}
	shot := filepath.Join(keep, "report.jpg")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", shot, len(png))
	if len(consoleErrors) > 0 {
		t.Errorf("console errors: %q", consoleErrors)
	}
	if len(requests) > 0 {
		t.Errorf("the report asked the network for %q", requests)
	}
	want := map[string][]string{
		"chart-papers":      {"all journals", "journal 11", "other journals", "New papers per run", "new papers", "run start (UTC)"},
		"chart-speed":       {"nightly", "backfill", "Pages per second", "pages per second"},
		"chart-retries":     {"http-5xx", "http-429", "timeout", "Retries by cause", "failed tries"},
		"chart-fetch-times": {"all runs", "latest run", "Page fetch times", "pages", "≤50 ms", ">60 s"},
		"chart-quality":     {"with title", "with DOI", "DOI minimum", "with authors", "date minimum", "share of papers (%)"},
	}
	if len(charts) != len(want) {
		t.Errorf("%d charts, want %d: %+v", len(charts), len(want), charts)
	}
	for _, c := range charts {
		texts := strings.Join(c.Texts, "\n")
		if c.Empty || c.Paths < 10 || c.Width < 300 || c.Height < 100 {
			t.Errorf("chart %s is not drawn: empty %v, %d paths, %.0f×%.0f px (%s)", c.ID, c.Empty, c.Paths, c.Width, c.Height, c.Note)
		}
		for _, w := range want[c.ID] {
			if !strings.Contains(texts, w) {
				t.Errorf("chart %s lacks %q (series %q); texts: %q", c.ID, w, c.Series, c.Texts)
			}
		}
		// A long name is broken into lines of the legend.
		lines := strings.Join(c.Texts, " ")
		for _, s := range strings.Split(c.Series, "|") {
			if !strings.Contains(lines, s) {
				t.Errorf("chart %s: series %q has no legend entry", c.ID, s)
			}
		}
		if len(c.Clipped) > 0 {
			t.Errorf("chart %s: texts cut off at its edge: %q", c.ID, c.Clipped)
		}
	}
	// Dates on the time axis.
	for _, c := range charts {
		if c.ID == "chart-papers" && !strings.Contains(strings.Join(c.Texts, " "), "2026-11-") {
			t.Errorf("the time axis shows no date: %q", c.Texts)
		}
	}
}

// A history with no summary (a run killed before its end): each chart
// says it has no data, rather than drawing empty axes.
func TestReportWithoutDataSaysSo(t *testing.T) {
	v := history.RunView{ID: "20261201T030000Z-0000dead", Kind: "nightly", Status: history.StatusKilled, Started: time.Now(), Journals: []int64{1}}
	out := filepath.Join(t.TempDir(), "empty.html")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := report.Write(f, report.Data{StateDir: "st", Runs: []history.RunView{v}, Generated: time.Now()}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	charts, consoleErrors, _, _ := open(t, out)
	if len(charts) != 5 || len(consoleErrors) > 0 {
		t.Fatalf("%d charts, console errors %q", len(charts), consoleErrors)
	}
	for _, c := range charts {
		if !c.Empty || c.Paths != 0 || !strings.Contains(c.Note, "No data:") {
			t.Errorf("chart %s without data: empty %v, %d paths, note %q", c.ID, c.Empty, c.Paths, c.Note)
		}
	}
}
