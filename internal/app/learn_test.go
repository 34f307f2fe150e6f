package app

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/history"
	"github.com/litcrawl/litcrawl/internal/testsite"
)

// The quality gate learns a journal from its runs: after three runs whose
// papers all show their citation count, a run where the journal's pages
// drop the citation line exits 4, naming the journal and the field,
// though every field left looks right and the fixed thresholds pass; a
// run with --relearn accepts the new layout, and the runs after it learn
// from it.
func TestQualityGateLearnsTheJournal(t *testing.T) {
	site := testsite.New()
	site.SynthJournal(79, 2, 10)
	e, cfg := siteEnv(t, site, io.Discard)
	out := filepath.Join(t.TempDir(), "papers.jsonl")
	run := func(relearn bool) error {
		_, err := e.Crawl(context.Background(), Crawl{Kind: history.Backfill, Journals: []int64{79}, From: 1, To: 2,
			Sinks: []string{"jsonl:" + out}, StateDir: cfg.StateDir, NoResume: true, Relearn: relearn})
		return err
	}
	for i := range 3 {
		if err := run(false); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
	}
	for p := 1; p <= 2; p++ {
		for i := range 10 {
			site.SetVariant(testsite.SynthID(79, p, i), testsite.Variant{NoCitationLine: true})
		}
	}
	for i := range 2 { // the alarm holds, run after run: an alarmed run is not learned from
		err := run(false)
		if exitcode.Of(err) != exitcode.Quality || !strings.Contains(err.Error(), "journal 79: citations in 0% of its papers") {
			t.Fatalf("the journal's papers without their citations, run %d: exit %d: %v", i+1, exitcode.Of(err), err)
		}
	}
	h, err := history.Read(cfg.StateDir, cfg.Quality)
	if err != nil || len(h.Runs) == 0 || h.Runs[0].Quality != "alarm" || !strings.Contains(h.Runs[0].QualityAlarm, "journal 79: citations") {
		t.Fatalf("crawl runs shows the alarmed run as %+v (%v)", h.Runs[0], err)
	}
	if err := run(true); err != nil {
		t.Fatalf("--relearn: %v", err)
	}
	if err := run(false); err != nil {
		t.Fatalf("the run after --relearn learns from it: %v", err)
	}
}
