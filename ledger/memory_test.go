package ledger_test

import (
	"testing"

	"github.com/litcrawl/litcrawl/ledger"
	"github.com/litcrawl/litcrawl/ledger/ledgertest"
)

func TestMemoryConformance(t *testing.T) {
	ledgertest.Run(t, func(t *testing.T) (ledger.Ledger, func() ledger.Ledger) {
		return ledger.NewMemory(), nil
	})
}
