package parser

import (
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/litcrawl/litcrawl/record"
)

// visible holds what a block's visible lines say.
type visible struct {
	title, titleCN       string
	authors              []string
	abstract, abstractCN string
	head                 headInfo
	citations            *int
	positionalTitle      bool // the title was taken by position, not matched to the JSON
	titleShown           bool // a line shows the JSON title whole
	paperID              string
	doubts               []Finding // lines read by content that could not be settled
}

// assemble turns segments into records, in page order.
func assemble(segs []*segment, page *Page, opts Options) {
	if page.JournalID == 0 {
		for _, s := range segs {
			if s.json != nil && s.json.PeriodicalID > 0 {
				page.JournalID = int64(s.json.PeriodicalID)
				break
			}
		}
	}
	fetched := ""
	if !opts.FetchedAt.IsZero() {
		fetched = opts.FetchedAt.UTC().Format(time.RFC3339)
	}
	capture := opts.Capture
	if capture == "" {
		capture = opts.URL
	}
	page.Records = make([]record.Record, 0, len(segs))
	for _, s := range segs {
		s.rec = -1
		if s.cutNext {
			continue // the next paper, cut before it names itself (readEnding)
		}
		if !s.anchored() {
			if len(page.Records) > 0 {
				untaken(s, page)
			} else {
				namesBeforeFirst(s, page)
			}
			continue
		}
		page.BlocksFound++
		r, doubts, ok := buildRecord(s, page)
		if !ok {
			page.BlocksDropped++
			untaken(s, page)
			continue
		}
		r.Source = record.Source{
			URL:       opts.URL,
			Page:      page.PageNo,
			Position:  len(page.Records) + 1,
			Capture:   capture,
			FetchedAt: fetched,
			RunID:     opts.RunID,
		}
		s.rec = len(page.Records)
		page.Records = append(page.Records, r)
		for _, d := range doubts {
			page.doubt(len(page.Records), d.Field, d.Value, d.Why)
		}
		page.evidence = append(page.evidence, s.evidence)
		page.fromLines = append(page.fromLines, s.fromLines)
	}
}

// untaken notes the first text line of a segment that gives no record:
// lines no paper took mean the page may be misread (a cut object's start
// is no such line).
func untaken(s *segment, page *Page) {
	for _, l := range s.lines {
		if l.kind != kindText || !strings.HasPrefix(l.text, `{"`) {
			// (a citation, impact or date/DOI line too: another
			// paper's, in a layout read wrong)
			page.doubt(len(page.Records), "page", l.text, "a line that no paper took")
			return
		}
	}
}

// namesBeforeFirst notes a line of names that stands before the page's
// first paper, which no paper took: the blocks may lead with their names,
// read as each previous block's end (the first paper's names left over),
// and every paper's names may be its neighbour's. (Header text is no
// names line.)
func namesBeforeFirst(s *segment, page *Page) {
	for _, l := range s.lines {
		if l.kind == kindText && (looksLikeAuthors(l.text) || looksLikeNameList(l.text)) {
			page.doubt(1, "authors", l.text, "a line of names before the first paper: do the blocks lead with their names?")
			return
		}
	}
}

// readVisible assigns the segment's visible lines to fields. With JSON, lines
// are matched against it; without, they are placed by position.
func readVisible(s *segment) visible {
	var v visible
	for _, l := range s.lines {
		switch l.kind {
		case kindImpact, kindMeta:
			mergeHead(&v.head, *l.head)
			if s.json == nil && l.head.badDate != "" && l.head.published == "" {
				v.doubt("published", l.head.badDate, "a date in a form not read")
			}
		case kindCitation:
			if v.citations != nil && *v.citations != l.count() {
				v.doubt("citations", l.text, "a second citation line in one block")
			}
			n := l.count()
			v.citations = &n
		}
	}
	switch {
	case s.json != nil:
		readMatched(s, &v)
		if s.afterCite {
			// After a citation line, where the site's blocks end, lines
			// before this block's title could be the block's above or
			// this one's: a line only the page gives, placed there, is a
			// guess.
			for _, l := range s.lines {
				if l.kind == kindText && l.text != "" && (matchTitle1(l.text, s.json) || l.strong()) {
					break
				}
				if l.kind == kindText && (l.text == v.abstractCN || l.text == v.titleCN) {
					v.doubt("abstract_cn", l.text, "a Chinese line between two papers (after a citation line, before a title): whose?")
					break
				}
				if l.kind == kindImpact && l.head.zone > 0 && l.head.doi == "" {
					v.doubt("zone", l.text, "an impact line between two papers (after a citation line, before a title): whose?")
					break
				}
			}
		}

	case s.strongTitle() == 0:
		readByContent(s, &v)
	default:
		readPositional(s, &v)
	}
	return v
}

