package parser

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// lineKind is what a visible line is, judged by its own text.
type lineKind uint8

const (
	kindText     lineKind = iota // title, authors, abstract: decided in context
	kindNoise                    // header, filter, language switch, pager, footer
	kindHeading                  // "<journal>最新文献[_第N页]"
	kindImpact                   // "IF 2 4区 计算机科学" (desktop: with JCR and Pub Date)
	kindMeta                     // "<journal> Pub Date : 2024-09-02 DOI: …"
	kindCitation                 // "引用次数: N"
	kindJSON                     // holds one or more paper objects
)

// line is one line of visible text (or one JSON candidate) in page order.
type line struct {
	kind lineKind
	raw  int32 // index of the raw line it came from
	text string

	// kindJSON
	papers []*paperJSON

	// kindImpact / kindMeta (nil for other kinds, to keep lines small)
	head *headInfo

	// kindCitation
	citations int
}

// headInfo is what an impact or meta line says.
type headInfo struct {
	journal     string // meta line prefix, when it is a journal name
	impact      float64
	hasImpact   bool
	zone        int
	subject     string
	jcrQuartile string
	jcrCategory string
	published   string
	doi         string
}

// footerMarks are the footer lines of every listing page; seeing one also
// tells the crawler the page is a genuine listing page.
var footerMarks = []string{"京公网安备", "京ICP备", "扫码关注我们", "求助内容", "应助结果提醒方式"}

// noiseExact are whole lines of page chrome.
var noiseExact = map[string]bool{
	"筛选": true, "英文 中文": true, "英文": true, "中文": true, "首页": true, "尾页": true,
	"末页": true, "上一页": true, "下一页": true, "返回顶部": true, "登录": true, "注册": true,
	"最新文献": true, "更多": true, "...": true, "…": true, "English": true, "中文 English": true,
	"English 中文": true, "Prev": true, "Next": true,
}

// pagerWords may appear, with page numbers, in a pager line.
var pagerWords = []string{"上一页", "下一页", "首页", "尾页", "末页", "跳转", "页", "«", "»", "...", "…", ">", "<", "Prev", "Next"}

var (
	reHeading   = regexp.MustCompile(`^(.*?)\s*最新文献\s*(?:[_-]?\s*第\s*(\d+)\s*页)?$`)
	reTitlePage = regexp.MustCompile(`第\s*(\d+)\s*页`)
	reZone      = regexp.MustCompile(`^(\d)\s*区$`)
	reQuartile  = regexp.MustCompile(`^Q[1-4]$`)
)

// classify decides the kind of one visible line and parses what it carries.
func classify(text string) line {
	l := line{kind: kindText, text: text}
	switch {
	case isNoise(text):
		l.kind = kindNoise
	case strings.Contains(text, "最新文献") && reHeading.MatchString(text):
		l.kind = kindHeading
	case citationCount(text) >= 0:
		l.kind = kindCitation
		l.citations = citationCount(text)
	case strings.HasPrefix(text, "IF"):
		if h, ok := parseImpact(text); ok {
			l.kind = kindImpact
			l.head = &h
		}
	case strings.Contains(text, "Pub Date"):
		if h, ok := parseMeta(text); ok {
			l.kind = kindMeta
			l.head = &h
		}
	}
	return l
}

// citationLabels introduce a citation count: "引用次数: N", "被引次数：N",
// "Citations: N"; "Cited by N" has no colon.
var citationLabels = []struct {
	label string
	colon bool
}{{"引用次数", true}, {"被引次数", true}, {"Citations", true}, {"Cited by", false}, {"Cited By", false}}

// citationCount reads a citation line, the whole line being the label and
// its count, or returns -1.
func citationCount(text string) int {
	if len(text) > 40 {
		return -1
	}
	for _, c := range citationLabels {
		n, ok := labelledNumber(text, c.label, c.colon)
		if !ok || strings.Contains(n, ".") {
			continue
		}
		if rest := strings.TrimLeft(text[len(c.label):], " :："); strings.TrimSpace(rest[len(n):]) == "" {
			if v, err := strconv.Atoi(n); err == nil {
				return v
			}
		}
	}
	return -1
}

