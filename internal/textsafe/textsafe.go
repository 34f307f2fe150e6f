// Package textsafe is the one rule for showing text that came from
// outside (a site, a configuration file, a lock file another process
// wrote, a server's reply) on a terminal or in a message: no character
// in it may move the cursor, end the line, or reorder the text around it.
package textsafe

import (
	"strings"
	"unicode/utf8"
)

// Unsafe reports whether r would change how a terminal or a log viewer
// shows the text around it: a C0 or C1 control character, DEL, the line
// and paragraph separators, and the bidirectional marks (the Arabic
// letter mark too), embeddings, overrides and isolates.
func Unsafe(r rune) bool {
	return r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 ||
		r == 0x2028 || r == 0x2029 ||
		r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x061c
}

// Line is s as one line of a message: broken UTF-8 and each unsafe
// character become '?'.
func Line(s string) string {
	if !strings.ContainsFunc(s, Unsafe) && utf8.ValidString(s) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if Unsafe(r) {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
}

// Cut is Line(s) of at most max characters, "…" marking a cut.
func Cut(s string, max int) string {
	s = Line(s)
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max]) + "…"
}
