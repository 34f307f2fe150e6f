package frontier

import (
	"testing"

	"github.com/litcrawl/litcrawl/internal/ledger"
)

// A papers bucket value read back (a run id, and a print after a zero
// byte) is what was written, and any bytes (an earlier version's value,
// a hand-written one) read as a run and a print, never a panic.
func FuzzDecodeEntry(f *testing.F) {
	var p ledger.Print
	for i := range p {
		p[i] = byte(i + 1)
	}
	f.Add([]byte("20261205T020000Z-01020304"), p[:])
	f.Add([]byte(""), make([]byte, ledger.PrintSize))
	f.Add([]byte("r\x00"), []byte{1})
	f.Fuzz(func(t *testing.T, run, print []byte) {
		decodeEntry(append(run, print...)) // any bytes: no panic
		var pr ledger.Print
		copy(pr[:], print)
		if len(run) > 0 && containsZero(run) {
			return // run ids hold no zero byte
		}
		r, got := decodeEntry(encodeEntry(string(run), pr))
		if r != string(run) || got != pr {
			t.Fatalf("(%q, %x) read back as (%q, %x)", run, pr, r, got)
		}
	})
}

func containsZero(b []byte) bool {
	for _, c := range b {
		if c == 0 {
			return true
		}
	}
	return false
}
