package report_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/internal/config"
	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/history"
	"github.com/litcrawl/litcrawl/internal/report"
	"github.com/litcrawl/litcrawl/internal/state"
)

// countingWriter counts the bytes of the report.
type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// BenchmarkReport1000Runs builds the report of a history of 1,000 nightly
// runs over 50 journals (three years of nights), from the state file:
// reading the history and writing the HTML.
//
//	go test -run '^$' -bench Report1000Runs ./report
func BenchmarkReport1000Runs(b *testing.B) {
	dir := b.TempDir()
	st, err := state.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	th := config.Default().Quality
	day0 := time.Date(2024, 1, 1, 3, 0, 0, 0, time.UTC)
	for d := range 1000 {
		started := day0.Add(time.Duration(d) * 24 * time.Hour)
		id := fmt.Sprintf("%s-%08x", started.Format("20060102T150405Z"), d)
		per := map[string]engine.JournalCounts{}
		var js []int64
		for j := range 50 {
			js = append(js, int64(1000+j))
			per[fmt.Sprint(1000+j)] = engine.JournalCounts{PagesDone: 2, PapersNew: int64((d + j) % 17), PapersKnown: 25}
		}
		code := 0
		rep := history.RunSummary{RunID: id, Kind: "nightly", Started: started.Format(time.RFC3339), DurationSeconds: 60, Journals: js,
			Pages: map[string]int64{"done": 100}, Papers: map[string]int64{"new": 400, "known": 1250},
			Retries: map[string]int{"http-5xx": d % 4, "timeout": d % 3}, Failures: []engine.PageFailure{{Journal: 1000, Page: 2, Error: "HTTP 503"}},
			Quality:    engine.Quality{Pages: 100, Records: 2000, WithTitle: 2000, WithDOI: 1900, WithAuthor: 1990, WithDate: 2000},
			PerJournal: per, QualityThresholds: &th, ExitCode: &code,
			FetchSeconds: &engine.Histogram{LE: engine.FetchSecondsBounds, Counts: []int64{10, 30, 40, 10, 5, 3, 2, 0, 0, 0, 0}}}
		data, _ := json.Marshal(rep)
		if err := st.PutRun(state.Run{ID: id, Kind: "nightly", Started: started, Finished: started.Add(time.Minute), Journals: js, Summary: data}); err != nil {
			b.Fatal(err)
		}
	}
	st.Close()
	var size int64
	b.ResetTimer()
	for b.Loop() {
		h, err := history.Read(dir, th)
		if err != nil {
			b.Fatal(err)
		}
		w := &countingWriter{}
		if err := report.Write(w, report.Data{StateDir: dir, Runs: h.Runs, Thresholds: th, Generated: time.Now()}); err != nil {
			b.Fatal(err)
		}
		size = w.n
	}
	b.ReportMetric(float64(size), "report-bytes")
}
