package record

import (
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/internal/textsafe"
)

// FuzzHasControl: the byte scan says what the rune scan of
// textsafe.Control says, on any bytes (invalid UTF-8 too).
func FuzzHasControl(f *testing.F) {
	for _, s := range []string{"", "plain", "a\x00b", "esc\x1b[", "del\x7f", "c1\u0085", "\xc2", "\xc2\x80", "\x80\x9f", "\xc3\x80", "中文\u009f", "nbsp\u00a0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := HasControl(s), strings.ContainsFunc(s, textsafe.Control); got != want {
			t.Errorf("HasControl(%q) = %v, the rune scan says %v", s, got, want)
		}
	})
}
