package parser

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/litcrawl/litcrawl/record"
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
// It is 32 bytes: a page of two million short lines holds 64 MB of them;
// what only some lines say is behind head.
type line struct {
	text string
	// head is what an impact, meta, citation or JSON line says; for a
	// title line whose link names the paper (markTitle), its paperID
	// alone. nil for other lines, to keep lines small.
	head *headInfo
	raw  int32    // index of the raw line it came from
	kind lineKind // (uint8)
	mark lineMark // what the markup says of it (a title)
}

// headInfo is what an impact, meta, citation or JSON line says.
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
	paperID     string // a title link's site id (kindText, markTitle)
	badDate     string // after a date label, a date in a form not read

	papers    []*paperJSON // kindJSON: the objects on the line
	citations int          // kindCitation: the count
}

// objects are a JSON line's paper objects.
func (l *line) objects() []*paperJSON {
	if l.head == nil {
		return nil
	}
	return l.head.papers
}

// count is a citation line's count.
func (l *line) count() int { return l.head.citations }

// ranked: the line says how the journal is ranked (an impact factor, a
// zone, a subject or a JCR quartile).
func (h *headInfo) ranked() bool {
	return h.hasImpact || h.zone > 0 || h.subject != "" || h.jcrQuartile != ""
}

// rankingLine reads l as a ranking line (kindImpact), if it is one.
func rankingLine(l *line) bool {
	h, ok := parseRanking(l.text)
	if ok {
		l.kind, l.head = kindImpact, &h
	}
	return ok
}

// footerMarks are the footer lines of every listing page; seeing one also
// tells the crawler the page is a genuine listing page.
var footerMarks = []string{"京公网安备", "京ICP备", "扫码关注我们", "求助内容", "应助结果提醒方式"}

// chromeMarks begin lines of page chrome other than the site's footer: a
// copyright or powered-by line, a listing's count ("共 1234 篇文献").
var chromeMarks = []string{"Copyright", "copyright", "©", "Powered by", "All rights reserved", "Privacy Policy", "Terms of Use", "版权所有"}

// reCount is a listing's count line: "共 1234 篇文献", "共1234条".
var reCount = regexp.MustCompile(`^共\s*\d+\s*(篇|条|项)`)

// noiseExact are whole lines of page chrome.
var noiseExact = map[string]bool{
	"筛选": true, "英文 中文": true, "英文": true, "中文": true, "首页": true, "尾页": true,
	"末页": true, "上一页": true, "下一页": true, "返回顶部": true, "登录": true, "注册": true,
	"最新文献": true, "更多": true, "查看详情": true, "查看详情 >>": true, "热门期刊": true, "相关期刊": true, "推荐文献": true, "热门文献": true,
	"相关文献": true, "最新期刊": true, "...": true, "…": true, "English": true, "中文 English": true,
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
		l.head = &headInfo{citations: citationCount(text)}
	case mayBeRanking(text) && rankingLine(&l):
	case strings.Contains(text, "Pub Date") || len(text) <= maxMetaLine && maybeMeta(text):
		if h, ok := parseMeta(text); ok {
			l.kind = kindMeta
			l.head = &h
		}
	}
	return l
}

// maybeMeta: a short line that may be a date/DOI line of another label
// than the site's (a cheap test before parseMeta).
func maybeMeta(text string) bool {
	if strings.HasPrefix(text, "10.") || strings.Contains(text, "DOI") || strings.Contains(text, "doi") || strings.Contains(text, "Pub") {
		return true
	}
	return hasNonASCII(text) && (strings.Contains(text, "出版") || strings.Contains(text, "发布") || strings.Contains(text, "发表"))
}

// fieldLabels are the labels a line may open with: the label says the
// line's part, and is no part of the field. A line of a part that is no
// field of the record (keywords, an article type) is not read.
var fieldLabels = []struct {
	label string
	mark  lineMark // markPlain: not a field
}{{"Authors", markNames}, {"Author", markNames}, {"作者", markNames}, {"Abstract", markAbstract}, {"Summary", markAbstract},
	{"摘要", markAbstract}, {"Keywords", markPlain}, {"Key words", markPlain}, {"关键词", markPlain}, {"关键字", markPlain},
	{"Article type", markPlain}, {"文章类型", markPlain}, {"Document type", markPlain}, {"Subjects", markPlain}}

