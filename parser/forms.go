package parser

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/litcrawl/litcrawl/record"
)

// The forms: what a string looks like (a sentence's end, names, a title
// line, Chinese prose, a DOI link). They are the vocabulary every stage
// reads with, and depend on nothing of any stage: a stage calls the forms
// and the stage before it, never a later one.

// cutValue cuts a finding's value to maxFindingValue bytes, at a
// character's start.
func cutValue(s string) string {
	if len(s) <= maxFindingValue {
		return s
	}
	k := maxFindingValue
	for k > 0 && !utf8.RuneStart(s[k]) {
		k--
	}
	return s[:k] + "…"
}

// hasNonASCII reports whether s holds a byte outside ASCII.
func hasNonASCII(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 { // eight bytes at a time: abstracts are long
		if s[i]|s[i+1]|s[i+2]|s[i+3]|s[i+4]|s[i+5]|s[i+6]|s[i+7] >= utf8.RuneSelf {
			return true
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// isCJKParagraph: Chinese prose, as an abstract is: mostly CJK, and
// either sentence punctuation or long; a run of link words (搜索 登录) or
// a name is neither.
func isCJKParagraph(s string) bool {
	if !cjkDominant(s) {
		return false
	}
	n := utf8.RuneCountInString(s)
	return n >= 120 || n >= 12 && strings.ContainsAny(s, "，。；！？;")
}

// looksLikeNameList: two or more parts, each of which reads as a personal
// name (nameLike); a title with commas has a part that does not ("and
// Cheap Consensus").
func looksLikeNameList(s string) bool {
	parts := splitAuthors(s)
	if len(parts) < 2 {
		return false
	}
	for _, p := range parts {
		if !nameLike(p) {
			return false
		}
	}
	return true
}

// nameLike: one personal name: one to six words, each capitalised, an
// initial or a particle, no digits; or a short run of CJK characters.
func nameLike(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" || utf8.RuneCountInString(s) > 80 {
		return false
	}
	if cjkDominant(s) {
		return utf8.RuneCountInString(s) <= 8 && !strings.ContainsAny(s, "。，：:")
	}
	words := 0
	for rest := s; rest != ""; {
		var w string
		w, rest, _ = strings.Cut(rest, " ")
		if w == "" {
			continue
		}
		if words++; words > 6 {
			return false
		}
		r, _ := utf8.DecodeRuneInString(w)
		switch {
		case strings.ContainsAny(w, "0123456789"):
			return false
		case unicode.IsUpper(r):
		case nameParticles[strings.ToLower(w)]:
		case hasCJK(w):
		default:
			return false
		}
	}
	return true
}

// endsSentence reports whether text ends as a sentence does: with a
// full stop, question or exclamation mark (Latin or CJK), an ellipsis, or
// a closing bracket or quote after one.
func endsSentence(text string) bool {
	t := strings.TrimRight(text, " )]}\"'’”）】」")
	r, _ := utf8.DecodeLastRuneInString(t)
	return strings.ContainsRune(".!?。！？…", r) || t != text && strings.ContainsRune(".!?。！？", r)
}

// looksLikeProse: a long run of sentences (an abstract), not a names line.
func looksLikeProse(s string) bool {
	return len(s) > 300 && strings.Count(s, ". ") >= 2 && !looksLikeAuthors(s)
}

// looksLikeCJKNames: a line of Chinese (or Japanese, Korean) personal names,
// such as "王磊, 李娜" or "陈静": short parts, no sentence punctuation.
func looksLikeCJKNames(s string) bool {
	if strings.ContainsAny(s, "。：:（(") {
		return false
	}
	parts := splitAuthors(s)
	if len(parts) == 0 {
		return false
	}
	for _, p := range parts {
		if n := len([]rune(p)); n > 8 || strings.Contains(p, " ") && n > 20 {
			return false
		}
	}
	return true
}

// doiFromURL reads the DOI out of a DOIUrl value: "https://doi.org/<doi>" or
// the bare DOI ("" when it names none).
func doiFromURL(u string) string {
	id := record.ParseDOI(u)
	if id.DOI != "" {
		return id.DOI
	}
	if strings.HasPrefix(strings.ToLower(strings.TrimSpace(u)), "arxiv-") {
		return strings.TrimSpace(u)
	}
	return ""
}

// isTitleLine: a visible title line, English then Chinese, not an
// abstract that runs into its translation: short, and at most one
// sentence in its English part.
func isTitleLine(text string) bool {
	if len(text) > 600 {
		return false
	}
	en, cn := splitTitleLine(text)
	return en != "" && cn != "" && strings.Count(en, ". ") <= 1 && len(strings.Fields(en)) >= 2
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func hasDigit(s string) bool { return strings.ContainsAny(s, "0123456789") }

// lastPageFromPager returns current when the pager lines say it is the last
// page: no "next" link, and no page number above it. A pager that shows only
// a window of pages always has a "next" link short of the end, so this
// never ends a walk early.
func lastPageFromPager(lines []string, current int) int {
	if len(lines) == 0 || current < 1 {
		return 0
	}
	highest := 0
	for _, l := range lines {
		if strings.Contains(l, "下一页") || strings.Contains(l, "Next") || strings.Contains(l, "»") {
			return 0
		}
		for _, f := range strings.Fields(l) {
			if n, err := strconv.Atoi(f); err == nil && n > highest {
				highest = n
			}
		}
	}
	if highest == current {
		return current
	}
	return 0
}

func hasWarning(r record.Record, code string) bool {
	for _, w := range r.Warnings {
		if w == code {
			return true
		}
	}
	return false
}

// looksLikeAuthors: several short comma-separated names, no sentence.
func looksLikeAuthors(s string) bool {
	if looksLikeTitleLine(s) {
		return false
	}
	if cjkDominant(s) && !strings.ContainsAny(s, "，、,;") {
		return false
	}
	parts := splitAuthors(s)
	if len(parts) < 2 {
		return false
	}
	words := 0
	for _, p := range parts {
		n := len(strings.Fields(p))
		if n > 6 {
			return false
		}
		words += n
	}
	return words <= 4*len(parts)
}

// hasLetterOrDigit reports whether s holds a letter or a digit of any
// script.
func hasLetterOrDigit(s string) bool {
	for _, r := range s {
		if r < utf8.RuneSelf {
			if isDigit(byte(r)) || isASCIILetter(byte(r)) {
				return true
			}
			continue
		}
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return true
		}
	}
	return false
}
