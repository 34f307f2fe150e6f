package parser

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/litcrawl/litcrawl/record"
)

// Plausibility: whether each field of a record looks like that field. The
// parser reads a layout it was never shown by what its lines look like;
// these checks are the other half of that promise: a record whose field
// looks like another field (a title that is a names line, authors that are
// prose, an abstract that is a title line) or like page furniture makes
// the run's quality gate alarm (exit 4) instead of delivering quietly.
// The rules live here only: the quality gate, crawl parse --strict and the
// drift test all call Implausible and Page.Findings.

// Finding is one field of one record whose value does not look like that
// field, or that the parser could not settle between two lines.
type Finding struct {
	// Position is the record's 1-based position on its page; 0 for a
	// finding on the page as a whole.
	Position int `json:"position"`
	// Field is the record field, by its JSON name ("title", "authors").
	Field string `json:"field"`
	// Value is the offending value (cut to 160 characters).
	Value string `json:"value"`
	// Why says what it looks like instead.
	Why string `json:"why"`
	// Capture is the page's file or URL (Options.Capture, else URL).
	Capture string `json:"capture,omitempty"`
}

// maxFindingValue bounds Finding.Value.
const maxFindingValue = 160

// Findings are the page's findings, in record order: each record's
// implausible fields (Implausible), and the lines the parser read by
// content but could not settle (two abstracts for one paper, a line it
// could not place), which it records as it reads.
func (p *Page) Findings(now time.Time) []Finding {
	var out []Finding
	if p.titles > p.noJSON && (len(p.Records) > 0 || p.titles > 1) {
		out = append(out, Finding{Field: "page", Value: fmt.Sprintf("%d titles, %d papers", p.titles, p.noJSON),
			Why: "shows more titles than it gave papers: a block was lost"})
	}
	for _, d := range p.doubts {
		if d.Position == 0 {
			out = append(out, d) // before the first paper
		}
	}
	for i, r := range p.Records {
		// The last record of a page cut off may end mid-abstract: it is
		// flagged text-truncated, and its abstract's length says nothing.
		from := fromLinesAll
		if i < len(p.fromLines) {
			from = p.fromLines[i]
		}
		for _, f := range implausible(r, now, p.cut && i == len(p.Records)-1, from) {
			f.Position = i + 1
			out = append(out, f)
		}
		for _, d := range p.doubts {
			if d.Position == i+1 {
				out = append(out, d)
			}
		}
	}
	out = append(out, p.missingFields()...)
	for _, id := range p.dupIDs {
		for i, r := range p.Records {
			if r.ID == id {
				out = append(out, Finding{Position: i + 1, Field: "id", Value: id,
					Why: "two blocks of other titles or DOIs give this site id: merged into one paper"})
				break
			}
		}
	}
	for i := range out {
		out[i].Capture = p.capture
	}
	return out
}

// missingFields finds, among the records read from visible lines alone,
// those that lack a title, or lack authors, a DOI or a date where every
// other record of the page has one: a block split in two, or a line the
// parser did not know.
func (p *Page) missingFields() []Finding {
	var byContent []int
	for i, r := range p.Records {
		if hasWarning(r, record.WarnNoJSON) {
			byContent = append(byContent, i)
		}
	}
	var out []Finding
	for _, i := range byContent {
		if p.Records[i].Title == "" {
			out = append(out, Finding{Position: i + 1, Field: "title", Why: "is missing: a block split in two?"})
		}
	}
	if len(p.Records) < 3 {
		return out
	}
	// One names line for every paper of the page, read without JSON: a
	// line that is no names (keywords, a label) taken for them.
	if len(byContent) >= 3 {
		same := true
		first := p.Records[byContent[0]].Authors
		for _, i := range byContent[1:] {
			if len(first) == 0 || !slices.Equal(p.Records[i].Authors, first) {
				same = false
				break
			}
		}
		if same {
			out = append(out, Finding{Position: byContent[0] + 1, Field: "authors", Value: cutValue(strings.Join(first, ", ")),
				Why: "are the same for every paper of the page: a line that is no names?"})
		}
	}
	for _, f := range []struct {
		name string
		has  func(record.Record) bool
	}{
		{"authors", func(r record.Record) bool { return len(r.Authors) > 0 }},
	} {
		lacking := -1
		for i, r := range p.Records {
			if !f.has(r) {
				if lacking >= 0 {
					lacking = -2 // two or more lack it: the page's way
					break
				}
				lacking = i
			}
		}
		if lacking >= 0 && hasWarning(p.Records[lacking], record.WarnNoJSON) && !p.cutBeforeNames(lacking) {
			out = append(out, Finding{Position: lacking + 1, Field: f.name, Why: "is missing where every other paper of the page has it: a line not read?"})
		}
	}
	return out
}

