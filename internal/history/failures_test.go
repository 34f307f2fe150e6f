package history

import (
	"strconv"
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/internal/engine"
)

// Failed pages that failed the same way (their errors alike but for the
// page's URL) are one line of the summary, their pages as ranges.
func TestFailuresGroupedInTheSummary(t *testing.T) {
	var fs []engine.PageFailure
	for p := 80; p <= 300; p++ {
		fs = append(fs, engine.PageFailure{Journal: 7, Page: p, Error: "fetch https://h/literature_d7_" + strconv.Itoa(p) + ".htm: host is down"})
	}
	fs = append(fs, engine.PageFailure{Journal: 7, Page: 3, Error: "fetch https://h/literature_d7_3.htm: HTTP 404"},
		engine.PageFailure{Journal: 8, Page: 5, Error: "fetch https://h/literature_d8_5.htm: host is down"},
		engine.PageFailure{Journal: 7, Page: 2, Error: "fetch https://h/literature_d7_2.htm: host is down"})
	gs := GroupFailures(fs)
	var got []string
	for _, g := range gs {
		got = append(got, strconv.FormatInt(g.Journal, 10)+" "+PageRanges(g.Pages)+" "+g.Text)
	}
	want := []string{"7 2, 80-300 fetch …: host is down", "7 3 fetch …: HTTP 404", "8 5 fetch …: host is down"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("groups %q, want %q", got, want)
	}
	if gs[1].First != "fetch https://h/literature_d7_3.htm: HTTP 404" {
		t.Errorf("a single failure keeps its error whole: %q", gs[1].First)
	}
}
