package history

import (
	"cmp"
	"fmt"

	"github.com/litcrawl/litcrawl/internal/config"
	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/quality"
)

// Kind is what a run is. The history and a run's summary hold it as its
// word ("backfill"); the runs of a kind are drawn as one series.
type Kind string

// The kinds of run.
const (
	Backfill Kind = "backfill" // crawl backfill
	Nightly  Kind = "nightly"  // crawl nightly
	Worker   Kind = "worker"   // a fleet worker's session (crawl worker)
	Rebuild  Kind = "rebuild"  // crawl state rebuild
	Replay   Kind = "replay"   // crawl replay --updates (against a state)
	Reparse  Kind = "reparse"  // crawl quarantine retry --reparse
)

// RunSummary is a run's summary as JSON: the run history keeps it, --report
// writes it (with a page log), and --log-format json logs it.
//
// Fields added over time are absent from older runs' summaries: a reader
// shows what a run has.
type RunSummary struct {
	RunID           string  `json:"run_id"`
	Kind            Kind    `json:"kind"`
	Started         string  `json:"started"`
	DurationSeconds float64 `json:"duration_seconds"`
	// BusySeconds is the time at least one page was in flight: the run's
	// length without idle time (a fleet worker waiting for jobs); rates
	// are per busy second. 0: not recorded (older runs).
	BusySeconds float64              `json:"busy_seconds,omitempty"`
	Journals    []int64              `json:"journals,omitempty"`
	Pages       map[string]int64     `json:"pages"`
	Papers      map[string]int64     `json:"papers"`
	Retries     map[string]int       `json:"retries"`
	Failures    []engine.PageFailure `json:"failures"`
	// FailuresOmitted counts the failed pages beyond MaxFailuresKept (the
	// --report page log lists every page).
	FailuresOmitted int            `json:"failures_omitted,omitempty"`
	Quality         engine.Quality `json:"quality"`
	// QualityThresholds are the alarms the run was held to.
	QualityThresholds *config.Quality `json:"quality_thresholds,omitempty"`
	// QualityLearned is the learned gate's alarm (a journal's papers
	// unlike its recent runs': quality.CheckLearned), if it alarmed.
	QualityLearned string `json:"quality_learned,omitempty"`
	// Relearn: the run took its journals' papers as their new normal
	// (--relearn).
	Relearn bool `json:"relearn,omitempty"`
	// PerJournal are the counts by journal id.
	PerJournal map[string]engine.JournalCounts `json:"per_journal,omitempty"`
	// FetchSeconds is the histogram of page fetch times.
	FetchSeconds *engine.Histogram `json:"fetch_seconds,omitempty"`
	// IncompleteWalks are nightly walks stopped by nightly.max_pages.
	IncompleteWalks []engine.IncompleteWalk `json:"incomplete_walks,omitempty"`
	// WalkNotes are what nightly walks found and said (engine.WalkNote),
	// up to engine.MaxWalkNotes; WalkNotesOmitted counts the others.
	WalkNotes        []engine.WalkNote `json:"walk_notes,omitempty"`
	WalkNotesOmitted int               `json:"walk_notes_omitted,omitempty"`
	// Audit is what the nightly walks' audits cover.
	Audit *engine.AuditSummary `json:"audit,omitempty"`
	Jobs  *JobCounts           `json:"jobs,omitempty"`
	// Quarantined counts the records a sink refused for their content,
	// kept in the quarantine file Quarantine.
	Quarantined int64  `json:"quarantined,omitempty"`
	Quarantine  string `json:"quarantine,omitempty"`
	Error       string `json:"error,omitempty"`
	// Host and PID say where a fleet worker's run ran.
	Host string `json:"host,omitempty"`
	PID  int    `json:"pid,omitempty"`
	// ExitCode is the code the run's process exited with (nil: unknown,
	// a run recorded before exit codes were).
	ExitCode *int `json:"exit_code,omitempty"`
}

// JobCounts are what a fleet worker did with its jobs (frontier.JobCounts,
// converted: the two must keep the same fields).
type JobCounts struct {
	Done         int64 `json:"done"`
	PastEnd      int64 `json:"past_end"`
	Retried      int64 `json:"retried"`
	DeadLettered int64 `json:"dead_lettered"`
}

// MaxFailuresKept bounds the failed pages a run's summary lists, so that
// the run history stays small when a whole range fails.
const MaxFailuresKept = 1000

// QualityAlarm is the quality gate (quality.Check) as a run's error: a
// quality alarm (exit 4), or nil.
func QualityAlarm(t config.Quality, q engine.Quality) error {
	if err := quality.Check(t, q); err != nil {
		return exitcode.QualityError(err)
	}
	return nil
}

// IncompleteText says what an incomplete walk means, in a line.
func IncompleteText(w engine.IncompleteWalk) string {
	if w.Why == engine.WhyBackfillMaxPages {
		return fmt.Sprintf("journal %d: the open-ended backfill stopped at page %d (%s) before the listing's end; crawl backfill --journal %d --pages %d- goes on from there",
			w.Journal, w.Page, w.Why, w.Journal, w.Page+1)
	}
	if w.From > 0 {
		return fmt.Sprintf("journal %d: the walk stopped at page %d (%s) with gaps not closed; the next nightly carries on from page %d",
			w.Journal, w.Page, cmp.Or(w.Why, engine.WhyMaxPages), w.From)
	}
	return fmt.Sprintf("journal %d: the walk stopped at page %d (%s) before known papers; the next nightly carries on from there",
		w.Journal, w.Page, cmp.Or(w.Why, engine.WhyMaxPages))
}

// NoteText is a walk's note in a line.
func NoteText(n engine.WalkNote) string {
	if n.Journal == 0 {
		return n.Text
	}
	return fmt.Sprintf("journal %d: %s", n.Journal, n.Text)
}
