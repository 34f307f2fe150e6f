package app

import (
	"fmt"
	"time"

	"github.com/litcrawl/litcrawl/engine"
	"github.com/litcrawl/litcrawl/frontier"
)

// RunReport is a run's summary as JSON: the run history keeps it, --report
// writes it (with a page log), and --log-format json logs it.
type RunReport struct {
	RunID           string               `json:"run_id"`
	Kind            string               `json:"kind"`
	Started         string               `json:"started"`
	DurationSeconds float64              `json:"duration_seconds"`
	Pages           map[string]int64     `json:"pages"`
	Papers          map[string]int64     `json:"papers"`
	Retries         map[string]int       `json:"retries"`
	Failures        []engine.PageFailure `json:"failures"`
	Quality         engine.Quality       `json:"quality"`
	Jobs            *frontier.JobCounts  `json:"jobs,omitempty"`
	Error           string               `json:"error,omitempty"`
}

func newRunReport(runID, kind string, s *engine.Summary, jobs *frontier.JobCounts, err error) RunReport {
	r := RunReport{RunID: runID, Kind: kind, Started: s.Started.UTC().Format(time.RFC3339),
		DurationSeconds: time.Since(s.Started).Seconds(),
		Pages:           map[string]int64{"done": s.Done.Load(), "failed": s.Failed.Load(), "skipped": s.Skipped.Load(), "past_end": s.Ended.Load()},
		Papers:          map[string]int64{"new": s.PapersNew.Load(), "known": s.PapersKnown.Load()},
		Retries:         s.Retries(), Failures: s.Failures(), Quality: s.QualityCounts(), Jobs: jobs}
	if r.Failures == nil {
		r.Failures = []engine.PageFailure{}
	}
	if err != nil {
		r.Error = err.Error()
	}
	return r
}

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
	for _, pf := range r.Failures {
		fmt.Fprintf(e.Stderr, "  failed: journal %d page %d: %s\n", pf.Journal, pf.Page, pf.Error)
	}
}
