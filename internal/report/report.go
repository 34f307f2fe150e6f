// Package report writes the HTML report of a crawl state's run history: one
// self-contained file (no script, font or style from elsewhere: it opens
// from disk on a machine with no network) with charts of the papers found
// per run and per journal, the crawl's speed, its retries by cause, the
// distribution of page fetch times and the quality of the parsed papers
// against their thresholds, and tables of the runs, the nightly walks
// that stopped at their page limit and the pages that failed.
//
// The charts are SVG drawn by gonum/plot when the report is built; the
// file holds no JavaScript.
package report

import (
	"cmp"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"gonum.org/v1/plot/plotter"

	"github.com/litcrawl/litcrawl/internal/config"
	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/history"
)

// Data is what a report shows.
type Data struct {
	// StateDir is where the history comes from (shown in the title).
	StateDir string
	// Runs are the history, newest first (history.History's order); HeldBy
	// the run that held the state when it was read, if any.
	Runs   []history.RunView
	HeldBy *history.RunView
	// Thresholds judge the runs that did not record theirs.
	Thresholds config.Quality
	// PageLogs are what the page logs of --report files add, by run id:
	// the fetch times of runs that recorded no histogram, the tries of
	// failed pages.
	PageLogs map[string]history.PageLogSummary
	// Sources are the --report files read.
	Sources []string
	// Generated is when the report was built.
	Generated time.Time
	// Live, when set, is the state of a fleet now, shown above the
	// charts (crawl status --serve); Refresh, when set, makes the page
	// load itself again after that long.
	Live    *Live
	Refresh time.Duration
}

// Live is a fleet's state as a page shows it: summary lines and tables,
// all text (the page escapes it).
type Live struct {
	Title  string
	Lines  []string
	Tables []LiveTable
}

// LiveTable is a table of the live state: a caption, a header, rows, and
// which columns hold numbers (drawn right-aligned).
type LiveTable struct {
	ID      string
	Caption string
	Head    []string
	Numeric []bool
	Rows    [][]string
	// Empty is said instead of an empty table; More, when set, under it
	// (the rows left out of a bounded table).
	Empty string
	More  string
}

// Limits of the tables: the report of a long history stays small.
const (
	maxRunRows     = 100
	maxFailureRows = 200
	maxJournalLine = 8 // journals with a line of their own; the rest are "other journals"
)

//go:embed report.html.tmpl
var pageTemplate string

var tmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"utc":     func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") },
	"num":     func(n []bool, i int) bool { return i < len(n) && n[i] },
	"secs":    func(d time.Duration) int { return int(d.Seconds()) },
	"seconds": seconds,
	"exit":    exitText,
	"journals": func(js []int64) string {
		var s []string
		for _, j := range js {
			s = append(s, strconv.FormatInt(j, 10))
		}
		if len(s) == 0 {
			return "—"
		}
		return joinMax(s, 6)
	},
}).Parse(pageTemplate))

func joinMax(s []string, most int) string {
	if len(s) > most {
		return fmt.Sprintf("%s … (+%d)", joinMax(s[:most], most), len(s)-most)
	}
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}