// cutBeforeNames: record i is the page's last, the capture cut it (its
// text-truncated says so) before its names and abstract: it lacks them
// because of the cut, and a cut end alone is no finding. (One that has
// its abstract and lacks its names was read wrong.)
func (p *Page) cutBeforeNames(i int) bool {
	r := p.Records[i]
	return p.cut && i == len(p.Records)-1 && hasWarning(r, record.WarnTextTruncated) && r.Abstract == "" && r.AbstractCN == ""
}

// doubt notes that record pos's field could not be settled by content.
func (p *Page) doubt(pos int, field, value, why string) {
	p.doubts = append(p.doubts, Finding{Position: pos, Field: field, Value: cutValue(value), Why: why})
}

// furnitureMarks are pieces of page chrome that no field of a paper
// holds: footer lines, pager words, the header's search and login links,
// the breadcrumb.
var furnitureMarks = []string{"京ICP备", "京公网安备", "扫码关注我们", "求助内容", "应助结果提醒方式", "上一页", "下一页", "搜索 登录", "首页 >", "最新文献_第"}

// FurnitureIn names the first field of r that holds page furniture, with
// its value, or returns "".
func FurnitureIn(r record.Record) (field, value string) { return furnitureIn(r, fromLinesAll) }

// furnitureIn is FurnitureIn over the fields a record's visible lines
// gave (from) and those only they give (the Chinese title and abstract,
// subject, JCR category, journal name).
func furnitureIn(r record.Record, from uint8) (field, value string) {
	check := func(name, v string) bool {
		if v == "" {
			return false
		}
		if isFurniture(v) {
			return true
		}
		if !hasNonASCII(v) {
			return false // (every mark holds CJK: an English value has none)
		}
		for _, m := range furnitureMarks {
			if strings.Contains(v, m) {
				return true
			}
		}
		return false
	}
	title, abstract := r.Title, r.Abstract
	if from&fromLinesTitle == 0 {
		title = ""
	}
	if from&fromLinesAbstract == 0 {
		abstract = ""
	}
	for _, f := range [...]struct{ name, value string }{{"title", title}, {"title_cn", r.TitleCN}, {"abstract", abstract},
		{"abstract_cn", r.AbstractCN}, {"subject", r.Subject}, {"jcr_category", r.JCRCategory}} {
		if check(f.name, f.value) {
			return f.name, f.value
		}
	}
	for _, a := range r.Authors {
		if from&fromLinesAuthors == 0 {
			break
		}
		if check("authors", a) {
			return "authors", strings.Join(r.Authors, ", ")
		}
	}
	if r.Journal != nil && check("journal.name", r.Journal.Name) {
		return "journal.name", r.Journal.Name
	}
	return "", ""
}

// Implausible lists the fields of r whose value does not look like that
// field; now bounds the publication date (at most a year ahead).
func Implausible(r record.Record, now time.Time) []Finding {
	return implausible(r, now, hasWarning(r, record.WarnTextTruncated), fromLinesAll)
}

