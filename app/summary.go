package app

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/litcrawl/litcrawl/config"

	"github.com/litcrawl/litcrawl/engine"
	"github.com/litcrawl/litcrawl/frontier"
)

// RunReport is a run's summary as JSON: the run history keeps it, --report
// writes it (with a page log), and --log-format json logs it.
//
// Fields added over time are absent from older runs' summaries: a reader
// shows what a run has.
type RunReport struct {
	RunID           string               `json:"run_id"`
	Kind            string               `json:"kind"`
	Started         string               `json:"started"`
	DurationSeconds float64              `json:"duration_seconds"`
	Journals        []int64              `json:"journals,omitempty"`
	Pages           map[string]int64     `json:"pages"`
	Papers          map[string]int64     `json:"papers"`
	Retries         map[string]int       `json:"retries"`
	Failures        []engine.PageFailure `json:"failures"`
	// FailuresOmitted counts the failed pages beyond MaxFailuresKept (the
	// --report page log lists every page).
	FailuresOmitted int            `json:"failures_omitted,omitempty"`
	Quality         engine.Quality `json:"quality"`
	// QualityThresholds are the alarms the run was held to.
	QualityThresholds *config.Quality `json:"quality_thresholds,omitempty"`
	// PerJournal are the counts by journal id.
	PerJournal map[string]engine.JournalCounts `json:"per_journal,omitempty"`
	// FetchSeconds is the histogram of page fetch times.
	FetchSeconds *engine.Histogram `json:"fetch_seconds,omitempty"`
	// IncompleteWalks are nightly walks stopped by nightly.max_pages.
	IncompleteWalks []engine.IncompleteWalk `json:"incomplete_walks,omitempty"`
	Jobs            *frontier.JobCounts     `json:"jobs,omitempty"`
	// Quarantined counts the records a sink refused for their content,
	// kept in the quarantine file Quarantine.
	Quarantined int64  `json:"quarantined,omitempty"`
	Quarantine  string `json:"quarantine,omitempty"`
	Error       string `json:"error,omitempty"`
	// ExitCode is the code the run's process exited with (nil: unknown,
	// a run recorded before exit codes were).
	ExitCode *int `json:"exit_code,omitempty"`
}

func newRunReport(runID, kind string, s *engine.Summary, jobs *frontier.JobCounts, err error) RunReport {
	r := RunReport{RunID: runID, Kind: kind, Started: s.Started.UTC().Format(time.RFC3339),
		DurationSeconds: time.Since(s.Started).Seconds(),
		Pages:           map[string]int64{"done": s.Done.Load(), "failed": s.Failed.Load(), "skipped": s.Skipped.Load(), "past_end": s.Ended.Load()},
		Papers:          map[string]int64{"new": s.PapersNew.Load(), "known": s.PapersKnown.Load()},
		Retries:         s.Retries(), Failures: s.Failures(), Quality: s.QualityCounts(), Jobs: jobs,
		PerJournal: map[string]engine.JournalCounts{}, IncompleteWalks: s.IncompleteWalks(), Quarantined: s.Quarantined.Load()}
	for j, c := range s.Journals() {
		r.PerJournal[strconv.FormatInt(j, 10)] = c
	}
	h := s.FetchSeconds()
	r.FetchSeconds = &h
	if r.Failures == nil {
		r.Failures = []engine.PageFailure{}
	}
	if n := len(r.Failures); n > MaxFailuresKept {
		r.Failures, r.FailuresOmitted = r.Failures[:MaxFailuresKept], n-MaxFailuresKept
	}
	if err != nil {
		r.Error = err.Error()
	}
	return r
}

// MaxFailuresKept bounds the failed pages a run's summary lists, so that
// the run history stays small when a whole range fails.
const MaxFailuresKept = 1000

// printSummary prints what a run did: as text on stderr (a line, then a
// line per failed page), or, with a JSON log, as one log line.
func (e *Env) printSummary(r RunReport, s *engine.Summary) {
	if e.JSON {
		e.log().Info("run summary", "summary", r)
		return
	}
	line := s.String()
	if j := r.Jobs; j != nil {
		line += fmt.Sprintf("; jobs: %d done, %d past the end, %d retried later, %d dead-lettered", j.Done, j.PastEnd, j.Retried, j.DeadLettered)
	}
	fmt.Fprintf(e.Stderr, "crawl %s %s: %s\n", r.Kind, r.RunID, line)
	if len(r.PerJournal) > 1 {
		for _, j := range slices.Sorted(maps.Keys(s.Journals())) {
			c := r.PerJournal[strconv.FormatInt(j, 10)]
			fmt.Fprintf(e.Stderr, "  journal %d: pages: %d ok, %d failed, %d skipped, %d past the end; papers: %d new, %d known\n",
				j, c.PagesDone, c.PagesFailed, c.PagesSkipped, c.PagesPastEnd, c.PapersNew, c.PapersKnown)
		}
	}
	for _, w := range r.IncompleteWalks {
		fmt.Fprintf(e.Stderr, "  incomplete: %s\n", IncompleteText(w))
	}
	if r.Quarantined > 0 {
		fmt.Fprintf(e.Stderr, "  quarantined: %d records refused by a sink, kept in %s (crawl quarantine list)\n", r.Quarantined, r.Quarantine)
	}
	for _, pf := range r.Failures {
		fmt.Fprintf(e.Stderr, "  failed: journal %d page %d: %s\n", pf.Journal, pf.Page, pf.Error)
	}
	if r.FailuresOmitted > 0 {
		fmt.Fprintf(e.Stderr, "  … and %d more failed pages (--report lists every page)\n", r.FailuresOmitted)
	}
}

// IncompleteText says what an incomplete walk means, in a line.
func IncompleteText(w engine.IncompleteWalk) string {
	return fmt.Sprintf("journal %d: the walk stopped at page %d (%s) before known papers; the next nightly carries on from there",
		w.Journal, w.Page, cmp.Or(w.Why, engine.WhyMaxPages))
}