func seconds(f float64) string {
	d := time.Duration(f * float64(time.Second))
	switch {
	case f == 0:
		return "—"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

func exitText(v history.RunView) string { return cmp.Or(v.Outcome(), "—") }

// failureRow is one failed page in the table.
type failureRow struct {
	Run           string
	Started       time.Time
	Journal       int64
	Page          int
	Error         string
	Tries         int
	FetchDuration string
}

type incompleteRow struct {
	Run     string
	Started time.Time
	Journal int64
	Page    int
	Why     string
}

type noteRow struct {
	Run     string
	Started time.Time
	Text    string
}

type auditRow struct {
	Journal  int64
	Read     string // pages re-read in that run
	Next     int
	Pages    string
	Coverage string // how stale the least recently re-read page is
	Stale    bool   // some pages never re-read yet
}

// page is what the template fills in.
type page struct {
	Data
	Latest  *history.RunView
	Charts  []chart
	RunRows []history.RunView
	// RunNumber numbers the runs as the charts do: 1 the oldest.
	RunNumber      map[string]int
	MoreRuns       int
	Failures       []failureRow
	MoreFailures   int
	Incomplete     []incompleteRow
	MoreIncomplete int
	Notes          []noteRow
	MoreNotes      int
	// AuditRun is the latest run with an audit, AuditText what it
	// covers, Audits its journals, the most stale first.
	AuditRun        *history.RunView
	AuditText       string
	Audits          []auditRow
	First, Last     time.Time
	TotalNew        int64
	TotalUpdated    int64 // papers delivered again as their next revision
	TotalHeld       int64 // records held back (quality.hold)
	TotalPages      int64
	TotalFailed     int64
	TotalRetries    int
	RunsWithSummary int
}

// Write writes the report of d to w.
func Write(w io.Writer, d Data) error {
	pg := page{Data: d}
	old := slices.Clone(d.Runs) // oldest first, for the charts
	slices.Reverse(old)
	if len(d.Runs) > 0 {
		pg.Latest = &d.Runs[0]
		pg.First, pg.Last = old[0].Started, old[len(old)-1].Started
	}
	for _, v := range d.Runs {
		if v.Summary == nil {
			continue
		}
		pg.RunsWithSummary++
		ok, failed, _ := v.Pages()
		fresh, _ := v.Papers()
		pg.TotalNew += fresh
		updated, held := v.Revised()
		pg.TotalUpdated += updated
		pg.TotalHeld += held
		pg.TotalPages += ok
		pg.TotalFailed += failed
		pg.TotalRetries += v.Retries()
	}
	pg.RunNumber = make(map[string]int, len(old))
	for i, v := range old {
		pg.RunNumber[v.ID] = i + 1
	}
	pg.RunRows = d.Runs[:min(len(d.Runs), maxRunRows)]
	pg.MoreRuns = len(d.Runs) - len(pg.RunRows)
	for _, v := range d.Runs {
		if v.Summary == nil {
			continue
		}
		tries := map[[2]int64]engine.PageLine{}
		for _, pl := range d.PageLogs[v.ID].Failed {
			tries[[2]int64{pl.Journal, int64(pl.Page)}] = pl
		}
		for _, f := range v.Summary.Failures {
			if len(pg.Failures) == maxFailureRows {
				pg.MoreFailures++
				continue
			}
			row := failureRow{Run: v.ID, Started: v.Started, Journal: f.Journal, Page: f.Page, Error: f.Error}
			if pl, ok := tries[[2]int64{f.Journal, int64(f.Page)}]; ok {
				row.Tries, row.FetchDuration = pl.Tries, seconds(pl.Seconds)
			}
			pg.Failures = append(pg.Failures, row)
		}
		pg.MoreFailures += v.Summary.FailuresOmitted
		for _, iw := range v.Summary.IncompleteWalks {
			if len(pg.Incomplete) == maxFailureRows {
				pg.MoreIncomplete++
				continue
			}
			pg.Incomplete = append(pg.Incomplete, incompleteRow{Run: v.ID, Started: v.Started, Journal: iw.Journal, Page: iw.Page, Why: cmp.Or(iw.Why, engine.WhyMaxPages)})
		}
		for _, n := range v.Summary.WalkNotes {
			if len(pg.Notes) == maxFailureRows {
				pg.MoreNotes++
				continue
			}
			pg.Notes = append(pg.Notes, noteRow{Run: v.ID, Started: v.Started, Text: history.NoteText(n)})
		}
		pg.MoreNotes += v.Summary.WalkNotesOmitted
		if a := v.Summary.Audit; a != nil && pg.AuditRun == nil {
			pg.AuditRun, pg.AuditText = &v, a.Text(v.Started)
			for _, r := range a.Rows {
				row := auditRow{Journal: r.Journal, Read: "none", Next: r.Next, Pages: "not yet known", Stale: r.Round == 0,
					Coverage: "pages from " + strconv.Itoa(r.Next) + " on never re-read yet"}
				switch {
				case r.From > 0 && r.From == r.To:
					row.Read = strconv.Itoa(r.From)
				case r.From > 0:
					row.Read = fmt.Sprintf("%d-%d", r.From, r.To)
				}
				if r.Pages > 0 {
					row.Pages = strconv.Itoa(r.Pages)
				}
				if r.Round > 0 {
					row.Coverage = engine.Within(v.Started.Sub(time.Unix(r.Round, 0)))
				}
				pg.Audits = append(pg.Audits, row)
			}
		}
	}
	charts, err := buildCharts(old, d, pg.RunNumber)
	if err != nil {
		return err
	}
	pg.Charts = charts
	return tmpl.Execute(w, pg)
}

// minSpeedPages is the fewest pages a run does to be drawn on the pages
// per second chart: a nightly of two pages would set the scale with a rate
// that is mostly its start-up.
const minSpeedPages = 10

// buildCharts draws the charts from the runs, oldest first.
func buildCharts(runs []history.RunView, d Data, number map[string]int) ([]chart, error) {
	r := chartRuns{d: d}
	for _, v := range runs {
		if v.Summary != nil {
			r.done = append(r.done, v)
		}
	}
	if len(r.done) > 0 {
		r.ax = newXAxis(r.done[0].Started, r.done[len(r.done)-1].Started, len(runs))
	}
	// Numbered as the runs table numbers them (every run, 1 the oldest),
	// so that run 7 on a chart is run 7 in the table.
	r.xs = make(map[string]float64, len(r.done))
	for _, v := range r.done {
		r.xs[v.ID] = r.ax.x(number[v.ID]-1, v.Started)
	}
	var charts []chart
	for _, draw := range []func() (chart, error){r.papers, r.speed, r.retries, r.fetchTimes, r.quality} {
		c, err := draw()
		charts = append(charts, c)
		if err != nil {
			return nil, err
		}
	}
	return charts, nil
}

// chartRuns are the runs the charts draw: those with a summary, and each
// one's place on the time axis.
type chartRuns struct {
	d    Data
	done []history.RunView
	ax   xAxis
	xs   map[string]float64 // by run id
}

// papers: new papers per run, all journals, and each of the journals with
// the most papers (the rest summed).
func (r chartRuns) papers() (chart, error) {
	totals := map[int64]int64{}
	for _, v := range r.done {
		for k, c := range v.Summary.PerJournal {
			if j, err := strconv.ParseInt(k, 10, 64); err == nil {
				totals[j] += c.PapersNew // a journal with no new paper still has its line
			}
		}
	}
	journals := slices.SortedFunc(maps.Keys(totals), func(a, b int64) int {
		return cmp.Or(cmp.Compare(totals[b], totals[a]), cmp.Compare(a, b))
	})
	top := journals[:min(len(journals), maxJournalLine)]
	if len(journals) == 1 {
		top = nil // its line would be the line of all journals
	}
	all := series{name: "all journals", color: 0}
	perJ := make([]series, len(top))
	for i, j := range top {
		perJ[i] = series{name: "journal " + strconv.FormatInt(j, 10), color: i + 1}
	}
	other := series{name: "other journals", color: len(top) + 1, dashed: true}
	for _, v := range r.done {
		x := r.xs[v.ID]
		fresh, _ := v.Papers()
		all.pts = append(all.pts, plotter.XY{X: x, Y: float64(fresh)})
		if len(v.Summary.PerJournal) == 0 {
			continue
		}
		rest := int64(0)
		for k, c := range v.Summary.PerJournal {
			j, _ := strconv.ParseInt(k, 10, 64)
			if i := slices.Index(top, j); i >= 0 {
				perJ[i].pts = append(perJ[i].pts, plotter.XY{X: x, Y: float64(c.PapersNew)})
			} else {
				rest += c.PapersNew
			}
		}
		if len(journals) > len(top) && len(journals) > 1 { // one journal's line is all journals'
			other.pts = append(other.pts, plotter.XY{X: x, Y: float64(rest)})
		}
	}
	ss := append([]series{all}, perJ...)
	ss = append(ss, other)
	return lineChart("papers", "New papers per run", "Papers delivered for the first time by each run, in all and per journal.",
		"new papers", ss, r.ax, 0, true, "no run has ended with a summary yet")
}

// speed: pages per second, by kind of run.
func (r chartRuns) speed() (chart, error) {
	kinds := map[string]*series{}
	var kindOrder []string
	for _, v := range r.done {
		ok, _, _ := v.Pages()
		rate, known := v.PagesPerSecond()
		if !known || ok < minSpeedPages || math.IsInf(rate, 0) || math.IsNaN(rate) {
			continue
		}
		s, found := kinds[string(v.Kind)]
		if !found {
			s = &series{name: string(v.Kind), color: len(kinds)}
			kinds[string(v.Kind)] = s
			kindOrder = append(kindOrder, string(v.Kind))
		}
		s.pts = append(s.pts, plotter.XY{X: r.xs[v.ID], Y: rate})
	}
	var ss []series
	for _, k := range kindOrder {
		ss = append(ss, *kinds[k])
	}
	return lineChart("speed", "Pages per second", fmt.Sprintf("Listing pages done per second of work of each run (while a page was in flight: fetches, retries, waits and delivery; a fleet worker's time waiting for jobs left out). Runs of fewer than %d pages are left out: their rate is mostly start-up.", minSpeedPages),
		"pages per second", ss, r.ax, 0, false, fmt.Sprintf("no run has done %d pages yet", minSpeedPages))
}

// retries: failed tries retried, by cause.
func (r chartRuns) retries() (chart, error) {
	causes := map[string]bool{}
	for _, v := range r.done {
		for c, n := range v.Summary.Retries {
			if n > 0 {
				causes[c] = true
			}
		}
	}
	var ss []series
	for i, c := range slices.Sorted(maps.Keys(causes)) {
		s := series{name: c, color: i}
		for _, v := range r.done {
			s.pts = append(s.pts, plotter.XY{X: r.xs[v.ID], Y: float64(v.Summary.Retries[c])})
		}
		ss = append(ss, s)
	}
	return lineChart("retries", "Retries by cause", "Failed tries that were retried, per run, by cause (HTTP status class, timeout, truncated body, a sink that failed, …).",
		"failed tries", ss, r.ax, 0, true, "no run has retried a page")
}

// fetchTimes: page fetch times, all runs and the latest run that fetched.
func (r chartRuns) fetchTimes() (chart, error) {
	bounds := engine.FetchSecondsBounds
	allH := make([]float64, len(bounds)+1)
	var latestH []float64
	for i := len(r.done) - 1; i >= 0; i-- {
		h := histogram(r.done[i], r.d.PageLogs[r.done[i].ID].FetchSeconds)
		if h == nil {
			continue
		}
		for k, c := range h {
			allH[k] += c
		}
		if latestH == nil && sum(h) > 0 {
			latestH = h
		}
	}
	groups, values := []string{"all runs"}, [][]float64{allH}
	if latestH != nil && len(r.done) > 1 {
		groups, values = append(groups, "latest run"), append(values, latestH)
	}
	var cats []string
	for _, b := range bounds {
		cats = append(cats, "≤"+history.SecondsLabel(b))
	}
	cats = append(cats, ">"+history.SecondsLabel(bounds[len(bounds)-1]))
	return barChart("fetch-times", "Page fetch times", "How long pages took to fetch, retries and their waits included.",
		"fetch time", "pages", cats, groups, values, "no run recorded its page fetch times (runs from before they were recorded; a --report file adds them)")
}

// quality: the shares of the parsed papers against their thresholds.
func (r chartRuns) quality() (chart, error) {
	fields := []struct {
		name string
		n    func(engine.Quality) int
		min  func(config.Quality) float64
	}{
		{"title", func(q engine.Quality) int { return q.WithTitle }, func(t config.Quality) float64 { return t.MinTitleShare }},
		{"DOI", func(q engine.Quality) int { return q.WithDOI }, func(t config.Quality) float64 { return t.MinDOIShare }},
		{"authors", func(q engine.Quality) int { return q.WithAuthor }, func(t config.Quality) float64 { return t.MinAuthorsShare }},
		{"date", func(q engine.Quality) int { return q.WithDate }, func(t config.Quality) float64 { return t.MinPublishedShare }},
		// Papers whose every field looks like what it is (findings:
		// parser.Page.Findings), against 1 - quality.max_implausible_share.
		{"plausible", func(q engine.Quality) int { return q.Records - q.Implausible }, func(t config.Quality) float64 { return 1 - t.MaxImplausibleShare }},
	}
	var ss []series
	for i, f := range fields {
		share := series{name: "with " + f.name, color: i}
		if f.name == "plausible" {
			share.name = "all fields plausible"
		}
		limit := series{name: f.name + " minimum", color: i, dashed: true}
		for _, v := range r.done {
			q := v.Summary.Quality
			if q.Records == 0 {
				continue
			}
			t := r.d.Thresholds
			if v.Summary.QualityThresholds != nil {
				t = *v.Summary.QualityThresholds
			}
			x := r.xs[v.ID]
			share.pts = append(share.pts, plotter.XY{X: x, Y: 100 * float64(f.n(q)) / float64(q.Records)})
			limit.pts = append(limit.pts, plotter.XY{X: x, Y: 100 * f.min(t)})
		}
		ss = append(ss, share, limit)
	}
	return lineChart("quality", "Quality of the parsed papers", "Share of each run's papers that have each field, and whose every field looks like what it is; dashed: the quality alarm's minimum (below it, the run exits 4).",
		"share of papers (%)", ss, r.ax, 105, false, "no run has parsed a paper yet")
}

// histogram is a run's fetch-time counts: its recorded histogram, or the
// one of its --report page log (nil: neither, or one of other buckets).
func histogram(v history.RunView, fromLog engine.Histogram) []float64 {
	h := v.Summary.FetchSeconds
	if h == nil || !slices.Equal(h.LE, engine.FetchSecondsBounds) || len(h.Counts) != len(h.LE)+1 {
		h = &fromLog
	}
	if !slices.Equal(h.LE, engine.FetchSecondsBounds) || len(h.Counts) != len(h.LE)+1 {
		return nil
	}
	out := make([]float64, len(h.Counts))
	for i, c := range h.Counts {
		out[i] = float64(max(c, 0))
	}
	return out
}

func sum(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}
