package app

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/litcrawl/litcrawl/config"
	"github.com/litcrawl/litcrawl/engine"
)

// qualityAlarm names the first field of the parsed papers below its
// threshold, or returns nil.
func qualityAlarm(t config.Quality, q engine.Quality) error {
	if q.Pages == 0 {
		return nil
	}
	if per := float64(q.Records) / float64(q.Pages); per < t.MinPapersPerPage {
		return &QualityError{fmt.Sprintf("quality alarm: %.1f papers per page (quality.min_papers_per_page %.1f): the site's layout has probably changed", per, t.MinPapersPerPage)}
	}
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
			return &QualityError{fmt.Sprintf("quality alarm: only %.0f%% of %d papers have %s (%s %.2f): the site's layout has probably changed",
				100*share, q.Records, f.name, f.key, f.min)}
		}
	}
	if q.Records > 0 && float64(q.Implausible)/float64(q.Records) > t.MaxImplausibleShare {
		return &QualityError{fmt.Sprintf("quality alarm: %d of %d papers have a field that does not look like one (quality.max_implausible_share %.2f): %s: the site's layout has probably changed",
			q.Implausible, q.Records, t.MaxImplausibleShare, describeFindings(q))}
	}
	return nil
}

// describeFindings names each field found implausible, how many records,
// and the first offending value with where it was seen.
func describeFindings(q engine.Quality) string {
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
