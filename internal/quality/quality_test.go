package quality_test

import (
	"strings"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/internal/config"
	"github.com/litcrawl/litcrawl/internal/quality"
	"github.com/litcrawl/litcrawl/parser"
)

// A page whose names line stands before each title: every field present,
// two records misread. Counts give each record once, each field its
// count and first value; Check alarms at the default share and passes at
// a share above what was found.
func TestImplausibleCountsAndCheck(t *testing.T) {
	page, err := parser.Parse([]byte(`Drift最新文献

Lin Wei, Maria Gonzalez

Adaptive Checkpoint Placement for Stragglers

Drift Pub Date : 2024-03-01 DOI: 10.1016/j.x.2024.1

Straggling workers slow synchronous training by more than 30% when links span continents. We place checkpoints where delay exceeds a threshold.

Ada Novak, Peter Lindqvist

Consensus Latency Bounds under Partial Synchrony

Drift Pub Date : 2010-11-01 DOI: 10.1109/x.2010.2

We prove that any partially synchronous consensus protocol needs at least 2f+1 rounds after GST, and that the bound is tight.
`), parser.Options{Capture: "drift.txt"})
	if err != nil {
		t.Fatal(err)
	}
	var q quality.Counts
	q.Add(page, time.Now())
	if q.Records != 2 || q.Implausible != 2 || q.Fields["authors"] != 2 || q.Examples["authors"].Capture != "drift.txt" {
		t.Fatalf("counts %+v", q)
	}
	th := config.Default().Quality
	th.MinPapersPerPage = 0
	err = quality.Check(th, q)
	if err == nil || !strings.Contains(err.Error(), "2 of 2 papers have a field that does not look like one") ||
		!strings.Contains(err.Error(), `authors in 2: "Straggling workers`) || !strings.Contains(err.Error(), "(drift.txt, paper 1)") {
		t.Fatalf("check: %v", err)
	}
	th.MaxImplausibleShare = 1
	if err := quality.Check(th, q); err != nil {
		t.Errorf("at share 1: %v", err)
	}
}

// Every field below its minimum is named, not the first alone.
func TestAlarmNamesEveryLowField(t *testing.T) {
	th := config.Default().Quality
	err := quality.Check(th, quality.Counts{Pages: 2, Records: 40, WithTitle: 40, WithDOI: 10, WithAuthor: 20, WithDate: 40})
	if err == nil || !strings.Contains(err.Error(), "25% have a DOI (quality.min_doi_share 0.50)") ||
		!strings.Contains(err.Error(), "50% have authors (quality.min_authors_share 0.80)") {
		t.Errorf("alarm: %v", err)
	}
}