// The fields of a record that may come from visible lines or from the
// block's JSON (Page.fromLines).
const (
	fromLinesTitle uint8 = 1 << iota
	fromLinesAuthors
	fromLinesAbstract
	fromLinesAll = fromLinesTitle | fromLinesAuthors | fromLinesAbstract
)

// implausible is Implausible; cut says the record's visible text may end
// short (the last of a page cut off), so a short abstract is no finding.
// Each field has its rule (fieldRules), run in order.
func implausible(r record.Record, now time.Time, cut bool, from uint8) []Finding {
	c := recordCheck{r: &r, now: now, cut: cut || hasWarning(r, record.WarnJSONTruncated)}
	// A record made with the block's JSON has its title, authors and
	// abstract from the site's own data when the JSON gives them: only
	// their form is checked (furniture, a date/DOI line). Read from
	// visible lines alone, they must also not look like another field.
	c.byContent = hasWarning(r, record.WarnNoJSON)
	c.from = from
	if c.byContent || c.cut {
		c.from = fromLinesAll
	}
	for _, rule := range fieldRules {
		if field, value, why := rule.check(&c); why != "" {
			c.out = append(c.out, Finding{Position: r.Source.Position, Field: field, Value: cutValue(value), Why: why})
		}
	}
	return c.out
}

// recordCheck is what a field rule looks at: the record, and how it was
// read.
type recordCheck struct {
	r         *record.Record
	now       time.Time
	cut       bool  // its visible text may end short
	byContent bool  // read without JSON
	from      uint8 // the fields its visible lines gave (fromLines*)
	out       []Finding
}

// fieldRule is one plausibility rule: the field it checks and what the
// value looks like instead ("" when it looks right).
type fieldRule struct {
	name  string
	check func(c *recordCheck) (field, value, why string)
}

// fieldRules are the plausibility rules, one a field (plausible_test.go
// has a table for each).
var fieldRules = []fieldRule{
	{"furniture", checkFurniture},
	{"title", checkTitle},
	{"title_cn", checkTitleCN},
	{"authors", checkAuthors},
	{"published", checkPublished},
	{"doi", checkDOI},
	{"abstract", checkAbstract},
	{"abstract_cn", checkAbstractCN},
	{"citations", checkCitations},
	{"page text", checkPageText},
}

// checkFurniture: no field holds page furniture.
func checkFurniture(c *recordCheck) (string, string, string) {
	if f, v := furnitureIn(*c.r, c.from); f != "" {
		return f, v, "holds page furniture (header, navigation, pager or footer)"
	}
	return "", "", ""
}

// checkTitle: a title read from the page is no date/DOI line, names
// line, paragraph or citation line.
func checkTitle(c *recordCheck) (string, string, string) {
	if t := c.r.Title; t != "" && c.from&fromLinesTitle != 0 {
		return "title", t, notTitle(t, c.byContent)
	}
	return "", "", ""
}

// checkTitleCN: a Chinese title holds Chinese, and is no furniture or
// date/DOI line.
func checkTitleCN(c *recordCheck) (string, string, string) {
	t := c.r.TitleCN
	switch {
	case t == "":
		return "", "", ""
	case !hasCJK(t):
		return "title_cn", t, "holds no Chinese"
	case isFurniture(t):
		return "title_cn", t, "is page furniture"
	case looksLikeMeta(t):
		return "title_cn", t, "looks like a date/DOI line"
	}
	return "", "", ""
}

// checkAuthors: names read from the page are names.
func checkAuthors(c *recordCheck) (string, string, string) {
	if len(c.r.Authors) > 0 && c.from&fromLinesAuthors != 0 {
		return "authors", strings.Join(c.r.Authors, ", "), notAuthors(c.r.Authors, c.byContent)
	}
	return "", "", ""
}