// titleOf reports whether a title line is the JSON's title in another
// form (the English part alone matches, ignoring case and a final stop).
func titleOf(text string, p *paperJSON) bool {
	en, _ := splitTitleLine(text)
	pt := p.plainTitle()
	return en != "" && pt != "" && (foldKey(strings.TrimRight(en, ".")) == foldKey(strings.TrimRight(pt, ".")))
}

// readByContent reads a block without JSON that opens with a title by
// content (a heading, a link to the paper's page, or a title line): every
// other line is taken for what it looks like (textRole), wherever it
// stands. A second line for a field, or a line that is no field, is a
// doubt: the record is kept, and the run's quality gate alarms.
func readByContent(s *segment, v *visible) {
	t := s.lines[0]
	if hasCJK(t.text) {
		v.title, v.titleCN = splitTitleLine(t.text)
	}
	if v.title == "" || v.titleCN == "" {
		v.title, v.titleCN = t.text, "" // a title alone on its line (a heading, a link)
	}
	if t.head != nil {
		v.paperID = t.head.paperID
	}
	heads := 0
	for i := 1; i < len(s.lines); i++ {
		l := s.lines[i]
		switch l.kind {
		case kindMeta, kindImpact:
			if h := l.head; h.published != "" && v.head.published != "" && h.published != v.head.published ||
				h.doi != "" && v.head.doi != "" && record.DOIKey(h.doi) != record.DOIKey(v.head.doi) {
				v.doubt("published", l.text, "a second date/DOI line in one block")
			}
			heads++
			continue
		case kindCitation:
			if heads < 0 {
				heads = 0
			}
			continue
		case kindText:
		default:
			continue
		}
		role := roleIn(s.lines[:i], &l)
		if cutAbstractCN(s, i, role, v) {
			v.abstractCN = l.text // a Chinese abstract the capture cut short
			continue
		}
		switch role {
		case roleTitleCN:
			if i == 1 && v.titleCN == "" {
				v.titleCN = l.text
			} else if roleOf(&l)&roleTitle != 0 {
				v.doubt("title", l.text, "a second title line in one block")
			} else {
				v.doubt("title_cn", l.text, "a Chinese line that is no title of this block nor a paragraph")
			}
		case roleAbstractCN:
			if v.abstractCN != "" {
				v.doubt("abstract_cn", l.text, "a second Chinese paragraph in one block")
			} else {
				v.abstractCN = l.text
			}
		case roleNames:
			if v.authors != nil {
				v.doubt("authors", l.text, "a second names line in one block")
			} else {
				v.authors = splitAuthors(l.text)
			}
		default:
			if v.abstract != "" {
				v.doubt("abstract", l.text, "a second English paragraph in one block")
			} else {
				v.abstract = l.text
			}
		}
	}
}

// longerCut: visible text that starts as the cut text does and goes on.
func longerCut(visible, cut string) bool {
	return len(visible) > len(cut) && strings.HasPrefix(foldKey(visible), foldKey(cut))
}

// cutAbstractCN: line i of a block the capture cut (readEnding) is its
// Chinese abstract cut short: the block's last line, Chinese, after its
// title, where the block has no Chinese abstract, and no names line that
// it could be instead.
func cutAbstractCN(s *segment, i int, r role, v *visible) bool {
	l := s.lines[i]
	return s.cutEnd && i == len(s.lines)-1 && i > 1 && v.abstractCN == "" && cjkDominant(l.text) &&
		(r != roleNames || v.authors != nil)
}

func (v *visible) doubt(field, value, why string) {
	v.doubts = append(v.doubts, Finding{Field: field, Value: cutValue(value), Why: why})
}

func mergeHead(dst *headInfo, h headInfo) {
	if dst.journal == "" {
		dst.journal = h.journal
	}
	if !dst.hasImpact && h.hasImpact {
		dst.impact, dst.hasImpact = h.impact, true
	}
	if dst.zone == 0 {
		dst.zone = h.zone
	}
	if dst.subject == "" {
		dst.subject = h.subject
	}
	if dst.jcrQuartile == "" {
		dst.jcrQuartile, dst.jcrCategory = h.jcrQuartile, h.jcrCategory
	}
	if dst.published == "" {
		dst.published = h.published
	}
	if dst.doi == "" {
		dst.doi = h.doi
	}
}