func isNoise(text string) bool {
	if noiseExact[text] || !hasLetterOrDigit(text) {
		return true // chrome, or a bullet or rule that says nothing
	}
	for _, m := range footerMarks {
		if strings.HasPrefix(text, m) {
			return true
		}
	}
	if strings.HasPrefix(text, "首页") && strings.Contains(text, ">") { // breadcrumb
		return true
	}
	return isPagerLine(text)
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

// isFooter reports whether text is one of the footer lines.
func isFooter(text string) bool {
	for _, m := range footerMarks {
		if strings.HasPrefix(text, m) {
			return true
		}
	}
	return false
}

// pagerRunes are the only characters a pager line can hold.
const pagerRunes = "0123456789 上一页下首尾末跳转«»<>.…PrevNxt"

// isPagerLine: page numbers and pager words only ("上一页 1 2 3 … 9 下一页").
func isPagerLine(text string) bool {
	if len(text) > 400 {
		return false
	}
	for _, r := range text {
		if !strings.ContainsRune(pagerRunes, r) {
			return false // most lines stop here, at their first letter
		}
	}
	fields := strings.Fields(text)
	if len(fields) == 0 || len(fields) > 40 {
		return false
	}
	words := 0
	for _, f := range fields {
		if _, err := strconv.Atoi(f); err == nil {
			continue
		}
		rest := f
		for _, w := range pagerWords {
			rest = strings.ReplaceAll(rest, w, "")
		}
		if strings.Trim(rest, "0123456789") != "" {
			return false
		}
		words++
	}
	// A lone number is not a pager (it could be a cut-off line); numbers
	// with pager words, or several numbers, are.
	return words > 0 || len(fields) > 1
}

// headingInfo reads "<journal>最新文献_第7页" into the journal name and page.
func headingInfo(text string) (journal string, page int) {
	m := reHeading.FindStringSubmatch(text)
	if m == nil {
		return "", 0
	}
	page, _ = strconv.Atoi(m[2])
	return strings.TrimSpace(m[1]), page
}

// parseMeta reads a meta line: "<journal> Pub Date : 2024-09-02 DOI: arxiv-…",
// "Pub Date : 2010-11-01DOI: 10.1109/…", or the desktop form that starts with
// the impact part ("IF 1.2 4区 计算机科学 Q3 … Pub Date : …").
func parseMeta(text string) (headInfo, bool) {
	var h headInfo
	i := strings.Index(text, "Pub Date")
	if i < 0 {
		return h, false
	}
	prefix := strings.TrimSpace(text[:i])
	rest := strings.TrimSpace(text[i+len("Pub Date"):])
	rest = strings.TrimSpace(strings.TrimLeft(rest, ":： "))
	doiAt := strings.Index(rest, "DOI")
	datePart := rest
	if doiAt >= 0 {
		datePart = rest[:doiAt]
		d := strings.TrimSpace(rest[doiAt+3:])
		d = strings.TrimSpace(strings.TrimLeft(d, ":："))
		if f := strings.Fields(d); len(f) > 0 {
			h.doi = f[0]
		}
	}
	h.published = isoDate(datePart)
	if prefix != "" {
		if strings.HasPrefix(prefix, "IF") {
			ih, ok := parseImpact(prefix)
			if ok {
				ih.published, ih.doi = h.published, h.doi
				h = ih
			}
		} else {
			h.journal = prefix
		}
	}
	return h, h.published != "" || h.doi != ""
}

// parseImpact reads "IF 2 4区 计算机科学", "IF 0.6", or the desktop form
// "IF 1.2 4区 计算机科学 Q3 ENGINEERING, ELECTRICAL & ELECTRONIC Pub Date : …".
func parseImpact(text string) (headInfo, bool) {
	var h headInfo
	num, ok := labelledNumber(text, "IF", false)
	if !ok {
		return h, false
	}
	rest := text[strings.Index(text, num)+len(num):]
	if p := strings.Index(rest, "Pub Date"); p >= 0 {
		mh, ok := parseMeta(rest[p:])
		if ok {
			h.published, h.doi = mh.published, mh.doi
		}
		rest = rest[:p]
	}
	// A number too large for a float (309 digits) is no impact factor: an
	// infinite one would make the record unencodable in every sink.
	if v, err := strconv.ParseFloat(num, 64); err == nil && !math.IsInf(v, 0) && !math.IsNaN(v) {
		h.impact = v
	}
	h.hasImpact = true
	fields := strings.Fields(rest)
	k := 0
	if k < len(fields) {
		if z := reZone.FindStringSubmatch(fields[k]); z != nil {
			h.zone, _ = strconv.Atoi(z[1])
			k++
		} else if k+1 < len(fields) && fields[k+1] == "区" {
			h.zone, _ = strconv.Atoi(fields[k])
			k += 2
		}
	}
	if h.zone < 1 || h.zone > 4 {
		h.zone = 0 // the site's zones are 1 to 4 (中科院分区)
	}
	var subject []string
	for k < len(fields) && !reQuartile.MatchString(fields[k]) {
		subject = append(subject, fields[k])
		k++
	}
	h.subject = strings.Join(subject, " ")
	if k < len(fields) {
		h.jcrQuartile = fields[k]
		h.jcrCategory = strings.Join(fields[k+1:], " ")
	}
	return h, true
}

func normDate(y, m, d string) string {
	mi, _ := strconv.Atoi(m)
	di, _ := strconv.Atoi(d)
	if len(y) != 4 || mi < 1 || mi > 12 || di < 1 || di > 31 {
		return ""
	}
	b := [10]byte{y[0], y[1], y[2], y[3], '-', byte('0' + mi/10), byte('0' + mi%10), '-', byte('0' + di/10), byte('0' + di%10)}
	return string(b[:])
}

// labelledNumber reads "<label>[ ][:：][ ]N[.N]" at the start of s and
// returns the number's text. The colon is required when colon is true.
func labelledNumber(s, label string, colon bool) (string, bool) {
	if !strings.HasPrefix(s, label) {
		return "", false
	}
	s = strings.TrimLeft(s[len(label):], " ")
	switch {
	case strings.HasPrefix(s, ":"):
		s = s[1:]
	case strings.HasPrefix(s, "："):
		s = s[len("："):]
	case colon:
		return "", false
	}
	s = strings.TrimLeft(s, " ")
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i == 0 {
		return "", false
	}
	if i+1 < len(s) && s[i] == '.' && isDigit(s[i+1]) {
		i++
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	return s[:i], true
}

// isoDate finds the first date in s ("2024-09-02", "2024-09-02T00:00:00",
// "2024/9/2", "2024 - 09 - 02") and returns it as YYYY-MM-DD, or "" when
// there is none.
func isoDate(s string) string {
	for i := 0; i+4 <= len(s); i++ {
		if !isDigit(s[i]) {
			continue
		}
		// Four digits, then two separated groups of one or two digits.
		j := i
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		if j-i < 4 {
			i = j
			continue
		}
		y := s[j-4 : j]
		m, k, ok := dateGroup(s, j)
		if !ok {
			i = j - 1
			continue
		}
		d, _, ok := dateGroup(s, k)
		if !ok {
			i = j - 1
			continue
		}
		if out := normDate(y, m, d); out != "" {
			return out
		}
		i = j - 1
	}
	return ""
}

// dateGroup reads "[ ]sep[ ]N[N]" at s[i] (sep one of - / .) and returns the
// digits and the offset after them.
func dateGroup(s string, i int) (digits string, end int, ok bool) {
	for i < len(s) && s[i] == ' ' {
		i++
	}
	if i >= len(s) || (s[i] != '-' && s[i] != '/' && s[i] != '.') {
		return "", i, false
	}
	i++
	for i < len(s) && s[i] == ' ' {
		i++
	}
	start := i
	for i < len(s) && isDigit(s[i]) && i-start < 2 {
		i++
	}
	return s[start:i], i, i > start
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

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
