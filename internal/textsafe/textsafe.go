// Package textsafe is the one rule for showing text that came from
// outside (a site, a configuration file, a lock file another process
// wrote, a server's reply) on a terminal or in a message: no character
// in it may move the cursor, end the line, or reorder the text around it.
package textsafe

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Control reports whether r is a control character: C0 (NUL, ESC, the
// line breaks, …), DEL or C1. It is the one rule of what a record's
// fields (record.CleanControl), a file path (sink.CheckPath), a link or id
// in a feed and a header value (fetch.user_agent) may not hold.
func Control(r rune) bool {
	return r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0
}

// Unsafe reports whether r would change how a terminal or a log viewer
// shows the text around it, or hide in it: a control character (Control),
// the line and paragraph separators, the format characters (the
// bidirectional marks, embeddings, overrides and isolates, zero-width
// characters, the byte order mark) and the other characters that show as
// nothing (fillers, the combining grapheme joiner, variation selectors).
func Unsafe(r rune) bool {
	if r < 0x80 {
		return r < 0x20 || r == 0x7f
	}
	return Control(r) || unicode.In(r, unicode.Zl, unicode.Zp, unicode.Cf, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector)
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

// Lines is s as lines of a message: Line of each of its lines, the line
// breaks (\n) kept.
func Lines(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r != '\n' && Unsafe(r) }) && utf8.ValidString(s) {
		return s
	}
	ls := strings.Split(s, "\n")
	for i, l := range ls {
		ls[i] = Line(l)
	}
	return strings.Join(ls, "\n")
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
