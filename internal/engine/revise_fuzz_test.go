package engine

import (
	"testing"

	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/record"
)

// A print read from a ledger is bytes anyone could have written (a state
// file, a papers bucket): judging a read against any print never panics,
// and a read judged against its own print is the same content.
func FuzzJudge(f *testing.F) {
	r := paper()
	p := fingerprint(&r).withRevision(2)
	f.Add(p[:], "A study", "Whole abstract.", true)
	f.Add(make([]byte, ledger.PrintSize), "", "", false)
	f.Fuzz(func(t *testing.T, old []byte, title, abstract string, citations bool) {
		var o ledger.Print
		copy(o[:], old)
		rec := record.Record{ID: "42", Title: title, Abstract: abstract}
		fresh := fingerprint(&rec)
		judge(o, fresh, citations) // any print: no panic
		self := fresh.withRevision(1)
		if v, changed := judge(self, fresh, citations); v != same || changed != 0 {
			t.Fatalf("a read judged against its own print: %v %v", v, changed.names())
		}
	})
}
