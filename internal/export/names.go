package export

import (
	"strings"
	"unicode"
)

// Name is an author's name as the formats take it: family and given
// names (and a suffix, "Jr."), or, when the name does not tell them
// apart, a literal kept whole.
type Name struct {
	Family, Given, Suffix string
	Literal               string
}

// particles join the family name they stand before ("Di Luna", "van der
// Berg"); never the first word of a name.
var particles = map[string]bool{
	"van": true, "von": true, "der": true, "den": true, "de": true, "du": true, "da": true, "di": true,
	"del": true, "della": true, "dos": true, "das": true, "la": true, "le": true, "ter": true, "ten": true,
}

var suffixes = map[string]bool{"jr": true, "jr.": true, "sr": true, "sr.": true, "ii": true, "iii": true, "iv": true}

// SplitName reads an author's name as the site shows it. A name in
// Chinese, Japanese or Korean script, a single word, or one with a word
// "and" (which the formats read as between two names) is a literal;
// "Family, Given" is read as written; otherwise the last word is the
// family name, with the particles before it, and the rest given names.
func SplitName(s string) Name {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return Name{}
	}
	if strings.ContainsFunc(s, isCJK) {
		return Name{Literal: s}
	}
	words := strings.Fields(s)
	for _, w := range words {
		if strings.EqualFold(w, "and") {
			return Name{Literal: s}
		}
	}
	if family, given, ok := strings.Cut(s, ","); ok {
		family, given = strings.TrimSpace(family), strings.TrimSpace(given)
		if family == "" || given == "" || strings.Contains(given, ",") {
			return Name{Literal: s}
		}
		return Name{Family: family, Given: given}
	}
	var suffix string
	if n := len(words); n > 2 && suffixes[strings.ToLower(words[n-1])] {
		suffix, words = words[n-1], words[:n-1]
	}
	if len(words) < 2 {
		return Name{Literal: s}
	}
	i := len(words) - 1
	for i > 1 && particles[strings.ToLower(words[i-1])] {
		i--
	}
	return Name{Family: strings.Join(words[i:], " "), Given: strings.Join(words[:i], " "), Suffix: suffix}
}

// isCJK: a letter of Chinese, Japanese or Korean script.
func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}
