package parser

import (
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/site"
)

// testNow is the date the plausibility checks of the tests take as today.
var testNow = time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)

// Every fixture page parses to records whose every field looks like that
// field: the checks raise no false alarm on the site's layouts, real
// captures and the edge pages.
func TestFixturesPlausible(t *testing.T) {
	for _, rel := range fixturePages(t) {
		data, err := readRepoFile(rel)
		if err != nil {
			t.Fatal(err)
		}
		journal, pageNo, _ := site.Default.ParseFile(rel)
		page, err := Parse(data, Options{Capture: rel, Journal: journal, Page: pageNo})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range page.Findings(testNow) {
			t.Errorf("%s: record %d: %s %q %s", rel, f.Position, f.Field, f.Value, f.Why)
		}
	}
}