// readMatched reads a block with JSON: its visible lines are matched
// against the JSON (title and the Chinese title after it, authors,
// abstract), wherever they stand; then, in turn, what the JSON could not
// match: names where the JSON has none, English prose where it has no
// abstract, a Chinese paragraph anywhere; last, lines that are another
// paper's, and the title by place when no line shows the JSON's.
func readMatched(s *segment, v *visible) {
	m := &matching{s: s, v: v, p: s.json, titleIdx: -1, placed: make([]bool, len(s.lines))}
	for i := range s.lines {
		m.match(i)
	}
	m.namesUnmatched()
	m.abstractUnmatched()
	m.abstractCNAnywhere()
	m.strayLines()
	m.titleByPlace()
}

// matching is readMatched's reading of one block.
type matching struct {
	s         *segment
	v         *visible
	p         *paperJSON
	titleIdx  int    // the line that shows the JSON title, or -1
	placed    []bool // lines taken for a field
	afterHead bool   // a head line came before the line read
}

// match reads line i against the JSON.
func (m *matching) match(i int) {
	l, v, p := &m.s.lines[i], m.v, m.p
	switch {
	case l.kind == kindImpact || l.kind == kindMeta:
		m.afterHead = true
		return
	case l.kind != kindText:
		return
	}
	if m.titleIdx < 0 {
		if ok, rest, exact := matchTitle(l.text, p); ok {
			m.titleIdx, m.placed[i] = i, true
			v.titleCN, v.titleShown = rest, exact
			return
		}
	}
	switch {
	case v.authors == nil && matchAuthors(l.text, p):
		v.authors, m.placed[i] = splitAuthors(l.text), true
	case v.abstract == "" && matchAbstract(l.text, p):
		v.abstract, m.placed[i] = l.text, true
	case !cjkDominant(l.text):
	case m.titleIdx >= 0 && i == m.titleIdx+1 && v.titleCN == "" && v.authors == nil:
		v.titleCN, m.placed[i] = l.text, true
	case v.abstractCN == "" && (v.abstract != "" || v.authors != nil || m.afterHead):
		v.abstractCN, m.placed[i] = l.text, true
	}
}

// unplaced: line i is text no field took yet.
func (m *matching) unplaced(i int) bool {
	return m.s.lines[i].kind == kindText && !m.placed[i]
}

// namesUnmatched: where the JSON gives no authors (or an odd value), the
// first unplaced line after the title that reads like names is the
// visible authors line, not the abstract.
func (m *matching) namesUnmatched() {
	if len(m.p.authorList()) > 0 || m.v.authors != nil {
		return
	}
	for i, l := range m.s.lines {
		if m.unplaced(i) && i > m.titleIdx && looksLikeAuthors(l.text) && !looksLikeProse(l.text) {
			m.v.authors, m.placed[i] = splitAuthors(l.text), true
			return
		}
	}
}

// abstractUnmatched: where the JSON has no abstract to match against, the
// first unplaced English prose line after the authors (or the head) is
// the visible abstract; English prose anywhere in the block is it too (a
// block may open with its abstract, before the title and authors lines).
func (m *matching) abstractUnmatched() {
	v := m.v
	if m.p.plainAbstract() != "" || v.abstract != "" {
		return
	}
	for i, l := range m.s.lines {
		if m.unplaced(i) && !cjkDominant(l.text) && (v.authors == nil || !looksLikeAuthors(l.text)) &&
			(i > m.titleIdx && afterAuthorsOrHead(m.s, i) || looksLikeAbstract(l.text)) {
			v.abstract, m.placed[i] = l.text, true
			return
		}
	}
}

// abstractCNAnywhere: a Chinese paragraph in another place than after the
// English abstract (before the title, say) is the Chinese abstract.
func (m *matching) abstractCNAnywhere() {
	v := m.v
	if v.abstractCN != "" {
		return
	}
	for i, l := range m.s.lines {
		if m.unplaced(i) && cjkDominant(l.text) && utf8.RuneCountInString(l.text) >= 12 && !strings.HasPrefix(l.text, "引用次数") &&
			!isTitleLine(l.text) && !looksLikeCJKNames(l.text) && (m.titleIdx < 0 || i != m.titleIdx+1 || v.titleCN != "" && isCJKParagraph(l.text)) {
			v.abstractCN, m.placed[i] = l.text, true
			return
		}
	}
}

