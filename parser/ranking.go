package parser

import (
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A ranking line says how the paper's journal is ranked: its impact
// factor (`IF 2`, `IF: 1.2`), its zone (`4区`, `4 区`), its subject
// (`计算机科学`) and its JCR quartile and category (`Q3 COMPUTER SCIENCE,
// INFORMATION SYSTEMS`). The site shows any of these parts, in any
// combination and order, on a line of their own or before the date/DOI
// line (`3区 计算机科学 Q3 … Pub Date : …`). The line is read only when it
// is all made of these parts, each at most once, and holds an impact
// factor, a zone or a quartile: otherwise it is text (a title that starts
// with "IF" or "Q3" is no ranking line).

// rankPart is one part of a ranking line.
type rankPart uint8

const (
	rankIF rankPart = 1 << iota
	rankZone
	rankSubject
	rankJCR
)

// maxRankingLine is the longest ranking line read (the longest the site
// shows is about 120 bytes).
const maxRankingLine = 400

// mayBeRanking is a cheap test before parseRanking: the line starts with
// a part only a ranking line starts with.
func mayBeRanking(text string) bool {
	if len(text) > maxRankingLine || text == "" {
		return false
	}
	switch {
	case strings.HasPrefix(text, "IF"), strings.HasPrefix(text, "JCR"):
		return true
	case len(text) >= 2 && text[0] == 'Q' && text[1] >= '1' && text[1] <= '4':
		return true
	case isDigit(text[0]):
		return strings.Contains(text, "区")
	}
	return isHanWord(firstField(text)) && strings.Contains(text, "区")
}

// parseRanking reads a ranking line, and a date/DOI line glued after it.
// The zero headInfo and false when the line is anything else.
func parseRanking(text string) (headInfo, bool) {
	var h headInfo
	if !mayBeRanking(text) {
		return h, false
	}
	rest := text
	if p, _ := findDateLabel(text); p >= 0 {
		rest = text[:p]
		mh, ok := parseMeta(text[p:])
		if !ok {
			return h, false
		}
		h.published, h.doi, h.badDate = mh.published, mh.doi, mh.badDate
	}
	r, ok := readRankingParts(strings.Fields(rest))
	if !ok {
		return headInfo{}, false
	}
	h.impact, h.hasImpact, h.zone, h.subject, h.jcrQuartile, h.jcrCategory = r.impact, r.hasImpact, r.zone, r.subject, r.jcrQuartile, r.jcrCategory
	return h, true
}

// rankingThenJournal reads a ranking line's parts at the start of text
// and the journal's name after them ("IF 2 2区 物理与天体物理 Journal of
// Trials", before the site's Pub Date label): ok when the parts hold an
// impact factor, a zone or a quartile, and a name follows.
func rankingThenJournal(text string) (headInfo, string, bool) {
	if !mayBeRanking(text) {
		return headInfo{}, "", false
	}
	f := strings.Fields(text)
	var r ranking
	k := 0
	for k < len(f) {
		prev := r
		n, part := r.readPart(f[k:])
		if n == 0 || prev.seen&part != 0 {
			r = prev // (a second part of a kind read: the journal's name)
			break
		}
		r.seen |= part
		k += n
	}
	if r.seen&(rankIF|rankZone|rankJCR) == 0 || k == len(f) || k == 0 {
		return headInfo{}, "", false
	}
	h := headInfo{impact: r.impact, hasImpact: r.hasImpact, zone: r.zone, subject: r.subject, jcrQuartile: r.jcrQuartile, jcrCategory: r.jcrCategory}
	return h, strings.Join(f[k:], " "), true
}

// ranking is what a ranking line's parts say.
type ranking struct {
	seen                     rankPart
	impact                   float64
	hasImpact                bool
	zone                     int
	subject                  string
	jcrQuartile, jcrCategory string
}

// readRankingParts reads the fields of a ranking line: every field must
// belong to a part, each part at most once, and one part must be an
// impact factor, a zone or a quartile.
func readRankingParts(f []string) (ranking, bool) {
	var r ranking
	for k := 0; k < len(f); {
		n, part := r.readPart(f[k:])
		if n == 0 || r.seen&part != 0 {
			return ranking{}, false
		}
		r.seen |= part
		k += n
	}
	return r, r.seen&(rankIF|rankZone|rankJCR) != 0
}

// readPart reads the part f starts with: how many fields it took, and
// which part it is (0 fields: f starts with no part).
func (r *ranking) readPart(f []string) (int, rankPart) {
	switch {
	case strings.HasPrefix(f[0], "IF"):
		return r.readIF(f)
	case zoneAt(f) > 0:
		z, n := zoneAt(f), 1
		if !strings.HasSuffix(f[0], "区") {
			n = 2
		}
		if z <= 4 {
			r.zone = z // the site's zones are 1 to 4 (中科院分区); another is read, not kept
		}
		return n, rankZone
	case isHanWord(f[0]):
		// One word: the 中科院 subjects are (计算机科学, 工程技术); a second
		// is a Chinese journal's name after the parts (物理学报).
		r.subject = f[0]
		return 1, rankSubject
	case f[0] == "JCR" && len(f) > 1 && isQuartile(f[1]):
		n, p := r.readJCR(f[1:])
		return n + 1, p
	case isQuartile(f[0]):
		return r.readJCR(f)
	}
	return 0, 0
}

// readIF reads "IF 2", "IF: 1.2", "IF：0.6", "IF2.3".
func (r *ranking) readIF(f []string) (int, rankPart) {
	joined := f[0]
	n := 1
	for n < len(f) && n < 3 && !containsDigit(joined) {
		joined += " " + f[n]
		n++
	}
	num, ok := labelledNumber(joined, "IF", false)
	if !ok || !strings.HasSuffix(joined, num) {
		return 0, 0
	}
	// A number too large for a float (309 digits) is no impact factor: an
	// infinite one would make the record unencodable in every sink.
	if v, err := strconv.ParseFloat(num, 64); err == nil && !math.IsInf(v, 0) && !math.IsNaN(v) {
		r.impact = v
	}
	r.hasImpact = true
	return n, rankIF
}

// readJCR reads a quartile and the upper-case category after it, up to
// the next part of the line.
func (r *ranking) readJCR(f []string) (int, rankPart) {
	n := 1
	for n < len(f) && isJCRWord(f[n]) {
		var probe ranking
		if k, _ := probe.readIF(f[n:]); k > 0 {
			break // "… ELECTRONIC IF 6.5": the impact factor after the category
		}
		n++
	}
	r.jcrQuartile, r.jcrCategory = f[0], strings.Join(f[1:n], " ")
	return n, rankJCR
}

// zoneAt reads a zone at the start of f ("4区", "4 区"): its digit (1 to
// 9), else 0.
func zoneAt(f []string) int {
	d := f[0]
	if len(f) > 1 && f[1] == "区" {
		d += "区"
	}
	if len(d) != 1+len("区") || !strings.HasSuffix(d, "区") || d[0] < '1' || d[0] > '9' {
		return 0
	}
	return int(d[0] - '0')
}

func isQuartile(s string) bool {
	return len(s) == 2 && s[0] == 'Q' && s[1] >= '1' && s[1] <= '4'
}

// isJCRWord: a word of a JCR category ("ENGINEERING,", "&", "(SCIE)"):
// upper-case letters and their punctuation, no digit.
func isJCRWord(s string) bool {
	letters := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
			letters++
		case c == ',' || c == '&' || c == '-' || c == '(' || c == ')' || c == '/' || c == '.' || c == '\'':
		default:
			return false
		}
	}
	return letters > 0 || s == "&"
}

