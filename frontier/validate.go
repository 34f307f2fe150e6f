package frontier

import (
	"fmt"
	"reflect"
	"regexp"

	"github.com/litcrawl/litcrawl/config"
	"github.com/litcrawl/litcrawl/engine"
	"github.com/litcrawl/litcrawl/ledger"
	"github.com/litcrawl/litcrawl/record"
)

// Bounds of a job: a job published by hand to the work subject is checked
// as flags and config are, and a bad one is dead-lettered with its reason,
// never run.
const (
	// MaxJobBytes bounds a job message (NATS's default max_payload).
	MaxJobBytes = 1 << 20
	// maxMarkEntry bounds one entry of a mark (a paper id or a "doi:" key).
	maxMarkEntry = 4096
	// maxMarkEntries bounds a mark's entries: its papers' ids and DOI
	// keys.
	maxMarkEntries = 16
	// maxRecent bounds the papers of a walk's last two pages (ids and DOI
	// keys).
	maxRecent = 4096
)

// runIDShape bounds a run id: 1 to 64 letters, digits and . _ : - (what
// app.NewRunID makes: the start time and 8 hex digits). It goes into
// every record's source.run_id.
var runIDShape = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$`)

// Validate checks a job's every field against the bounds the commands
// enforce: a positive journal, a page from 1 to config.MaxPageNumber, a run
// id of the shape runs have (it goes into every record), and for a walk,
// its counters and limits within the config's bounds and its marks small
// and free of control characters (they go into the ledger). Its error
// names the field and what is expected, without echoing the value.
func (j Job) Validate() error {
	bad := func(field, want string) error { return fmt.Errorf("job %s: expected %s", field, want) }
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
	if !j.Nightly {
		if !reflect.DeepEqual(j.Walk, engine.Walk{Page: j.Page}) {
			return bad("walk fields", "none on a page job (they belong to nightly jobs)")
		}
		return nil
	}
	within := func(field string, v, lo, hi int) error {
		if v < lo || v > hi {
			return bad(field, fmt.Sprintf("%d to %d", lo, hi))
		}
		return nil
	}
	for _, c := range []struct {
		field     string
		v, lo, hi int
	}{
		{"max_pages", j.MaxPages, 1, config.MaxPages},
		{"stop_after_known", j.StopAfterKnown, 1, config.MaxPages},
		{"stop_after_repeat", j.StopAfterRepeat, 0, config.MaxPages},
		{"walked", j.Walked, 0, j.MaxPages},
		{"known_run", j.KnownRun, 0, j.MaxPages},
		{"repeat_run", j.RepeatRun, 0, j.MaxPages},
		{"skip_from", j.SkipFrom, 0, config.MaxPageNumber},
		{"reached", j.Reached, 0, config.MaxPageNumber},
		{"mark_at", j.MarkAt, 0, maxMarkEntries},
	} {
		if err := within(c.field, c.v, c.lo, c.hi); err != nil {
			return err
		}
	}
	if (j.InGap || j.Sweep || j.SkipFrom > 0) && len(j.Marks) == 0 {
		return bad("in_gap, sweep and skip_from", "none without marks")
	}
	if len(j.Marks) > engine.MaxMarks {
		return bad("marks", fmt.Sprintf("at most %d", engine.MaxMarks))
	}
	for i, m := range j.Marks {
		if err := validMark(fmt.Sprintf("marks[%d]", i), m); err != nil {
			return err
		}
	}
	if err := validEntries("tail", j.Tail); err != nil {
		return err
	}
	if len(j.Recent) > maxRecent || j.RecentLast < 0 || j.RecentLast > len(j.Recent) {
		return bad("recent", fmt.Sprintf("at most %d entries, recent_last within them", maxRecent))
	}
	return validEntriesMax("recent", j.Recent, maxRecent)
}

func validMark(field string, m ledger.WalkMark) error {
	if m.Page < 1 || m.Page > config.MaxPageNumber {
		return fmt.Errorf("job %s.page: expected 1 to %d", field, config.MaxPageNumber)
	}
	if err := validEntries(field+".papers", m.Papers); err != nil {
		return err
	}
	return validEntries(field+".gap", m.Gap)
}

func validEntries(field string, es []string) error { return validEntriesMax(field, es, maxMarkEntries) }

func validEntriesMax(field string, es []string, most int) error {
	if len(es) > most {
		return fmt.Errorf("job %s: expected at most %d entries", field, most)
	}
	for _, e := range es {
		if e == "" || len(e) > maxMarkEntry || record.HasControl(e) {
			return fmt.Errorf("job %s: expected paper ids of 1 to %d bytes without control characters", field, maxMarkEntry)
		}
	}
	return nil
}