// strayLines: an unplaced title line that is not the JSON's (another
// paper's, whose Chinese title is then lost or misplaced), or a second
// Chinese paragraph (this block's, or a neighbour's?), is a doubt.
func (m *matching) strayLines() {
	for i, l := range m.s.lines {
		if !m.unplaced(i) || l.text == m.v.abstractCN || !hasNonASCII(l.text) {
			continue
		}
		if isTitleLine(l.text) {
			if !titleOf(l.text, m.p) {
				m.v.doubt("title_cn", l.text, "a title line of another paper in this paper's block")
				return
			}
		} else if isCJKParagraph(l.text) {
			m.v.doubt("abstract_cn", l.text, "a second Chinese paragraph in this paper's block")
			return
		}
	}
}

// titleByPlace: when no line shows the JSON title, the line in the
// title's place, if unplaced, is taken, and the caller compares
// (json-visible-mismatch).
func (m *matching) titleByPlace() {
	if m.titleIdx >= 0 {
		return
	}
	if i, ok := m.s.titleCandidate(); ok && !m.placed[i] && m.s.hasHead() {
		m.v.title, m.v.titleCN = splitTitleLine(m.s.lines[i].text)
		m.v.positionalTitle = true
	}
}

func readPositional(s *segment, v *visible) {
	ti, ok := s.titleCandidate()
	start := 0
	if ok {
		t := s.lines[ti].text
		first := ti
		if en, _ := splitTitleLine(t); en == "" && ti > 0 && s.lines[ti-1].kind == kindText && !cjkDominant(s.lines[ti-1].text) {
			// English and Chinese titles on lines of their own.
			v.title, v.titleCN = s.lines[ti-1].text, t
			first = ti - 1
		} else {
			v.title, v.titleCN = splitTitleLine(t)
		}
		start = ti + 1
		for _, l := range s.lines[:first] {
			if l.kind == kindText {
				v.doubt("page", l.text, "a line before this paper's title that no field took")
			}
		}
	}
	for i := start; i < len(s.lines); i++ {
		l := s.lines[i]
		if l.kind != kindText {
			continue
		}
		switch {
		case cjkDominant(l.text):
			if v.authors == nil && v.abstract == "" && v.abstractCN == "" && looksLikeCJKNames(l.text) {
				v.authors = splitAuthors(l.text)
			} else if v.abstractCN == "" {
				v.abstractCN = l.text
			} else {
				v.doubt("abstract_cn", l.text, "a second Chinese line in one block")
			}
		case v.authors == nil && v.abstract == "" && !looksLikeProse(l.text):
			v.authors = splitAuthors(l.text)
		case v.abstract == "":
			v.abstract = l.text
		default:
			// Read by place, a line with no place left: the block holds
			// another paper's line, or the layout is not the site's.
			v.doubt("page", l.text, "a line of this block that no field took")
		}
	}
}

// buildRecord merges the JSON and the visible lines of one block. JSON wins
// for the fields it has; the visible lines give title_cn, citations, zone,
// subject, JCR and abstract_cn, and fill what the JSON lacks. Each field
// has one rule, in this order:
//
//   - fromJSON: every field the block's object gives (title, authors,
//     abstract, DOI, date, journal, impact factor, zone, subject, JCR,
//     citations, the site id);
//   - shownOnly: the fields the visible lines always give when shown
//     (title_cn, abstract_cn, citations, zone, subject, JCR);
//   - fillFromLines: the fields the JSON lacked (title, authors,
//     abstract, DOI, date, impact factor, journal name);
//   - identify: the id (site id, else DOI, else title and date).
func buildRecord(s *segment, page *Page) (record.Record, []Finding, bool) {
	v := readVisible(s)
	r := record.Record{SchemaVersion: record.SchemaVersion}
	var j record.Journal
	id := ""
	if p := s.json; p != nil {
		id = fromJSON(p, &r, &j)
		if jsonContradicted(v, &r) {
			r.AddWarning(record.WarnJSONVisibleMismatch)
		}
		s.evidence = vouch(v, &r)
	} else {
		r.AddWarning(record.WarnNoJSON)
	}
	shownOnly(v, &r)
	fillFromLines(s, v, &r, &j, page)
	if id == "" {
		id = v.paperID // a link to the paper's page names it
	}
	if !identify(&r, id) {
		return r, nil, false
	}
	return r, v.doubts, true
}