// isHanWord: a word all of Han characters (a subject: 计算机科学).
func isHanWord(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !unicode.Is(unicode.Han, c) {
			return false
		}
	}
	return true
}

func containsDigit(s string) bool {
	return strings.ContainsAny(s, "0123456789")
}

// firstField is s up to its first space.
func firstField(s string) string {
	if i := strings.IndexFunc(s, unicode.IsSpace); i >= 0 {
		return s[:i]
	}
	if utf8.RuneCountInString(s) > 16 {
		return ""
	}
	return s
}

// hasRankingPart: s holds a part of a ranking line among its words, in
// any form, read or not: a zone ("3区", "中科院3区", "三区", "3区Top"), a
// quartile ("Q3"), a "JCR" label, an impact factor ("IF 2.1", "IF: 1",
// "IF NaN"). No name of a journal or subject holds one: page text (a
// ranking line in a form not read) in a field.
func hasRankingPart(s string) bool {
	if len(s) > maxRankingLine {
		return false
	}
	f := strings.Fields(s)
	for k, w := range f {
		w = strings.TrimRight(w, ":：,")
		switch {
		case isQuartile(w), w == "JCR":
			return true
		case strings.Contains(w, "区"):
			before, _, _ := strings.Cut(w, "区")
			if r, _ := utf8.DecodeLastRuneInString(before); r >= '0' && r <= '9' || strings.ContainsRune("一二三四五", r) {
				return true
			}
		case w == "IF" && k+1 < len(f):
			if n := strings.TrimLeft(f[k+1], ":："); n != "" && (isDigit(n[0]) || strings.EqualFold(n, "nan") || strings.EqualFold(n, "inf")) {
				return true
			}
		case strings.HasPrefix(w, "IF") && len(w) > 2 && (isDigit(w[2]) || w[2] == ':' || strings.HasPrefix(w[2:], "：")):
			return true
		}
	}
	return false
}
