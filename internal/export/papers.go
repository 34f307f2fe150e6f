package export

import (
	"strings"
	"time"

	"github.com/litcrawl/litcrawl/record"
)

// Papers is the last revision of each paper of the records added: of one
// id, the record of the highest revision (of equal ones, the later); an
// id that a record replaces (its paper's id changed: first read without
// its JSON, later with its site id) is that record's paper, and goes.
type Papers struct {
	at   map[string]int // id → index in recs
	recs []record.Record
	gone map[string]bool // ids a record replaces
}

// Len is how many papers (ids) were added.
func (ps *Papers) Len() int { return len(ps.recs) }

// Add adds a record (a revision of its paper).
func (ps *Papers) Add(r record.Record) {
	if ps.at == nil {
		ps.at, ps.gone = map[string]int{}, map[string]bool{}
	}
	if r.Replaces != "" && r.Replaces != r.ID {
		ps.gone[r.Replaces] = true
	}
	if i, ok := ps.at[r.ID]; ok {
		if r.Revision >= ps.recs[i].Revision {
			ps.recs[i] = r
		}
		return
	}
	ps.at[r.ID] = len(ps.recs)
	ps.recs = append(ps.recs, r)
}

// Filter selects papers: of one journal (its site id, or its name in any
// case; "" any), published within [Since, Until] (YYYY-MM-DD, either ""
// for open; a paper without a date is left out when either is given).
type Filter struct {
	Journal      string
	Since, Until string
	// FetchedSince (YYYY-MM-DD): only papers the crawl fetched on or
	// after that day (source.fetched_at, in UTC): the papers that came
	// since, whatever their date.
	FetchedSince string
}

// Latest is each paper's last revision that f selects, in the order the
// papers were first read.
func (ps *Papers) Latest(f Filter) []record.Record {
	var out []record.Record
	for _, r := range ps.recs {
		if ps.gone[r.ID] || !f.selects(r) {
			continue
		}
		out = append(out, r)
	}
	return out
}

func (f Filter) selects(r record.Record) bool {
	if f.Journal != "" {
		j := r.Journal
		if j == nil || !(strings.EqualFold(strings.TrimSpace(j.Name), strings.TrimSpace(f.Journal)) || j.ID != 0 && f.Journal == itoa(j.ID)) {
			return false
		}
	}
	if f.FetchedSince != "" {
		t, err := time.Parse(time.RFC3339, r.Source.FetchedAt)
		if err != nil || t.UTC().Format("2006-01-02") < f.FetchedSince {
			return false
		}
	}
	if f.Since != "" || f.Until != "" {
		d := day(r.Published)
		if d == "" || f.Since != "" && d < f.Since || f.Until != "" && d > f.Until {
			return false
		}
	}
	return true
}

// day is a paper's date as YYYY-MM-DD for comparing ("" when it has
// none); a month or a year stands for its first day.
func day(published string) string {
	y, m, d, ok := dateParts(published)
	if !ok {
		return ""
	}
	return pad(y, 4) + "-" + pad(max(m, 1), 2) + "-" + pad(max(d, 1), 2)
}