// fromJSON sets the fields the block's object gives, and returns its site
// id.
func fromJSON(p *paperJSON, r *record.Record, j *record.Journal) string {
	r.Title = p.plainTitle()
	r.TitleCN = plainText(p.TitleCN)
	r.Authors = p.authorList()
	r.Abstract = p.plainAbstract()
	r.AbstractCN = plainText(p.AbstractTextCN)
	r.DOI = strings.TrimSpace(p.DOI)
	if r.DOI == "" {
		r.DOI = doiFromURL(p.DOIURL)
	}
	r.Published = isoDate(p.PublicationDate)
	if p.Journal != nil {
		j.Name = collapse(p.Journal.Name)
		j.Volume, j.Issue = splitVolume(collapse(string(p.Journal.Volume)))
		j.Pages = collapse(string(p.Journal.Pages))
	}
	if j.Name == "" {
		j.Name = collapse(p.PeriodicalName)
	}
	if p.PeriodicalID > 0 {
		j.ID = int64(p.PeriodicalID)
	}
	if p.PeriodicalIF > 0 && !math.IsInf(float64(p.PeriodicalIF), 0) {
		r.ImpactFactor = float64(p.PeriodicalIF)
	}
	r.OpenAccessPDF = strings.TrimSpace(p.OpenAccessPDF)
	r.PublicationType = collapse(string(p.PublicationType))
	if p.CitationCount != nil && *p.CitationCount >= 0 {
		n := int(*p.CitationCount)
		r.Citations = &n
	}
	if p.truncated {
		r.AddWarning(record.WarnJSONTruncated)
	}
	if p.oddTypes {
		r.AddWarning(record.WarnJSONOddTypes)
	}
	// A region number from the JSON is the zone when nothing visible says.
	if p.RegionNum > 0 && p.RegionNum <= 4 {
		r.Zone = int(p.RegionNum)
	}
	r.Subject = collapse(p.RegionCategory)
	if q := strings.ToUpper(strings.TrimSpace(p.JCR)); reQuartile.MatchString(q) {
		r.JCRQuartile = q
	}
	r.JCRCategory = collapse(p.JCRName)
	return strings.TrimSpace(string(p.PaperID))
}

// jsonContradicted: the visible lines show another DOI, date, impact
// factor or title than the JSON's (json-visible-mismatch).
func jsonContradicted(v visible, r *record.Record) bool {
	switch {
	case v.head.doi != "" && r.DOI != "" && record.DOIKey(v.head.doi) != record.DOIKey(r.DOI):
		return true
	case v.head.published != "" && r.Published != "" && v.head.published != r.Published:
		return true
	case v.head.hasImpact && r.ImpactFactor > 0 && math.Abs(v.head.impact-r.ImpactFactor) > 0.05:
		return true
	}
	return titleContradicted(v, r)
}

// titleContradicted: the block's title, taken by position, is not the
// JSON's.
func titleContradicted(v visible, r *record.Record) bool {
	return v.positionalTitle && v.title != "" && r.Title != "" && foldKey(v.title) != foldKey(strings.TrimRight(r.Title, ".")) &&
		foldKey(strings.TrimRight(v.title, ".")) != foldKey(r.Title)
}

// vouch is how much the visible lines vouch for the JSON: when two
// records of a page name one paper, the better vouched-for is kept.
func vouch(v visible, r *record.Record) int {
	e := 0
	if v.titleShown {
		e += 2
	}
	if v.head.doi != "" {
		if record.DOIKey(v.head.doi) == record.DOIKey(r.DOI) {
			e += 2
		} else {
			e -= 2 // the visible DOI is another
		}
	}
	if v.authors != nil && len(r.Authors) > 0 && slices.Equal(v.authors, r.Authors) {
		e++
	}
	if v.abstract != "" && r.Abstract != "" && foldKey(v.abstract) == foldKey(r.Abstract) {
		e++
	}
	if titleContradicted(v, r) {
		e -= 4 // the block shows another title
	}
	// Of two objects the page shows alike, the one with a paper's
	// identity: a DOI and a date (an advert copying a paper has less).
	if r.DOI != "" {
		e++
	}
	if r.Published != "" {
		e++
	}
	return e
}

