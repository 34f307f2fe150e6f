package atom

import "testing"

// The quick path of clean (text with nothing to change) gives what the
// rune-by-rune path gives, for any text.
func FuzzClean(f *testing.F) {
	for _, s := range []string{"", "A title", " lead", "trail ", "two  spaces", "tab\there", "line\nbreak", "ü", "\x00", "\xff", "a\u202eb",
		"0123456789"} {
		f.Add(s, true, 5)
		f.Add(s, false, 1000)
	}
	f.Fuzz(func(t *testing.T, s string, oneLine bool, max int) {
		if max < 1 || max > 10000 {
			return
		}
		if got, want := clean(s, oneLine, max), cleanRunes(s, oneLine, max); got != want {
			t.Errorf("clean(%q, %v, %d) = %q, rune by rune %q", s, oneLine, max, got, want)
		}
	})
}
