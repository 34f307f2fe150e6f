package ledger

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/litcrawl/litcrawl/record"
)

// WalkState is what a journal's nightly walks remember from night to
// night (engine.Walk): the head of the listing, the gaps earlier walks
// left, and where the audit stands. A ledger that keeps it (WalkStates)
// commits it with the pages of the walk, so a walk killed at any moment
// carries on as one stopped there.
type WalkState struct {
	// Head are the first papers of the listing (their ids and "doi:"
	// keys, in listing order) when a walk last read page 1: the next
	// walk's top part ends where it meets two of them next to each other,
	// in their order (none: no walk read page 1 yet, or the state is of an
	// earlier version).
	Head []string `json:"head,omitempty"`
	// Marks are the gaps earlier walks left, topmost first.
	Marks []WalkMark `json:"marks,omitempty"`
	// Audit is where the rotating re-read of the listing stands.
	Audit Audit `json:"audit,omitzero"`
}

// IsZero: nothing remembered.
func (s WalkState) IsZero() bool {
	return len(s.Head) == 0 && len(s.Marks) == 0 && s.Audit == (Audit{})
}

// Clone is a deep copy.
func (s WalkState) Clone() WalkState {
	out := WalkState{Head: slices.Clone(s.Head), Audit: s.Audit}
	if len(s.Marks) > 0 {
		out.Marks = make([]WalkMark, len(s.Marks))
		for i, m := range s.Marks {
			out.Marks[i] = m.Clone()
		}
	}
	return out
}

// WalkMark is a gap a nightly walk left when it stopped short (at its page
// limit, a failed page, a stop or a kill): papers never delivered may lie
// between Papers and End. Entries are paper ids, each maybe followed by
// its "doi:" key, in listing order.
type WalkMark struct {
	// Page is the page the gap's start was last seen on.
	Page int `json:"page"`
	// Papers are the last papers delivered above the gap.
	Papers []string `json:"papers"`
	// Offset counts the papers from the first of the bound above the gap
	// (the head, or the End of the mark above) to the last of Papers, as
	// last counted: where to look for Papers once that bound is found (0:
	// not known; Page is the guess then).
	Offset int `json:"offset,omitempty"`
	// From, counted as Offset, is how far a walk looking for Papers got,
	// page by page, without meeting them: the next goes on from there (0:
	// none did).
	From int `json:"from,omitempty"`
	// Far, counted as Offset, is the furthest a walk got on this gap;
	// Stuck counts the nights in a row a walk looked for it and got no
	// further (delivered none of its papers, closed none, got no further
	// down): engine.MaxStuck gives it up.
	Far   int `json:"far,omitempty"`
	Stuck int `json:"stuck,omitempty"`
	// End are the first papers of the delivered band below the gap: two
	// of them met next to each other, in their order, prove the gap
	// closed. None: not known (the gap ends at the listing's end, or by
	// the walk's give-up rule: engine.Walk).
	End []string `json:"end,omitempty"`
}

// Clone is a deep copy.
func (m WalkMark) Clone() WalkMark {
	m.Papers, m.End = slices.Clone(m.Papers), slices.Clone(m.End)
	return m
}

// Audit is where a journal's audit stands: each nightly re-reads a few
// listing pages beyond its walk, from Next on, and starts again at the
// top when the listing ends, so that every page is re-read within a known
// number of nights. Times are Unix seconds.
type Audit struct {
	// Next is the page the next audit reads first (0: it has not begun).
	Next int `json:"next,omitempty"`
	// Since is when the current round began: the pages before Next were
	// re-read since.
	Since int64 `json:"since,omitempty"`
	// Round is when the last complete round began: every page was re-read
	// since (0: no round complete yet).
	Round int64 `json:"round,omitempty"`
	// Pages is the listing's length in pages when the last round ended.
	Pages int `json:"pages,omitempty"`
}

// Oldest is how long ago the page re-read least recently was last read
// by the audit, at now: every page was re-read since then. ok false: no
// round is complete yet, so some pages were never re-read.
func (a Audit) Oldest(now time.Time) (age time.Duration, ok bool) {
	if a.Round == 0 {
		return 0, false
	}
	return max(0, now.Sub(time.Unix(a.Round, 0))), true
}

// WalkStates is the optional ability to remember each journal's walk
// state.
type WalkStates interface {
	// WalkState is the journal's state (none: the zero state).
	WalkState(ctx context.Context, journal int64) (WalkState, error)
	// SetWalkState stores the journal's state; the zero state clears it.
	SetWalkState(ctx context.Context, journal int64, s WalkState) error
}