// shownOnly sets the fields the visible lines give whenever they show
// them: the page's own data, which the JSON does not carry.
func shownOnly(v visible, r *record.Record) {
	if v.titleCN != "" {
		r.TitleCN = v.titleCN
	}
	if v.abstractCN != "" {
		r.AbstractCN = v.abstractCN
	}
	if v.citations != nil {
		r.Citations = v.citations
	}
	if v.head.zone > 0 {
		r.Zone = v.head.zone
	}
	if v.head.subject != "" {
		r.Subject = v.head.subject
	}
	if v.head.jcrQuartile != "" {
		r.JCRQuartile, r.JCRCategory = v.head.jcrQuartile, v.head.jcrCategory
	}
}

// fillFromLines sets what the JSON lacked from the visible lines, and
// notes which of title, authors and abstract came from them.
func fillFromLines(s *segment, v visible, r *record.Record, j *record.Journal, page *Page) {
	if r.Title == "" {
		r.Title = v.title
		s.fromLines |= fromLinesTitle
	}
	if r.Authors == nil {
		r.Authors = v.authors
		s.fromLines |= fromLinesAuthors
	}
	if s.json != nil && s.json.truncated && longerCut(v.abstract, r.Abstract) {
		r.Abstract = "" // the JSON's abstract was cut, the visible line shows more
	}
	if r.Abstract == "" {
		r.Abstract = v.abstract
		s.fromLines |= fromLinesAbstract
		if r.Abstract != "" && !endsSentence(r.Abstract) {
			// A visible abstract that stops mid-sentence was cut (by the
			// capture, or by the listing): say so.
			r.AddWarning(record.WarnTextTruncated)
		}
	}
	if r.DOI == "" {
		r.DOI = v.head.doi
	}
	if r.Published == "" {
		r.Published = v.head.published
	}
	if r.ImpactFactor == 0 && v.head.hasImpact && v.head.impact > 0 {
		r.ImpactFactor = v.head.impact
	}
	if j.Name == "" {
		j.Name = v.head.journal
	}
	if j.Name == "" {
		j.Name = page.JournalName
	}
	if page.JournalID > 0 {
		j.ID = page.JournalID
	}
	if *j != (record.Journal{}) {
		r.Journal = j
	}
}

// identify sets the record's identifiers and id: the site id, else its
// DOI, else its title and date. false: the block names no paper.
func identify(r *record.Record, id string) bool {
	setIdentifiers(r)
	switch {
	case id != "":
		r.ID = id
	case r.DOI != "":
		r.ID = record.DOIID(r.DOI)
	case r.SiteDOI != "":
		r.ID = record.DOIID(r.SiteDOI)
	case r.Title != "":
		r.ID = record.TitleID(r.Title, r.Published)
	default:
		return false
	}
	if r.Title == "" {
		r.AddWarning(record.WarnNoTitle)
	}
	return true
}

// splitVolume splits the site's volume value, which runs the issue into
// the volume ("8 1", "419 1", "12 3-4"), into volume and issue. IEEE's
// early-access placeholder ("PP", with issue "99") is no volume: both are
// empty. Any other value is kept as it is, as the volume.
func splitVolume(v string) (volume, issue string) {
	vol, iss, two := strings.Cut(v, " ")
	if strings.EqualFold(vol, "PP") {
		return "", ""
	}
	if two && allDigits(vol) && issueLike(iss) {
		return vol, iss
	}
	return v, ""
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

// issueLike: "1", "12", "3-4", "3/4".
func issueLike(s string) bool {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		a, b, ok = strings.Cut(s, "/")
	}
	return allDigits(a) && (!ok || allDigits(b))
}

// setIdentifiers puts what the record was given as its DOI in its place
// (record.ParseDOI): a DOI in doi, with its doi_url; an arXiv paper's DOI
// with its arxiv_id and url; anything else in site_doi, never in doi.
func setIdentifiers(r *record.Record) {
	id := record.ParseDOI(r.DOI)
	r.DOI, r.SiteDOI, r.ArxivID = id.DOI, id.Other, id.ArxivID
	r.DOIURL = record.DOIURL(r.DOI)
	if r.ArxivID != "" {
		r.URL = "https://arxiv.org/abs/" + r.ArxivID
	}
}

// afterAuthorsOrHead reports whether line i comes after a head line or after
// a line that reads like authors: where a desktop block shows its abstract.
func afterAuthorsOrHead(s *segment, i int) bool {
	for _, l := range s.lines[:i] {
		if l.kind == kindImpact || l.kind == kindMeta || l.kind == kindText && looksLikeAuthors(l.text) {
			return true
		}
	}
	return false
}