// checkPublished: a calendar date from 1900 to a year ahead.
func checkPublished(c *recordCheck) (string, string, string) {
	d := c.r.Published
	if d == "" {
		return "", "", ""
	}
	t, err := time.Parse(time.DateOnly, d)
	switch {
	case err != nil:
		return "published", d, "is no calendar date"
	case t.Year() < 1900:
		return "published", d, "is before 1900"
	case t.After(c.now.AddDate(1, 0, 0)):
		return "published", d, "is more than a year ahead"
	}
	return "", "", ""
}

// checkDOI: a DOI is 10.NNNN/….
func checkDOI(c *recordCheck) (string, string, string) {
	if c.r.DOI != "" && !record.IsDOI(c.r.DOI) {
		return "doi", c.r.DOI, "is not a DOI (10.NNNN/…)"
	}
	return "", "", ""
}

// checkAbstract: an abstract read from the page is prose, not names, a
// title, a title line, a date/DOI line or furniture.
func checkAbstract(c *recordCheck) (string, string, string) {
	a := c.r.Abstract
	if a == "" || c.from&fromLinesAbstract == 0 {
		return "", "", ""
	}
	why := ""
	switch {
	case c.byContent && !c.cut && c.r.Title != "" && len(a) < len(c.r.Title) && !endsSentence(a):
		why = "is shorter than its title, and no sentence"
	case c.byContent && looksLikeNameList(a):
		why = "looks like an author list"
	case c.byContent && len(a) < 250 && !strings.Contains(a, ". ") && titleCase(a):
		why = "looks like a title (capitalised words, no sentence)"
	case isTitleLine(a) && len(a) < 400:
		why = "looks like a title line (English and Chinese title)"
	case looksLikeMeta(a):
		why = "looks like a date/DOI line"
	case isFurniture(a):
		why = "is page furniture"
	}
	return "abstract", a, why
}

// checkAbstractCN: a Chinese abstract is Chinese prose (a cut one may be
// short), not names or furniture.
func checkAbstractCN(c *recordCheck) (string, string, string) {
	a := c.r.AbstractCN
	switch {
	case a == "":
	case !cjkDominant(a):
		return "abstract_cn", a, "is not Chinese prose"
	case isFurniture(a) || !c.cut && !isCJKParagraph(a):
		return "abstract_cn", a, "is no paragraph (page furniture, a name or a title?)"
	case looksLikeCJKNames(a) && utf8.RuneCountInString(a) < 40 && (!c.cut || len(splitAuthors(a)) > 1):
		// (cut short, one run of up to 8 characters is a cut sentence
		// as much as a name: names come in lists)
		return "abstract_cn", a, "looks like names"
	}
	return "", "", ""
}

// checkCitations: a count from 0 to ten million.
func checkCitations(c *recordCheck) (string, string, string) {
	if n := c.r.Citations; n != nil && (*n < 0 || *n > 10_000_000) {
		return "citations", "", "is out of range"
	}
	return "", "", ""
}

// checkPageText: the short fields (journal name, subject, JCR category,
// volume) never hold a line of the page: a ranking line, a date/DOI line,
// furniture, a citation line. Whatever gave them (the JSON too): a
// journal name that reads as "3区 计算机科学 Q3 …" is the page's text.
func checkPageText(c *recordCheck) (string, string, string) {
	var fields [4][2]string
	if j := c.r.Journal; j != nil {
		fields[0], fields[1] = [2]string{"journal.name", j.Name}, [2]string{"journal.volume", j.Volume}
	}
	fields[2], fields[3] = [2]string{"subject", c.r.Subject}, [2]string{"jcr_category", c.r.JCRCategory}
	for _, f := range fields {
		if why := pageText(f[1]); why != "" {
			return f[0], f[1], why
		}
	}
	return "", "", ""
}

// pageText says which line of the page s reads as, or "".
func pageText(s string) string {
	switch {
	case s == "":
		return ""
	case isFurniture(s):
		return "is page furniture"
	case looksLikeMeta(s):
		return "reads as a date/DOI or ranking line of the page"
	case hasRankingPart(s):
		return "holds a part of a ranking line (a zone, an impact factor)"
	case citationCount(s) >= 0:
		return "reads as a citation line"
	}
	return ""
}

