package app

import (
	"fmt"

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
	return nil
}
