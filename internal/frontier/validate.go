package frontier

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/litcrawl/litcrawl/internal/config"
	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/ledger"
)

// Bounds of a job: a job published by hand to the work subject is checked
// as flags and config are, and a bad one is dead-lettered with its reason,
// never run.
const (
	// MaxJobBytes bounds a job message (NATS's default max_payload).
	MaxJobBytes = 1 << 20
	// maxPerPage bounds the papers a page is counted with, and
	// maxPosition a paper's place in a listing.
	maxPerPage  = ledger.MaxPerPage
	maxPosition = ledger.MaxPosition
	// maxRecent bounds the papers of a walk's last two pages (ids and DOI
	// keys).
	maxRecent = 4096
)

// runIDShape bounds a run id: 1 to 64 letters, digits and . _ : - (what
// app.NewRunID makes: the start time and 8 hex digits). It goes into
// every record's source.run_id.
var runIDShape = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$`)

// ValidRunID says whether id has a run id's shape (runIDShape).
func ValidRunID(id string) bool { return runIDShape.MatchString(id) }

// Validate checks a job's every field against the bounds the commands
// enforce: a positive journal, a page from 1 to config.MaxPageNumber, a run
// id of the shape runs have (it goes into every record), and for a walk,
// its counters and limits within the config's bounds and its marks small
// and free of control characters (they go into the ledger). Its error
// names the field and what is expected, without echoing the value.
func (j Job) Validate() error {
	switch {
	case config.CheckJournal(j.Journal) != nil:
		return bad("journal", "a positive journal id")
	case j.Page < 1 || j.Page > config.MaxPageNumber:
		return bad("page", fmt.Sprintf("1 to %d", config.MaxPageNumber))
	case !runIDShape.MatchString(j.RunID):
		return bad("run_id", "1 to 64 letters, digits and . _ : - (a run id such as 20261204T170000Z-0123abcd)")
	case j.PrevPage < 0 || j.PrevPage > config.MaxPageNumber:
		return bad("prev_page", fmt.Sprintf("0 to %d", config.MaxPageNumber))
	}
	switch {
	case j.V != JobVersion:
		return bad("v", fmt.Sprintf("%d", JobVersion))
	case !j.Nightly && j.Walk != nil:
		return bad("walk", "none on a page job (it belongs to nightly jobs)")
	case !j.Nightly:
		return nil
	case j.Walk == nil:
		return bad("walk", "a walk on a nightly job")
	}
	return validWalk(j.Walk)
}

// bad names a job's field and what is expected of it.
func bad(field, want string) error { return fmt.Errorf("job %s: expected %s", field, want) }

// validWalk checks a nightly job's walk: its phase, counters and limits,
// and its entries and marks.
func validWalk(m *WalkMsg) error {
	within := func(field string, v, lo, hi int) error {
		if v < lo || v > hi {
			return bad("walk."+field, fmt.Sprintf("%d to %d", lo, hi))
		}
		return nil
	}
	if !slices.Contains(engine.Phases, m.Phase) {
		return bad("walk.phase", fmt.Sprintf("one of %v", engine.Phases))
	}
	for _, c := range []struct {
		field     string
		v, lo, hi int
	}{
		{"max_pages", m.MaxPages, 1, config.MaxPages},
		{"stop_after_known", m.StopAfterKnown, 1, config.MaxPages},
		{"stop_after_repeat", m.StopAfterRepeat, 0, config.MaxPages},
		{"audit_pages", m.AuditPages, 0, config.MaxAuditPages},
		{"walked", m.Walked, 0, m.MaxPages},
		{"known_run", m.KnownRun, 0, m.MaxPages},
		{"repeat_run", m.RepeatRun, 0, m.MaxPages},
		{"reached", m.Reached, 0, config.MaxPageNumber},
		{"contig", m.Contig, 0, config.MaxPageNumber},
		{"per_page", m.PerPage, 0, maxPerPage},
		{"bound", m.Bound, 0, maxPosition},
		{"target", m.Target, 0, config.MaxPageNumber},
		{"skip_from", m.SkipFrom, 0, config.MaxPageNumber},
		{"last_page", m.LastPage, 0, config.MaxPageNumber},
		{"end_before", m.EndBefore, 0, config.MaxPageNumber},
		{"audit_left", m.AuditLeft, 0, m.AuditPages},
		{"audit_from", m.AuditFrom, 0, config.MaxPageNumber},
		{"back", m.Back, 0, maxPosition},
		{"gained", m.Gained, 0, maxPosition},
		{"closed", m.Closed, 0, engine.MaxMarks + 1},
		{"spent", m.Spent, 0, m.MaxPages},
		{"recent_page", m.RecentPage, 0, config.MaxPageNumber},
		{"shift", m.Shift, -maxPosition, maxPosition},
		{"recent_last", m.RecentLast, 0, len(m.Recent)},
	} {
		if err := within(c.field, c.v, c.lo, c.hi); err != nil {
			return err
		}
	}
	return validWalkEntries(m)
}

// validWalkEntries checks a walk's entries and marks: few, small, and
// free of control characters (they go into the ledger).
func validWalkEntries(m *WalkMsg) error {
	if (m.Phase == engine.PhaseSeek || m.Phase == engine.PhaseSweep || m.Phase == engine.PhaseGap) && len(m.State.Marks) == 0 {
		return bad("walk.phase", "top or audit without marks")
	}
	for _, e := range []struct {
		field string
		es    []string
	}{{"new_head", m.NewHead}, {"prev", m.Prev}, {"tail", m.Tail}} {
		if err := validEntries("job walk."+e.field, e.es); err != nil {
			return err
		}
	}
	if len(m.Recent) > maxRecent || len(m.RecentAt) != len(m.Recent) {
		return bad("walk.recent", fmt.Sprintf("at most %d entries, each with its place in recent_at", maxRecent))
	}
	if err := validEntriesMax("job walk.recent", m.Recent, maxRecent); err != nil {
		return err
	}
	for _, at := range m.RecentAt {
		if at < -maxPosition || at > maxPosition {
			return bad("walk.recent_at", fmt.Sprintf("places from %d to %d", -maxPosition, maxPosition))
		}
	}
	if m.Looking != nil {
		if err := validMark("job walk.looking", *m.Looking); err != nil {
			return err
		}
	}
	return ValidState("job walk.state", m.State)
}

// ValidState checks a walk state read from outside (a job, the fleet's
// ledger): ledger.CheckWalkState.
func ValidState(field string, s ledger.WalkState) error { return ledger.CheckWalkState(field, s) }

func validMark(field string, m ledger.WalkMark) error { return ledger.CheckWalkMark(field, m) }

func validEntries(field string, es []string) error {
	return ledger.CheckEntries(field, es, ledger.MaxMarkEntries)
}

func validEntriesMax(field string, es []string, most int) error {
	return ledger.CheckEntries(field, es, most)
}