// notTitle says what a title looks like instead, or "".
func notTitle(t string, byContent bool) string {
	switch {
	case looksLikeMeta(t):
		return "looks like a date/DOI line"
	case byContent && looksLikeNameList(t):
		return "looks like an author list"
	case looksLikeProse(t) || len(t) > 1000 || byContent && (sentences(t) >= 2 || len(t) > 400 && strings.Contains(t, ". ")):
		return "looks like a paragraph"
	case strings.HasPrefix(t, "引用次数") || citationCount(t) >= 0:
		return "looks like a citation line"
	}
	return ""
}

// notAuthors says what an author list looks like instead, or "".
func notAuthors(names []string, byContent bool) string {
	for _, n := range names {
		switch {
		case looksLikeMeta(n):
			return "holds a date/DOI line"
		case strings.ContainsAny(n, ":："):
			return "holds a label or a phrase (a colon), not names"
		case utf8.RuneCountInString(n) > 120 || len(strings.Fields(n)) > 8 || lowerWords(n) >= 3 || byContent && lowerWords(n) >= 2:
			return "holds prose, not names"
		case hasCJK(n) && !cjkDominant(n) && len(strings.Fields(n)) > 2:
			return "holds a title line"
		}
	}
	if byContent && len(names) == 1 && !nameLike(names[0]) {
		return "is one phrase, not a name"
	}
	return ""
}

// lowerWords counts the words of s that start with a lower-case letter
// and are no name particle: a sentence has many, a name ("W. H. Auden",
// "Ludwig van Beethoven") at most one ("danah boyd" two: read without
// JSON only as one phrase).
func lowerWords(s string) int {
	n := 0
	for rest := s; rest != ""; {
		var w string
		w, rest, _ = strings.Cut(rest, " ")
		if r, _ := utf8.DecodeRuneInString(w); unicode.IsLower(r) && !nameParticles[strings.ToLower(w)] {
			n++
		}
	}
	return n
}

// nameParticles are the lower-case words a personal name may hold.
var nameParticles = map[string]bool{
	"van": true, "von": true, "der": true, "den": true, "de": true, "del": true, "della": true, "da": true, "di": true,
	"du": true, "dos": true, "das": true, "le": true, "la": true, "bin": true, "binti": true, "al": true, "el": true,
	"ter": true, "ten": true, "y": true, "e": true, "zu": true, "et": true, "al.": true,
}

// sentences counts the sentence ends of s: stops followed by a space, and
// a final one.
func sentences(s string) int {
	n := strings.Count(s, ". ")
	if endsSentence(s) {
		n++
	}
	return n
}

// titleCase: most longer words capitalised, as English titles are
// written ("Adaptive Checkpoint Placement for Stragglers").
func titleCase(s string) bool {
	words, capital := 0, 0
	for _, w := range strings.Fields(s) {
		if len(w) < 4 {
			continue
		}
		words++
		if r, _ := utf8.DecodeRuneInString(w); unicode.IsUpper(r) {
			capital++
		}
	}
	return words >= 2 && capital*10 >= words*7
}

// looksLikeMeta: a line that carries a publication date label or a DOI
// label, or an impact line: never a title, name or abstract.
func looksLikeMeta(s string) bool {
	if len(s) > 400 {
		return false
	}
	if maybeMeta(s) || strings.Contains(s, "Pub Date") {
		if h, ok := parseMeta(s); ok && (h.published != "" || h.doi != "") {
			return true
		}
	}
	_, ok := parseRanking(s)
	return ok
}

// isFurniture: a line of page chrome (header, navigation, breadcrumb,
// language switch, pager, footer) or the listing heading.
func isFurniture(s string) bool {
	if len(s) > 300 {
		return false // furniture lines are short (FurnitureIn finds marks in long values)
	}
	return isNoise(s) || strings.Contains(s, "最新文献") && reHeading.MatchString(s)
}
