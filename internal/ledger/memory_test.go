package ledger_test

import (
	"context"
	"testing"

	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/internal/ledger/ledgertest"
)

func TestMemoryConformance(t *testing.T) {
	ledgertest.Run(t, func(t *testing.T) (ledger.Ledger, func() ledger.Ledger) {
		return ledger.NewMemory(), nil
	})
}

// A run without an id (crawl parse) finds its own papers as its own.
func TestMemoryRunWithoutID(t *testing.T) {
	l := ledger.NewMemory()
	ctx := context.Background()
	p := []ledger.Paper{{ID: "1", DOI: "10.1/a"}}
	if _, err := l.Commit(ctx, ledger.Group{Pages: []ledger.Page{{Papers: p}}}); err != nil {
		t.Fatal(err)
	}
	seen, _ := l.Lookup(ctx, []ledger.Paper{{ID: "2", DOI: "10.1/A"}}, "")
	if seen[0].Delivery != ledger.DeliveredThisRun {
		t.Fatalf("a paper delivered by the run without an id: %v", seen[0])
	}
}
