// Package quality is the quality gate of a crawl: what the parsed records
// of a run hold (Counts: fields present, and fields that do not look like
// what they are, parser.Page.Findings), and the one decision whether the
// run alarms (Check, exit 4). Runs, run reports and the history call it;
// the parser's drift test holds pages to it.
package quality

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/litcrawl/litcrawl/parser"
)

// Alarm is the gate's verdict when it alarms.
type Alarm struct{ msg string }

func (a *Alarm) Error() string { return a.msg }

// Counts are what the parsed records of a run hold, to catch layout
// drift: how many have each field, and whose fields look wrong.
type Counts struct {
	Pages      int `json:"pages"`   // pages parsed
	Records    int `json:"records"` // records on them
	WithTitle  int `json:"with_title"`
	WithDOI    int `json:"with_doi"`
	WithAuthor int `json:"with_authors"`
	WithDate   int `json:"with_published"`
	// Implausible counts the records with a field that does not look like
	// that field (parser.Page.Findings); Fields counts them by field, and
	// Examples keeps the first offending value of each field.
	Implausible int                       `json:"implausible,omitempty"`
	Fields      map[string]int            `json:"implausible_fields,omitempty"`
	Examples    map[string]parser.Finding `json:"implausible_examples,omitempty"`
}

// Add counts one parsed page: its records and their findings.
func (q *Counts) Add(page *parser.Page, now time.Time) { q.AddFound(page, page.Findings(now)) }

// AddFound is Add with the page's findings found already.
func (q *Counts) AddFound(page *parser.Page, findings []parser.Finding) {
	q.Pages++
	q.Records += len(page.Records)
	for _, r := range page.Records {
		if r.Title != "" {
			q.WithTitle++
		}
		if r.DOI != "" {
			q.WithDOI++
		}
		if len(r.Authors) > 0 {
			q.WithAuthor++
		}
		if r.Published != "" {
			q.WithDate++
		}
	}
	last := 0
	for _, f := range findings {
		if f.Position != last {
			q.Implausible++
			last = f.Position
		}
		if q.Fields == nil {
			q.Fields, q.Examples = map[string]int{}, map[string]parser.Finding{}
		}
		if _, ok := q.Examples[f.Field]; !ok {
			q.Examples[f.Field] = f
		}
		q.Fields[f.Field]++
	}
}

// Thresholds of the quality gate (the file's quality: keys): a run whose parsed papers fall below them exits 4
// (the site's layout has probably changed).
type Thresholds struct {
	MinPapersPerPage  float64 `yaml:"min_papers_per_page" json:"min_papers_per_page"`
	MinTitleShare     float64 `yaml:"min_title_share" json:"min_title_share"`
	MinDOIShare       float64 `yaml:"min_doi_share" json:"min_doi_share"`
	MinAuthorsShare   float64 `yaml:"min_authors_share" json:"min_authors_share"`
	MinPublishedShare float64 `yaml:"min_published_share" json:"min_published_share"`
	// MaxImplausibleShare is the share of records with a field that does
	// not look like that field (a title that reads as names, an abstract
	// that is a title line, page furniture in any field) above which the
	// run exits 4. 0, the default: any such record alarms.
	MaxImplausibleShare float64 `yaml:"max_implausible_share" json:"max_implausible_share"`
	// Hold says which records are held back in the quarantine rather than
	// delivered: HoldImplausible (the default), those with a finding (a
	// field that does not look like what it is), with their page's bytes;
	// HoldNone, none.
	Hold string `yaml:"hold" json:"hold,omitempty"`
}

// Values of Thresholds.Hold.
const (
	HoldImplausible = "implausible"
	HoldNone        = "none"
)

// Validate checks the thresholds in the order of the file and names the
// first bad one by its key (a run history's summary is held to it too).
func (q Thresholds) Validate() error {
	for _, s := range []struct {
		key string
		v   float64
	}{
		{"quality.min_title_share", q.MinTitleShare}, {"quality.min_doi_share", q.MinDOIShare},
		{"quality.min_authors_share", q.MinAuthorsShare}, {"quality.min_published_share", q.MinPublishedShare},
		{"quality.max_implausible_share", q.MaxImplausibleShare},
	} {
		if !(s.v >= 0 && s.v <= 1) { // NaN too
			return fmt.Errorf("%s: %v: expected a share from 0 to 1", s.key, s.v)
		}
	}
	if !(q.MinPapersPerPage >= 0 && q.MinPapersPerPage <= 10000) {
		return fmt.Errorf("quality.min_papers_per_page: %v: expected 0 to 10000", q.MinPapersPerPage)
	}
	if q.Hold != "" && q.Hold != HoldImplausible && q.Hold != HoldNone {
		return fmt.Errorf("quality.hold: %q: expected %q (records with a finding go to the quarantine, with their page) or %q (every record is delivered)", q.Hold, HoldImplausible, HoldNone)
	}
	return nil
}

// Holds reports whether records with a finding are held back.
func (q Thresholds) Holds() bool { return q.Hold != HoldNone }

// Check is the quality gate: it names the first field of the parsed
// papers below its threshold, or the fields that do not look like what
// they are above quality.max_implausible_share, or returns nil. A run
// that gets an error from it exits 4.
func Check(t Thresholds, q Counts) error {
	if q.Pages == 0 {
		return nil
	}
	if per := float64(q.Records) / float64(q.Pages); per < t.MinPapersPerPage {
		return &Alarm{fmt.Sprintf("quality alarm: %.1f papers per page (quality.min_papers_per_page %.1f): the site's layout has probably changed", per, t.MinPapersPerPage)}
	}
	var low []string
	for _, f := range []struct {
		name string
		n    int
		min  float64
		key  string
	}{
		{"a title", q.WithTitle, t.MinTitleShare, "quality.min_title_share"},
		{"a DOI", q.WithDOI, t.MinDOIShare, "quality.min_doi_share"},
		{"authors", q.WithAuthor, t.MinAuthorsShare, "quality.min_authors_share"},
		{"a publication date", q.WithDate, t.MinPublishedShare, "quality.min_published_share"},
	} {
		if share := float64(f.n) / float64(max(q.Records, 1)); share < f.min {
			low = append(low, fmt.Sprintf("%.0f%% have %s (%s %.2f)", 100*share, f.name, f.key, f.min))
		}
	}
	if len(low) > 0 { // every field below its minimum, not the first alone
		return &Alarm{fmt.Sprintf("quality alarm: of %d papers only %s: the site's layout has probably changed", q.Records, strings.Join(low, "; only "))}
	}
	if q.Records > 0 && float64(q.Implausible)/float64(q.Records) > t.MaxImplausibleShare {
		return &Alarm{fmt.Sprintf("quality alarm: %d of %d papers have a field that does not look like one (quality.max_implausible_share %.2f): %s: the site's layout has probably changed",
			q.Implausible, q.Records, t.MaxImplausibleShare, describeFindings(q))}
	}
	return nil
}

// describeFindings names each field found implausible, how many records,
// and the first offending value with where it was seen.
func describeFindings(q Counts) string {
	fields := slices.Sorted(maps.Keys(q.Fields))
	parts := make([]string, 0, len(fields))
	for _, f := range fields {
		e := q.Examples[f]
		where := ""
		if e.Capture != "" {
			where = fmt.Sprintf(" (%s, paper %d)", e.Capture, e.Position)
		}
		parts = append(parts, fmt.Sprintf("%s in %d: %q %s%s", f, q.Fields[f], e.Value, e.Why, where))
	}
	return strings.Join(parts, "; ")
}