// labelled reads a field label ("Authors:", "摘要：") at the start of a
// line: the mark it gives, and the text after it.
func labelled(text string) (lineMark, string, bool) {
	if rest, ok := strings.CutPrefix(text, "By "); ok && (looksLikeNameList(rest) || nameLike(rest)) {
		return markNames, rest, true // a byline
	}
	if strings.IndexByte(text, ':') >= 0 && hasCJK(text) && isTitleLine(text) {
		return markNone, text, false // "Abstract: A Theory of Summaries 摘要的理论" is a title line
	}
	if head := text[:min(len(text), 24)]; len(text) < 4 || strings.IndexByte(head, ':') < 0 && !strings.Contains(head, "：") {
		return markNone, text, false
	}
	for _, f := range fieldLabels {
		if !strings.HasPrefix(text, f.label) {
			continue
		}
		rest := strings.TrimLeft(text[len(f.label):], " ")
		for _, c := range []string{":", "："} {
			if r, ok := strings.CutPrefix(rest, c); ok {
				return f.mark, strings.TrimSpace(r), true
			}
		}
	}
	return markNone, text, false
}

// reVolumeLine is a volume, issue and pages line: "Vol. 12, No. 3, pp.
// 45-67", "Volume 8, Issue 2", "12(3): 45-67". No field is read from it.
var reVolumeLine = regexp.MustCompile(`^(?:(?:Vol\.?|Volume|卷)\s*\d+|\d+\s*\(\d+\)\s*[:：]\s*\d+|第\s*\d+\s*卷)`)