// Emptiness is the optional ability to tell a state that holds nothing
// yet (no paper delivered, no page done): a nightly on it is a first
// crawl, and says so.
type Emptiness interface {
	Empty(ctx context.Context) (bool, error)
}

// EncodeWalkState is the stored form of a walk state (JSON).
func EncodeWalkState(s WalkState) ([]byte, error) { return json.Marshal(s) }

// DecodeWalkState reads a stored walk state, in this version's form (a
// JSON object) or an earlier version's (a JSON array of marks, each with
// its page and papers: their gaps have no End, and a walk that cannot
// prove them closed ends them by its give-up rule).
func DecodeWalkState(b []byte) (WalkState, error) {
	var s WalkState
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		if err := json.Unmarshal(b, &s.Marks); err != nil {
			return WalkState{}, fmt.Errorf("walk marks of an earlier version: %w", err)
		}
	} else if err := json.Unmarshal(b, &s); err != nil {
		return WalkState{}, fmt.Errorf("walk state: %w", err)
	}
	// Empty lists read as none, as a state written again would.
	if len(s.Marks) == 0 {
		s.Marks = nil
	}
	if len(s.Head) == 0 {
		s.Head = nil
	}
	for i := range s.Marks {
		if len(s.Marks[i].End) == 0 {
			s.Marks[i].End = nil
		}
	}
	return s, nil
}

// Bounds of a walk state read back (from the state file, the fleet's
// bucket, a fleet job): what this version writes stays within them, and a
// state beyond them was written by someone else, or damaged.
const (
	// MaxMarks bounds a journal's marks.
	MaxMarks = 64
	// MaxMarkEntries bounds a mark's entries (its papers' ids and DOI
	// keys), and the head's; MaxEntryBytes one entry.
	MaxMarkEntries = 16
	MaxEntryBytes  = 4096
	// MaxPage is the highest page number (config.MaxPageNumber, which a
	// test holds equal); MaxPerPage bounds the papers a page is counted
	// with, and MaxPosition a paper's place in a listing.
	MaxPage     = 100_000_000
	MaxPerPage  = 100_000
	MaxPosition = MaxPage * MaxPerPage
	// maxStuck bounds a mark's count of nights without progress.
	maxStuck = 1000
)

// CheckWalkState checks a walk state read back against the bounds above:
// its marks few, small and free of control characters (they go into the
// ledger and onto a terminal), its numbers in range. field names it in the
// error, which never echoes a value.
func CheckWalkState(field string, s WalkState) error {
	if len(s.Marks) > MaxMarks {
		return fmt.Errorf("%s.marks: expected at most %d", field, MaxMarks)
	}
	if err := CheckEntries(field+".head", s.Head, MaxMarkEntries); err != nil {
		return err
	}
	for i, mk := range s.Marks {
		if err := CheckWalkMark(fmt.Sprintf("%s.marks[%d]", field, i), mk); err != nil {
			return err
		}
	}
	a := s.Audit
	if a.Next < 0 || a.Next > MaxPage || a.Pages < 0 || a.Pages > MaxPage || a.Since < 0 || a.Round < 0 {
		return fmt.Errorf("%s.audit: expected pages 0 to %d and times from 1970 on", field, MaxPage)
	}
	return nil
}

// CheckWalkMark checks one mark (CheckWalkState).
func CheckWalkMark(field string, m WalkMark) error {
	if m.Page < 1 || m.Page > MaxPage {
		return fmt.Errorf("%s.page: expected 1 to %d", field, MaxPage)
	}
	for _, v := range []int{m.Offset, m.From, m.Far} {
		if v < 0 || v > MaxPosition {
			return fmt.Errorf("%s: expected offset, from and far 0 to %d, stuck 0 to %d", field, MaxPosition, maxStuck)
		}
	}
	if m.Stuck < 0 || m.Stuck > maxStuck {
		return fmt.Errorf("%s: expected offset, from and far 0 to %d, stuck 0 to %d", field, MaxPosition, maxStuck)
	}
	if err := CheckEntries(field+".papers", m.Papers, MaxMarkEntries); err != nil {
		return err
	}
	return CheckEntries(field+".end", m.End, MaxMarkEntries)
}

// CheckEntries checks a list of paper ids and "doi:" keys: at most most
// of them, each of 1 to MaxEntryBytes bytes with no control character.
func CheckEntries(field string, es []string, most int) error {
	if len(es) > most {
		return fmt.Errorf("%s: expected at most %d entries", field, most)
	}
	for _, e := range es {
		if e == "" || len(e) > MaxEntryBytes || record.HasControl(e) {
			return fmt.Errorf("%s: expected paper ids of 1 to %d bytes without control characters", field, MaxEntryBytes)
		}
	}
	return nil
}
