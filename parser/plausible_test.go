package parser

import (
	"strings"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/record"
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

// Page furniture in a field read from the page is a finding, whatever
// else the field looks like.
func TestFurnitureIsAFinding(t *testing.T) {
	for _, r := range []record.Record{
		{Title: "Book学术 搜索 登录", Warnings: []string{record.WarnNoJSON}},
		{Title: "Graphs", Abstract: "We study graphs and prove a bound on their diameter. 上一页 1 2 下一页", Warnings: []string{record.WarnNoJSON}},
		{Title: "Graphs", AbstractCN: "京ICP备2023020795号-1"}, // a field only the page gives, on a record with JSON
	} {
		found := false
		for _, f := range Implausible(r, testNow) {
			found = found || strings.Contains(f.Why, "furniture")
		}
		if !found {
			t.Errorf("no furniture finding for %+v: %+v", r, Implausible(r, testNow))
		}
	}
}