// volumeLine: a volume, issue and pages line (reVolumeLine), tested only
// on short lines that start as one does.
func volumeLine(text string) bool {
	if len(text) > 60 || text == "" || hasCJK(text) && !strings.HasPrefix(text, "第") && !strings.HasPrefix(text, "卷") {
		return false // (a longer line is an abstract or a title that starts so)
	}
	if c := text[0]; c != 'V' && !isDigit(c) && !strings.HasPrefix(text, "卷") && !strings.HasPrefix(text, "第") {
		return false
	}
	return reVolumeLine.MatchString(text)
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
	if len(text) > 40 || text == "" || text[0] != 'C' && text[0] != 0xE5 && text[0] != 0xE8 { // C…, 引…, 被…
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
	for _, m := range chromeMarks {
		if strings.HasPrefix(text, m) {
			return true
		}
	}
	if strings.HasPrefix(text, "共") && reCount.MatchString(text) {
		return true
	}
	return isPagerLine(text)
}

// navWords are the words of a site's navigation, account and search
// links.
var navWords = map[string]bool{
	"搜索": true, "登录": true, "注册": true, "退出": true, "首页": true, "帮助": true, "我的": true, "个人中心": true,
	"关于我们": true, "联系我们": true, "意见反馈": true, "会员": true, "下载APP": true, "APP": true, "期刊": true,
	"文献": true, "最新文献": true, "英文": true, "中文": true, "English": true, "Login": true, "Sign": true, "in": true,
	"收藏": true, "分享": true, "下载": true, "导出": true, "引用": true, "全文": true, "PDF": true, "Share": true, "Download": true, "Cite": true,
	"查看详情": true, "详情": true, ">>": true, "›": true, "»": true, "查看": true, "Details": true, "More": true,
	"Search": true, "Home": true, "Register": true, "Help": true, "About": true, "Contact": true, "Menu": true, "|": true,
}

// isNavLine: a short line most of whose words are navigation words, the
// others at most one word each (a site's name): "Book学术 搜索 登录".
func isNavLine(text string) bool {
	if len(text) > 80 || strings.IndexByte(text, ' ') < 0 || strings.IndexByte(text, ',') >= 0 {
		return false // (navigation is short; a names line has commas)
	}
	words, nav := 0, 0
	for rest := text; rest != ""; {
		var w string
		w, rest, _ = strings.Cut(rest, " ")
		if w == "" {
			continue
		}
		words++
		if navWords[w] {
			nav++
		}
	}
	return words <= 10 && nav*2 >= words && nav >= 2
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

// dateLabels introduce a publication date on a meta line. "Pub Date" is
// the site's; the others are read when a colon follows them.
var dateLabels = []struct {
	label string
	colon bool
}{{"Pub Date", false}, {"出版日期", false}, {"发布时间", false}, {"发表时间", false}, {"出版时间", false}, {"发布日期", false},
	{"Publication date", true}, {"Publication Date", true}, {"Published online", true}, {"Published", true}, {"Pub. Date", true}}

// maxMetaLine bounds the lines read for the labels other than the site's
// "Pub Date": a date/DOI line is short.
const maxMetaLine = 300

// findDateLabel returns where the first date label of s starts and ends
// (past its colon), or -1.
func findDateLabel(s string) (start, end int) {
	start = -1
	labels := dateLabels
	if strings.Contains(s, "Pub Date") {
		labels = dateLabels[:1] // the site's own label: no other looked for
	}
	for _, d := range labels {
		if d.label != "Pub Date" && len(s) > maxMetaLine {
			continue
		}
		i := strings.Index(s, d.label)
		if i < 0 || start >= 0 && i >= start {
			continue
		}
		rest := strings.TrimLeft(s[i+len(d.label):], " ")
		hasColon := strings.HasPrefix(rest, ":") || strings.HasPrefix(rest, "：")
		if d.colon && !hasColon {
			continue
		}
		start = i
		end = len(s) - len(strings.TrimLeft(rest, ":： "))
	}
	return start, end
}

// findDOILabel returns where a "DOI" label starts and where its value
// starts, or -1: "DOI" in capitals, or "doi" with a colon after it.
func findDOILabel(s string) (start, value int) {
	for from := 0; from < len(s); {
		i := strings.Index(s[from:], "DOI")
		if j := strings.Index(s[from:], "doi"); j >= 0 && (i < 0 || j < i) {
			if rest := strings.TrimLeft(s[from+j+3:], " "); strings.HasPrefix(rest, ":") || strings.HasPrefix(rest, "：") {
				i = j
			} else if i < 0 {
				from += j + 3
				continue
			}
		}
		if i < 0 {
			return -1, 0
		}
		i += from
		// A label, not the inside of a word ("PMDOI") or of a DOI link.
		if i == 0 || !isASCIILetter(s[i-1]) && s[i-1] != '/' && s[i-1] != '.' {
			return i, len(s) - len(strings.TrimLeft(s[i+3:], ":： "))
		}
		from = i + 3
	}
	return -1, 0
}

// trimDOITail takes off a visible DOI the punctuation of the sentence it
// stands in (".", ",", ";", their full-width forms, a closing bracket
// that opened before it), which no DOI ends with.
func trimDOITail(d string) string {
	for {
		t := strings.TrimFunc(d, func(r rune) bool { return unicode.Is(unicode.Cf, r) }) // U+200B, U+FEFF
		t = strings.TrimRight(t, ".,;。，；、")
		if strings.HasSuffix(t, ")") && strings.Count(t, "(") < strings.Count(t, ")") {
			t = t[:len(t)-1]
		}
		if strings.HasSuffix(t, "）") {
			t = strings.TrimSuffix(t, "）")
		}
		if t == d {
			return d
		}
		d = t
	}
}

// parseMeta reads a date/DOI line: the site's "<journal> Pub Date :
// 2024-09-02 DOI: arxiv-…" and "Pub Date : 2010-11-01DOI: 10.1109/…", the
// desktop form that starts with the impact part ("IF 1.2 4区 … Pub Date :
// …"), other labels ("Published: 11 Sep 2024", "出版日期：2024年9月11日"),
// a date or a DOI alone on a line with its label, a bare DOI, or a
// doi.org link.
func parseMeta(text string) (headInfo, bool) {
	var h headInfo
	i, dateAt := findDateLabel(text)
	if i < 0 {
		return doiOnly(text)
	}
	prefix := strings.TrimSpace(text[:i])
	siteLabel := strings.HasPrefix(text[i:], "Pub Date")
	rest := text[dateAt:]
	datePart := rest
	if d, v := findDOILabel(rest); d >= 0 {
		datePart = rest[:d]
		if f := strings.Fields(rest[v:]); len(f) > 0 {
			h.doi = trimDOITail(f[0])
		}
	} else if f := strings.Fields(rest); len(f) > 0 {
		if id := record.ParseDOI(f[len(f)-1]); id.DOI != "" && len(f) > 1 {
			h.doi = f[len(f)-1] // a date, then a bare DOI
			datePart = rest[:strings.LastIndex(rest, f[len(f)-1])]
		}
	}
	h.published = anyDate(datePart)
	if h.published == "" && hasDigit(datePart) {
		h.badDate = strings.TrimSpace(datePart) // a date in a form not read ("09/02/2024", "2024")
	}
	if prefix != "" {
		if ih, ok := parseRanking(prefix); ok {
			ih.published, ih.doi = h.published, h.doi
			h = ih
		} else if ih, journal, ok := rankingThenJournal(prefix); ok && siteLabel {
			// "IF 2 2区 物理与天体物理 Journal of Trials Pub Date : …"
			ih.published, ih.doi, ih.journal = h.published, h.doi, journal
			h = ih
		} else if siteLabel && len(prefix) <= maxMetaLine && !isNoise(prefix) && !labelWithValue(prefix) {
			// The site's "<journal> Pub Date : …" (a bullet or a pager
			// word is no journal). Before another label the text is no
			// journal ("Research Article Published: …"): it is left.
			h.journal = prefix
		}
	}
	return h, h.published != "" || h.doi != ""
}

// labelWithValue: text holding a label and its number ("Received:
// 2001-01-05"), which a journal's name ("Journal of Physics: Conference
// Series") does not.
func labelWithValue(text string) bool {
	for _, c := range []string{":", "："} {
		for rest := text; ; {
			i := strings.Index(rest, c)
			if i < 0 {
				break
			}
			rest = rest[i+len(c):]
			if t := strings.TrimLeft(rest, " "); t != "" && isDigit(t[0]) {
				return true
			}
		}
	}
	return false
}

// doiOnly reads a line that is only a DOI: with its label ("DOI:
// 10.1/x"), bare ("10.1/x"), or as a doi.org link.
func doiOnly(text string) (headInfo, bool) {
	var h headInfo
	if len(text) > maxMetaLine {
		return h, false
	}
	t := text
	if d, v := findDOILabel(text); d == 0 {
		t = text[v:]
	}
	t = trimDOITail(strings.TrimSpace(t))
	if strings.ContainsAny(t, " \t") {
		return h, false
	}
	if id := record.ParseDOI(t); id.DOI != "" {
		h.doi = t
		return h, true
	}
	if t != text && t != "" {
		h.doi = t // the site's own value after a DOI label (arxiv-…)
		return h, record.ParseDOI(t).ArxivID != ""
	}
	return h, false
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

var (
	reCJKDate   = regexp.MustCompile(`(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*日`)
	reDayMonth  = regexp.MustCompile(`(?i)\b(\d{1,2})\s+([a-z]{3,9})\.?,?\s+(\d{4})\b`)
	reMonthDay  = regexp.MustCompile(`(?i)\b([a-z]{3,9})\.?\s+(\d{1,2}),?\s+(\d{4})\b`)
	monthByName = map[string]string{"jan": "1", "feb": "2", "mar": "3", "apr": "4", "may": "5", "jun": "6", "jul": "7", "aug": "8",
		"sep": "9", "sept": "9", "oct": "10", "nov": "11", "dec": "12", "january": "1", "february": "2", "march": "3", "april": "4",
		"june": "6", "july": "7", "august": "8", "september": "9", "october": "10", "november": "11", "december": "12"}
)

// anyDate reads the first date of s in the forms a date/DOI line shows:
// "2024-09-11", "2024/09/11", "11 Sep 2024", "Sep 11, 2024",
// "2024年9月11日"; "" when there is none, or it is no calendar date.
func anyDate(s string) string {
	if d := isoDate(s); d != "" {
		return d
	}
	if m := reCJKDate.FindStringSubmatch(s); m != nil {
		return normDate(m[1], m[2], m[3])
	}
	if m := reDayMonth.FindStringSubmatch(s); m != nil {
		if mo, ok := monthByName[strings.ToLower(m[2])]; ok {
			return normDate(m[3], mo, m[1])
		}
	}
	if m := reMonthDay.FindStringSubmatch(s); m != nil {
		if mo, ok := monthByName[strings.ToLower(m[1])]; ok {
			return normDate(m[3], mo, m[2])
		}
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

// maxPageLines bounds the lines of a page the classifier keeps: 32 bytes
// each, 64 MiB of lines at most, whatever the page. A listing page has a
// few thousand; a page of two million short lines (10 MB) is read whole.
var maxPageLines = 1 << 21 // (a var: the tests lower it)

// classifier classifies raw lines as the flattening gives them, extracts
// JSON objects (splitting a line that holds text around its JSON) and
// records page facts. The raw lines are not kept: a page's text is held
// once, as its classified lines.
type classifier struct {
	page   *Page
	out    []line
	ri     int    // the next raw line's index
	last   string // the last raw line that held a '{'
	lastAt int
}

func newClassifier(page *Page, capHint int) *classifier {
	page.footerRaw = -1
	return &classifier{page: page, out: make([]line, 0, capHint), lastAt: -1}
}

// add classifies the next raw line.
func (c *classifier) add(r rawLine) {
	if len(c.out) >= maxPageLines {
		if !slices.Contains(c.page.Warnings, PageWarnTooManyLines) {
			c.page.warn(PageWarnTooManyLines)
			c.page.doubt(0, "page", fmt.Sprintf("%d lines", maxPageLines), "holds more lines than a listing page: the rest is not read")
		}
		return
	}
	if len(c.out) == cap(c.out) {
		// Doubled, not append's 1.25× for large slices: a page of
		// millions of lines copies its lines about once, not four times.
		grown := make([]line, len(c.out), min(max(2*cap(c.out), 64), maxPageLines+2))
		copy(grown, c.out)
		c.out = grown
	}
	ri, page := c.ri, c.page
	c.ri++
	if r.json || strings.IndexByte(r.text, '{') >= 0 {
		c.last, c.lastAt = r.text, ri
		hits, exhausted := extractPapers(r.text)
		if exhausted {
			page.warn(PageWarnJSONScanLimit)
		}
		if len(hits) > 0 {
			pos := 0
			for _, h := range hits {
				if !r.json {
					c.out = appendText(c.out, r.text[pos:h.start], r, ri, page)
				}
				if n := len(c.out); n > 0 && c.out[n-1].kind == kindJSON && r.json && c.out[n-1].raw == int32(ri) {
					// Several objects in one script: keep them together.
					c.out[n-1].head.papers = append(c.out[n-1].head.papers, h.paper)
				} else {
					c.out = append(c.out, line{kind: kindJSON, head: &headInfo{papers: []*paperJSON{h.paper}}, raw: int32(ri)})
				}
				pos = h.end
			}
			if !r.json {
				c.out = appendText(c.out, r.text[pos:], r, ri, page)
			}
			return
		}
		if r.json {
			return // a JSON script or attribute that holds no paper
		}
	}
	c.out = appendText(c.out, r.text, r, ri, page)
}

// finish returns the classified lines; a capture whose last line ends
// inside a JSON object was cut.
func (c *classifier) finish() []line {
	if c.lastAt >= 0 && c.lastAt == c.ri-1 && endsInObject(c.last) {
		c.page.cut = true // the capture ends inside a JSON object
	}
	return c.out
}

func appendText(out []line, text string, r rawLine, ri int, page *Page) []line {
	text = strings.TrimSpace(text)
	if text == "" {
		return out
	}
	l := classify(text)
	l.raw = int32(ri)
	if l.kind == kindText {
		if m, rest, ok := labelled(text); ok {
			if m == markPlain || rest == "" {
				page.explainSet(ri, text, "not read", "a labelled line of no field (keywords, article type)")
				return out
			}
			l.mark, l.text = m, rest
			return append(out, l)
		}
		if volumeLine(text) {
			page.explainSet(ri, text, "not read", "a volume, issue or pages line")
			return out
		}
		switch {
		case r.mark == markLinksOnly || isNavLine(text):
			l.kind = kindNoise // navigation, a language switch: furniture
		case r.mark == markTitle:
			l.mark = markTitle
			if r.hint != nil && r.hint.paperID != "" {
				l.head = &headInfo{paperID: r.hint.paperID}
			}
		case r.hint != nil && r.hint.doi != "" && len(text) <= 40:
			// A short link to doi.org ("全文", "View article"): the DOI.
			l.kind, l.head = kindMeta, &headInfo{doi: r.hint.doi}
		}
	}
	switch l.kind {
	case kindNoise:
		if isFooter(text) {
			page.FooterSeen, page.footerRaw = true, int32(ri)
			page.explainSet(ri, text, "furniture", "footer")
		} else if isPagerLine(text) {
			page.pager = append(page.pager, text)
			page.explainSet(ri, text, "furniture", "pager")
		} else {
			page.explainSet(ri, text, "furniture", "navigation, filter, language switch or chrome")
		}
		return out
	case kindHeading:
		page.HeadingSeen = true
		j, n := headingInfo(text)
		if page.JournalName == "" {
			page.JournalName = j
		}
		if page.PageNo == 0 {
			page.PageNo = n
		}
		page.explainSet(ri, text, "heading", "the listing's heading")
		// What stood above the listing's heading, with no paper line
		// among it (a site name, a search box), is page furniture.
		for _, o := range out {
			if o.kind != kindText {
				return out
			}
		}
		for _, o := range out {
			page.explainSet(int(o.raw), o.text, "furniture", "above the listing's heading")
		}
		return out[:0]
	}
	return append(out, l)
}
