package app

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/frontier"
	"github.com/litcrawl/litcrawl/internal/history"
)

func newRunSummary(runID string, kind history.Kind, s *engine.Summary, jobs *frontier.JobCounts, err error) history.RunSummary {
	r := history.RunSummary{RunID: runID, Kind: kind, Started: s.Started.UTC().Format(time.RFC3339),
		DurationSeconds: time.Since(s.Started).Seconds(), BusySeconds: s.BusySeconds(),
		Pages: map[string]int64{"done": s.Done.Load(), "failed": s.Failed.Load(), "skipped": s.Skipped.Load(), "past_end": s.Ended.Load()},
		Papers: map[string]int64{"new": s.PapersNew.Load(), "known": s.PapersKnown.Load(), "updated": s.PapersUpdated.Load(),
			"updates_waiting": s.PapersPoorer.Load(), "held": s.Held.Load()},
		Retries: s.Retries(), Failures: s.Failures(), Quality: s.QualityCounts(),
		PerJournal: map[string]engine.JournalCounts{}, IncompleteWalks: s.IncompleteWalks(), Quarantined: s.Quarantined.Load()}
	r.WalkNotes, r.WalkNotesOmitted = s.WalkNotes()
	r.Audit = s.Audit()
	for j, c := range s.Journals() {
		r.PerJournal[strconv.FormatInt(j, 10)] = c
	}
	h := s.FetchSeconds()
	r.FetchSeconds = &h
	if r.Failures == nil {
		r.Failures = []engine.PageFailure{}
	}
	if n := len(r.Failures); n > history.MaxFailuresKept {
		r.Failures, r.FailuresOmitted = r.Failures[:history.MaxFailuresKept], n-history.MaxFailuresKept
	}
	if jobs != nil {
		jc := history.JobCounts(*jobs)
		r.Jobs = &jc
	}
	if err != nil {
		r.Error = err.Error()
	}
	return r
}

// maxNotesPrinted bounds the walk notes a summary prints.
const maxNotesPrinted = 10

// printSummary prints what a run did: as text on stderr (a line, then a
// line per failed page), or, with a JSON log, as one log line.
func (e *Env) printSummary(r history.RunSummary, s *engine.Summary) {
	if e.JSON {
		e.log().Info("run summary", "summary", r)
		return
	}
	line := s.String()
	if j := r.Jobs; j != nil {
		line += fmt.Sprintf("; jobs: %d done, %d past the end, %d retried later, %d dead-lettered", j.Done, j.PastEnd, j.Retried, j.DeadLettered)
	}
	fmt.Fprintf(e.Stderr, "crawl %s %s: %s\n", r.Kind, r.RunID, line)
	if n := s.PapersPoorer.Load(); n > 0 {
		fmt.Fprintf(e.Stderr, "  updates waiting: %d changed papers were read with less than was delivered (a cut capture, the JSON missing today): not delivered; a later whole read delivers them (docs/revisions.md)\n", n)
	}
	if len(r.PerJournal) > 1 {
		for _, j := range slices.Sorted(maps.Keys(s.Journals())) {
			c := r.PerJournal[strconv.FormatInt(j, 10)]
			fmt.Fprintf(e.Stderr, "  journal %d: pages: %d ok, %d failed, %d skipped, %d past the end; papers: %d new, %d updated, %d known\n",
				j, c.PagesDone, c.PagesFailed, c.PagesSkipped, c.PagesPastEnd, c.PapersNew, c.PapersUpdated, c.PapersKnown)
		}
	}
	for _, w := range r.IncompleteWalks {
		fmt.Fprintf(e.Stderr, "  incomplete: %s\n", history.IncompleteText(w))
	}
	if n := r.Pages["skipped"]; n > 0 {
		fmt.Fprintf(e.Stderr, "  skipped: %s done by earlier runs were not fetched again; --no-resume re-reads them (papers never delivered are delivered, and changed ones as their next revision; none twice)\n", pluralPages(n))
	}
	for i, n := range r.WalkNotes {
		if i == maxNotesPrinted {
			fmt.Fprintf(e.Stderr, "  … and %d more notes (crawl runs show %s lists them)\n", len(r.WalkNotes)-i+r.WalkNotesOmitted, r.RunID)
			break
		}
		fmt.Fprintf(e.Stderr, "  note: %s\n", history.NoteText(n))
	}
	if r.Audit != nil {
		fmt.Fprintf(e.Stderr, "  audit: %s\n", r.Audit.Text(time.Now()))
	}
	if r.Quarantined > 0 {
		fmt.Fprintf(e.Stderr, "  quarantined: %d records refused by a sink, kept in %s (crawl quarantine list)\n", r.Quarantined, r.Quarantine)
	}
	for _, g := range history.GroupFailures(r.Failures) {
		fmt.Fprintf(e.Stderr, "  failed: %s\n", g)
	}
	if r.FailuresOmitted > 0 {
		fmt.Fprintf(e.Stderr, "  … and %d more failed pages (--report lists every page)\n", r.FailuresOmitted)
	}
}

func pluralPages(n int64) string {
	if n == 1 {
		return "1 page"
	}
	return fmt.Sprintf("%d pages", n)
}
