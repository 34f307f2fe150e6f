package report_test

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/internal/config"
	"github.com/litcrawl/litcrawl/internal/history"
	"github.com/litcrawl/litcrawl/internal/report"
)

// FuzzReportFile: crawl report reads --report files it did not write (a
// copy, a file edited by hand, a cut one). Whatever their bytes, reading
// one fails with an error or yields a run whose report is written; it
// never panics.
//
//	go test ./internal/report -run XXX -fuzz FuzzReportFile -fuzztime 60s
func FuzzReportFile(f *testing.F) {
	f.Add([]byte(`{"run_id":"r","kind":"nightly","started":"2026-12-01T03:00:00Z","duration_seconds":2,"journals":[1,2],` +
		`"pages":{"done":2,"failed":1},"papers":{"new":5},"retries":{"http-5xx":2},"failures":[{"journal":1,"page":2,"error":"HTTP 503"}],` +
		`"quality":{"pages":2,"records":40,"with_title":40},"quality_thresholds":{"min_title_share":0.9},` +
		`"per_journal":{"1":{"papers_new":5},"x":{}},"fetch_seconds":{"le":[0.05,1],"counts":[1,2,3]},"incomplete_walks":[{"journal":2,"page":50}],` +
		`"exit_code":3,"page_log":[{"journal":1,"page":1,"result":"done","seconds":0.3}]}`))
	f.Add([]byte(`{"run_id":"r","started":"2026-12-01T03:00:00Z","fetch_seconds":{"le":[0.05,0.1,0.25,0.5,1,2.5,5,10,30,60],"counts":[1]}}`))
	f.Add([]byte(`{"run_id":"r","started":"not a time"}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"run_id":"r","started":"2026-12-01T03:00:00Z","duration_seconds":5e-324,"pages":{"done":7}}`))
	f.Add([]byte(`{"run_id":"r","started":"2026-12-01T03:00:00Z","duration_seconds":1e308,"pages":{"done":-5}}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "r.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		rf, err := history.ReadSummaryFile(path)
		if err != nil {
			return
		}
		v := history.FromReport(rf.RunSummary, config.Default().Quality)
		d := report.Data{StateDir: "st", Runs: []history.RunView{v, v}, PageLogs: map[string]history.PageLogSummary{rf.RunID: rf.PageLog}, Generated: time.Now()}
		if err := report.Write(io.Discard, d); err != nil {
			t.Fatalf("a run read from a report file cannot be drawn: %v", err)
		}
	})
}
