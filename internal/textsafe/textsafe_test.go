package textsafe

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLine(t *testing.T) {
	for in, want := range map[string]string{
		"plain name 名":                         "plain name 名",
		"two\nlines\r":                         "two?lines?",
		"\x1b[2Jwiped":                         "?[2Jwiped",
		"bell\a del\x7f c1\u0085":              "bell? del? c1?",
		"evil\u202egnp.exe":                    "evil?gnp.exe",
		"iso\u2066late\u2069 \u200emark\u061c": "iso?late? ?mark?",
		"sep\u2028line\u2029para":              "sep?line?para",
		"broken \xff\xfe utf-8":                "broken ? utf-8",
	} {
		if got := Line(in); got != want {
			t.Errorf("Line(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCut(t *testing.T) {
	if got := Cut("abcdef", 6); got != "abcdef" {
		t.Errorf("Cut at its length = %q", got)
	}
	if got := Cut("期刊名称很长", 3); got != "期刊名…" {
		t.Errorf("Cut counts characters, not bytes: %q", got)
	}
	if got := Cut("a\nbcdef", 3); got != "a?b…" {
		t.Errorf("Cut cleans before cutting: %q", got)
	}
}

func FuzzLine(f *testing.F) {
	f.Add("a\x1b\u202e\xff", 5)
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < 0 || max > 1000 {
			return
		}
		out := Cut(s, max)
		if !utf8.ValidString(out) {
			t.Fatalf("Cut(%q) = %q: not UTF-8", s, out)
		}
		if strings.ContainsFunc(out, Unsafe) {
			t.Fatalf("Cut(%q) = %q: holds an unsafe character", s, out)
		}
		if n := utf8.RuneCountInString(out); n > max+1 {
			t.Fatalf("Cut(%q, %d) has %d characters", s, max, n)
		}
	})
}

// Lines keeps a message's line breaks and makes each line safe.
func TestLines(t *testing.T) {
	in := "crawl parse: ev\u202eil\u009bx.htm: no records\nsecond\x1b[2J line\u2028"
	if got, want := Lines(in), "crawl parse: ev?il?x.htm: no records\nsecond?[2J line?"; got != want {
		t.Errorf("Lines = %q, want %q", got, want)
	}
	if s := "plain\ntwo lines"; Lines(s) != s {
		t.Errorf("a safe message changed: %q", Lines(s))
	}
}
