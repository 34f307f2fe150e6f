package parser

import (
	"strings"
	"unicode/utf8"

	"github.com/litcrawl/litcrawl/record"
)

// A segment is the lines of one paper block. Blocks are delimited by the
// JSON objects and by the head (impact, meta) and citation lines, not by
// title lines alone: a capture may have lost whole kinds of lines.
type segment struct {
	lines    []line     // visible lines in page order (text, impact, meta, citation)
	json     *paperJSON // the block's paper object, if any
	jsonAt   int        // len(lines) when the JSON arrived
	jsonRaw  int32      // the raw line the JSON came from
	grouped  bool       // the JSON came in a group of several (one script of every paper)
	rec      int        // index of the record made of it in Page.Records, or -1
	evidence int        // how much its visible lines vouch for its JSON (buildRecord)
	// afterJSONMatched: a visible line after the JSON matched it, so the
	// block is laid out JSON-first.
	afterJSONMatched bool
	// roles are the roles of lines[:rolesN] (roleSet).
	roles  role
	rolesN int
	piece  int8 // pieceOf's answer: 0 not asked yet, 1 yes, -1 no
	// fromLines says which of the record's title, authors and abstract
	// came from visible lines, not from the JSON (buildRecord).
	fromLines uint8
	// afterCite: the segment starts right after a citation line.
	afterCite bool
	ahead     int8 // ownJSONAhead's answer, likewise
	// cutEnd: the capture stops inside this block (readEnding); cutNext:
	// the block is the start of a next one, cut before it names its paper.
	cutEnd, cutNext bool
}

// ownJSONAhead reports whether the next paper object of the page, p, is
// the one whose title the segment opens with: the block's JSON is still
// to come (the site's order), and the segmenter's JSON rules read it.
func (s *segment) ownJSONAhead(p *paperJSON) bool {
	if s.ahead == 0 {
		s.ahead = -1
		if p != nil && len(s.lines) > 0 && matchTitle1(s.lines[0].text, p) {
			s.ahead = 1
		}
	}
	return s.ahead == 1
}

// showsLast reports whether a line shows the title of last, the block
// before with JSON: a piece of it, not the start of a new block.
func showsLast(text string, last *segment) bool {
	return last != nil && last.json != nil && matchTitle1(text, last.json)
}

// pieceOf reports whether the segment's title line shows the paper of
// last, the block before it with JSON: it is then a piece of that block
// whose lines came in another order, not a block of its own (reunite puts
// it back).
func (s *segment) pieceOf(last *segment) bool {
	if s.piece == 0 {
		s.piece = -1
		if len(s.lines) > 0 && showsLast(s.lines[0].text, last) {
			s.piece = 1
		}
	}
	return s.piece == 1
}

// role is what a line of a block is, told by its content: the parts a
// block has one of each.
type role uint16

const (
	roleDate role = 1 << iota
	roleDOI
	roleImpact
	roleCitation
	roleNames
	roleAbstract
	roleAbstractCN
	roleTitleCN
	roleTitle
)

// roleOf tells what a visible line is by its content alone.
func roleOf(l *line) role {
	switch l.kind {
	case kindMeta, kindImpact:
		var r role
		if l.head.published != "" {
			r |= roleDate
		}
		if l.head.doi != "" {
			r |= roleDOI
		}
		if l.head.ranked() {
			r |= roleImpact
		}
		return r
	case kindCitation:
		return roleCitation
	case kindText:
		switch l.mark {
		case markNames:
			return roleNames
		case markAbstract:
			if cjkDominant(l.text) {
				return roleAbstractCN // "摘要：…" in Chinese
			}
			return roleAbstract
		case markAbstractCN:
			return roleAbstractCN
		}
		if l.strong() {
			r := roleTitle
			if _, cn := splitTitleLine(l.text); cn != "" && hasCJK(l.text) {
				r |= roleTitleCN
			}
			return r
		}
		return textRole(l.text)
	}
	return 0
}

// textRole tells a text line's role by what it looks like: a Chinese
// paragraph is the Chinese abstract, other Chinese text the Chinese title
// (or names, with separators), a names line the authors, other English
// text the abstract.
func textRole(t string) role {
	switch {
	case isCJKParagraph(t):
		return roleAbstractCN
	case cjkDominant(t):
		if looksLikeCJKNames(t) && strings.ContainsAny(t, "，、,;") {
			return roleNames
		}
		return roleTitleCN
	case looksLikeNameList(t) || nameLike(t):
		return roleNames
	}
	return roleAbstract
}

// roleIn is the role of line l coming after the lines before it in its
// block: a Chinese line right after a title that has no Chinese title is
// the Chinese title (even a long one, or one that ends with "。"); a short
// Chinese line of names, once the title has its Chinese title, is names.
func roleIn(before []line, l *line) role {
	if l.mark >= markNames {
		return roleOf(l) // labelled
	}
	if len(before) == 1 && l.kind == kindText && before[0].mark == markTitle && hasCJK(l.text) && !hasCJK(before[0].text) &&
		utf8.RuneCountInString(l.text) < 80 && strings.Count(l.text, "。") <= 1 && strings.Count(l.text, "，") <= 1 && !strings.Contains(l.text, "。 ") {
		// Right after a title the markup shows alone: its Chinese title
		// (which may begin with Latin words, "C/C++ 嵌入式…").
		return roleTitleCN
	}
	r := roleOf(l)
	if l.kind != kindText || len(before) == 0 || r&(roleTitleCN|roleAbstractCN) == 0 {
		return r
	}
	title := &before[0]
	cn := ""
	if hasCJK(title.text) {
		_, cn = splitTitleLine(title.text)
	}
	switch {
	case r == roleTitleCN && (cn != "" || len(before) > 1) && looksLikeCJKNames(l.text):
		return roleNames
	}
	return r
}

// titleish: an English line that may be a title shown without its
// Chinese title: short, one sentence at most. After a block's citation
// line (where the site's blocks end) it starts the next block.
func titleish(t string) bool {
	return len(t) <= 300 && !strings.Contains(t, ". ") && !hasCJK(t)
}

// restFits reports whether the lines up to the next title by content
// (or JSON object) are of roles a block with roles has not: then they are
// its lines, in another order, and not the next block's (whose title the
// capture shows without its Chinese title).
func restFits(rest []line, roles role) bool {
	for k := range rest[:min(len(rest), maxBlockLines)] {
		l := &rest[k]
		if l.strong() || l.kind == kindJSON {
			return true
		}
		r := roleOf(l)
		if r&roles != 0 {
			return false
		}
		roles |= r
	}
	return true
}

// roleSet is the roles of the segment's lines.
func (s *segment) roleSet() role {
	for ; s.rolesN < len(s.lines); s.rolesN++ {
		s.roles |= roleIn(s.lines[:s.rolesN], &s.lines[s.rolesN])
	}
	return s.roles
}

func (s *segment) empty() bool { return len(s.lines) == 0 && s.json == nil }

// strong reports whether a line is a title by what it is, not where it
// stands: a heading or a link to the paper's page in the markup, or a
// title line (English, then Chinese).
func (l *line) strong() bool {
	if l.kind != kindText {
		return false
	}
	if l.mark == markNone {
		// Decided on first asking (most lines of a page never are), and
		// kept on the line.
		l.mark = markPlain
		if isTitleLine(l.text) || oneWordTitleLine(l.text) {
			l.mark = markTitleLine
		}
	}
	return l.mark == markTitle || l.mark == markTitleLine
}

// strongTitle is 0 when the segment opens with a title by content
// (line.strong), else -1: such a block ends only at the next one, or at a
// line of a role it has already, whatever order its other lines come in.
func (s *segment) strongTitle() int {
	if len(s.lines) > 0 && s.lines[0].strong() {
		return 0
	}
	return -1
}

func (s *segment) hasHead() bool {
	for _, l := range s.lines {
		if l.kind == kindImpact || l.kind == kindMeta {
			return true
		}
	}
	return false
}

func (s *segment) anchored() bool {
	if s.json != nil {
		return true
	}
	for _, l := range s.lines {
		if l.kind != kindText {
			return true
		}
	}
	return s.titled()
}

// titled: a block without head or citation line (the desktop layout shows
// none for some papers) that opens with a title line, English and Chinese,
// followed by a line of names.
func (s *segment) titled() bool {
	for i, l := range s.lines {
		if l.kind == kindText {
			if !isTitleLine(l.text) {
				return false
			}
			for _, m := range s.lines[i+1:] {
				if m.kind == kindText && looksLikeAuthors(m.text) {
					return true
				}
			}
			return false
		}
	}
	return false
}

// done reports whether a segment without JSON holds a whole block's
// start: its title (a title line, or the line before its head) and a text
// line after it. Another title line then starts the next block.
func (s *segment) done() bool {
	ti, ok := s.titleCandidate()
	if !ok || !s.hasHead() && !isTitleLine(s.lines[ti].text) {
		return false
	}
	for _, l := range s.lines[ti+1:] {
		if l.kind == kindText {
			return true
		}
	}
	return false
}

// oneWordTitleLine: a title line of one English word and its Chinese
// title, "Editorial 社论", "Erratum 勘误" (not a names line "Wang 王磊, …").
func oneWordTitleLine(text string) bool {
	if len(text) > 200 {
		return false
	}
	en, cn := splitTitleLine(text)
	if en == "" || cn == "" || strings.ContainsRune(en, ' ') || len(en) < 4 || strings.ContainsAny(cn, ",，、;；") || !cjkDominant(cn) {
		return false
	}
	for i := 0; i < len(en); i++ {
		if !isASCIILetter(en[i]) {
			return false // "C/C++", "FedSense:": the Chinese title's own Latin lead
		}
	}
	return en[0] >= 'A' && en[0] <= 'Z'
}

// headDOI is the DOI named by the segment's head lines, if any.
func (s *segment) headDOI() string {
	for _, l := range s.lines {
		if (l.kind == kindMeta || l.kind == kindImpact) && l.head.doi != "" {
			return l.head.doi
		}
	}
	return ""
}

// titleCandidate is the visible line that, by position, should be the title:
// the last text line before the first head line, or the first text line when
// the segment has no head.
func (s *segment) titleCandidate() (int, bool) {
	last, first := -1, -1
	for i, l := range s.lines {
		switch l.kind {
		case kindImpact, kindMeta:
			return last, last >= 0
		case kindText:
			last = i
			if first < 0 {
				first = i
			}
		}
	}
	return first, first >= 0
}

// accepts reports whether JSON object p can belong to this JSON-less
// segment: nothing visible contradicts it. A segment whose head names another
// DOI, or whose title line names another paper, does not accept it.
func (s *segment) accepts(p *paperJSON) bool {
	doiMatch, doiSeen := false, false
	if d := s.headDOI(); d != "" && p.DOI != "" {
		doiSeen = true
		doiMatch = record.DOIKey(d) == record.DOIKey(p.DOI)
	}
	if doiMatch {
		return true
	}
	for _, l := range s.lines {
		if l.kind == kindText {
			if ok, _, _ := matchTitle(l.text, p); ok {
				return true
			}
		}
	}
	if doiSeen {
		return false
	}
	if s.hasHead() {
		if _, ok := s.titleCandidate(); ok {
			return false
		}
	}
	return true
}

// maxBlockLines bounds the lines of one segment. A block of the site has a
// dozen lines; a longer run (a page of noise, or a hostile one) is cut
// into segments of this size, so every look over a segment's lines costs a
// constant, and a page's parse stays linear in its size.
const maxBlockLines = 128

// segmentLines groups classified lines into paper blocks.
//
// The segments' lines are written into lines itself, behind the line
// being read (each line goes to at most one segment, in page order): a
// page's lines are held once, whatever its size. A closed segment's slice
// is capped, so a later stage that adds to it copies it out.
func segmentLines(lines []line) []*segment {
	g := &segmenter{lines: lines, cur: &segment{lines: lines[:0]}, owner: jsonOwners(lines)}
	for i := range lines {
		l := lines[i] // (a copy: segments are written over lines)
		if l.kind != kindJSON && len(g.cur.lines) >= maxBlockLines {
			g.close() // no block is this long: bound the work on one
		}
		if g.byContent(i, l) {
			continue
		}
		switch l.kind {
		case kindJSON:
			g.object(l)
		case kindCitation:
			g.cur.lines = append(g.cur.lines, l)
			g.close()
			g.cur.afterCite = true
		case kindImpact, kindMeta:
			g.head(l)
		case kindText:
			g.text(i, l)
		}
	}
	g.close()
	return g.segs
}

// segmenter is segmentLines' state: the segments closed, the one open.
type segmenter struct {
	lines []line
	segs  []*segment
	cur   *segment
	last  *segment // the last segment closed with an object
	w     int      // where the next segment's lines start in lines
	nj    int      // the first JSON line after the line read (next)
	owner map[string]*paperJSON
}

// close ends the open segment and opens the next.
func (g *segmenter) close() {
	cur := g.cur
	n := len(cur.lines)
	cur.lines = cur.lines[:n:n]
	if !cur.empty() {
		g.segs = append(g.segs, cur)
		if cur.json != nil {
			g.last = cur
		}
		g.w += n
	}
	g.cur = &segment{lines: g.lines[g.w:g.w]}
}

// next is the paper object of the first JSON line after line i, when it
// holds one object: a text line after a block's JSON that shows the next
// object belongs to the next block.
func (g *segmenter) next(i int) *paperJSON {
	if g.nj <= i {
		for g.nj = i + 1; g.nj < len(g.lines) && g.lines[g.nj].kind != kindJSON; g.nj++ {
		}
	}
	if g.nj < len(g.lines) && len(g.lines[g.nj].objects()) == 1 {
		return g.lines[g.nj].objects()[0]
	}
	return nil
}

// jsonOwners maps a DOI to the page's one object that has it: a head line
// naming it belongs to that object's block, whatever its place.
func jsonOwners(lines []line) map[string]*paperJSON {
	owner := map[string]*paperJSON{}
	for _, l := range lines {
		if l.kind == kindJSON && len(l.objects()) == 1 {
			if d := l.objects()[0].doiKey(); d != "" {
				if _, dup := owner[d]; dup {
					owner[d] = nil // two objects, one DOI: no owner
				} else {
					owner[d] = l.objects()[0]
				}
			}
		}
	}
	return owner
}

// elsewhere: doi is the DOI of another object of the page than p.
func (g *segmenter) elsewhere(doi string, p *paperJSON) bool {
	o := g.owner[record.DOIKey(doi)]
	return doi != "" && o != nil && o != p
}

// byContent reads line i into a block without JSON that opens with a
// title by content: such a block holds the lines up to the next such
// title, in any order: its head, names, abstracts and citation line are
// told apart by what they are (roleOf, readByContent). A line of a role
// the block has already (a second date, names line or abstract) starts a
// piece of its own. true: the line was placed.
func (g *segmenter) byContent(i int, l line) bool {
	cur := g.cur
	if cur.json != nil || l.kind == kindJSON || len(cur.lines) == 0 || cur.ownJSONAhead(g.next(i)) || cur.strongTitle() < 0 || cur.pieceOf(g.last) {
		return false
	}
	if l.strong() && roleIn(cur.lines, &l) != roleTitleCN {
		g.close()
		g.cur.lines = append(g.cur.lines, l)
		return true
	}
	if r := roleIn(cur.lines, &l); r&cur.roleSet() == 0 && !(cur.roles&roleCitation != 0 && r == roleAbstract && titleish(l.text) && !restFits(g.lines[i+1:], cur.roles|r)) {
		cur.roles |= r
		cur.lines = append(cur.lines, l)
		cur.rolesN = len(cur.lines)
		return true
	}
	g.close()
	return false
}

// object places a JSON line: a group of objects (one script holding every
// paper) makes a segment each, which reconcile pairs with the visible
// blocks; one object joins the open block unless the block shows another
// paper.
func (g *segmenter) object(l line) {
	if len(l.objects()) > 1 {
		g.close()
		for _, p := range l.objects() {
			g.segs = append(g.segs, &segment{json: p, jsonRaw: l.raw, grouped: true})
		}
		return
	}
	p, cur := l.objects()[0], g.cur
	if cur.json != nil || !cur.accepts(p) || g.elsewhere(cur.headDOI(), p) && !cur.hasTitleFor(p) || cur.showsMore(g.last, p, g.owner) {
		// Lines that show the previous object more than this one are
		// the previous block's (reunite puts them back).
		g.close()
	}
	g.cur.json, g.cur.jsonAt, g.cur.jsonRaw = p, len(g.cur.lines), l.raw
}

// head places an impact or meta line: another object's head, or a second
// head of a block, starts a block.
func (g *segmenter) head(l line) {
	cur := g.cur
	switch {
	case cur.json != nil && g.elsewhere(l.head.doi, cur.json):
		g.close() // another object's head
	case cur.json != nil && len(cur.lines) > cur.jsonAt:
		// After the JSON: only this block's own head stays.
		if !headFits(cur, l) {
			g.close()
		}
	case cur.json != nil:
		if l.head.doi != "" && cur.json.DOI != "" && record.DOIKey(l.head.doi) != record.DOIKey(cur.json.DOI) && cur.hasHead() {
			g.close()
		}
	case cur.hasHead() && !continuesHead(cur, l):
		// A second head: a new block starts, with its title line.
		moved := splitOffTitle(cur)
		g.close()
		if moved != nil {
			g.cur.lines = append(g.cur.lines, *moved)
		}
	}
	g.cur.lines = append(g.cur.lines, l)
}

// text places a text line: after a block's JSON, a line that does not fit
// it starts the next block; so does, in a block without JSON, the next
// block's title after this one's authors, or a title the markup shows.
func (g *segmenter) text(i int, l line) {
	cur := g.cur
	if cur.json != nil && !fitsAfterJSON(cur, l, g.next(i), nextText(g.lines, i)) {
		g.close()
	} else if cur.json == nil && (cur.done() && isTitleLine(l.text) || l.mark == markTitle && cur.hasAnyText() && !showsLast(l.text, g.last)) {
		g.close()
	}
	g.cur.lines = append(g.cur.lines, l)
}

// showsMore reports whether the segment's lines show the paper of the
// last segment closed with JSON more than object p. A head naming p's DOI
// settles it at once.
func (s *segment) showsMore(last *segment, p *paperJSON, owner map[string]*paperJSON) bool {
	if last == nil || !s.hasAnyText() {
		return false
	}
	if d := record.DOIKey(s.headDOI()); d != "" && d == p.doiKey() && owner[d] == p {
		return false // (a DOI that two objects give settles nothing)
	}
	return s.claim(last) > max(s.claim(&segment{json: p}), 0)
}

// headFits: a head line after a JSON-first block's JSON belongs to it when
// its DOI agrees and the block has no complete head yet.
func headFits(cur *segment, l line) bool {
	if l.head.doi != "" && cur.json.DOI != "" {
		return record.DOIKey(l.head.doi) == record.DOIKey(cur.json.DOI)
	}
	return !cur.hasHead() || continuesHead(cur, l)
}

// continuesHead: an impact line directly followed by a meta line form one
// head.
func continuesHead(cur *segment, l line) bool {
	n := len(cur.lines)
	return n > 0 && cur.lines[n-1].kind == kindImpact && l.kind == kindMeta
}

// fitsAfterJSON decides whether a text line after the JSON still belongs to
// the block (JSON-first layouts, or lines in another order) or starts the
// next one. next is the page's next paper object, if any.
func fitsAfterJSON(cur *segment, l line, next *paperJSON, following *line) bool {
	p := cur.json
	if shows(l.text, p) {
		if cur.repeats(l.text) {
			return false // another paper of the same title or names
		}
		cur.afterJSONMatched = true
		return true
	}
	if next != nil && shows(l.text, next) {
		return false // the next paper's line
	}
	if looksLikeTitleLine(l.text) {
		return false // a title line that is not this paper's: the next block's
	}
	if cjkDominant(l.text) && (cur.afterJSONMatched ||
		len(cur.lines) == cur.jsonAt && (following == nil && utf8.RuneCountInString(l.text) >= 12 ||
			following != nil && (shows(following.text, p) || cur.lacks(following.text)))) {
		// (a title line was ruled out above) A Chinese line after this
		// block's matched lines is its Chinese title or abstract; directly
		// after the JSON, it is when the line after it is this block's
		// too: a block may also open with its Chinese abstract.
		return true
	}
	if cur.lacks(l.text) {
		cur.afterJSONMatched = true
		return true
	}
	return false
}

// lacks reports whether text is a line the block still lacks: the names
// when its JSON has none and no line showed them yet, the abstract
// likewise.
func (cur *segment) lacks(text string) bool {
	p := cur.json
	return looksLikeAuthors(text) && len(p.authorList()) == 0 && !cur.hasText(looksLikeAuthors) ||
		looksLikeAbstract(text) && p.plainAbstract() == "" && !cur.hasText(looksLikeAbstract)
}

// looksLikeAbstract: English prose, not a title or a names line.
func looksLikeAbstract(s string) bool {
	return len(s) >= 80 && (strings.Contains(s, ". ") || strings.HasSuffix(s, ".")) &&
		!cjkDominant(s) && !looksLikeAuthors(s) && !looksLikeTitleLine(s)
}

// repeats reports whether text shows a part of the segment's paper (its
// title, authors or abstract) that one of its lines shows already: then it
// is another paper's line (two papers may share a title, Editorial, or
// their authors).
func (s *segment) repeats(text string) bool {
	p := s.json
	if ok, _, _ := matchTitle(text, p); ok {
		return s.hasTitleFor(p)
	}
	if matchAuthors(text, p) {
		return s.hasText(func(t string) bool { return matchAuthors(t, p) })
	}
	if matchAbstract(text, p) {
		return s.hasText(func(t string) bool { return matchAbstract(t, p) })
	}
	return false
}

// nextText is the text line after lines[i] in the same stretch (before
// the next JSON object or citation line), or nil.
func nextText(lines []line, i int) *line {
	for k := i + 1; k < len(lines); k++ {
		switch lines[k].kind {
		case kindText:
			return &lines[k]
		case kindJSON, kindCitation:
			return nil
		}
	}
	return nil
}

// shows reports whether a visible line shows paper p's title, authors or
// abstract.
func shows(text string, p *paperJSON) bool {
	if ok, _, _ := matchTitle(text, p); ok {
		return true
	}
	return matchAuthors(text, p) || matchAbstract(text, p)
}

// hasAnyText reports whether the segment has a text line.
func (s *segment) hasAnyText() bool { return s.hasText(func(string) bool { return true }) }

// hasText reports whether one of the segment's text lines satisfies f.
func (s *segment) hasText(f func(string) bool) bool {
	for _, l := range s.lines {
		if l.kind == kindText && f(l.text) {
			return true
		}
	}
	return false
}

// splitOffTitle removes and returns the last line of cur when it is the
// title line of the block whose head is arriving.
func splitOffTitle(cur *segment) *line {
	n := len(cur.lines)
	if n == 0 || cur.lines[n-1].kind != kindText {
		return nil
	}
	last := cur.lines[n-1]
	directlyAfterHead := n >= 2 && (cur.lines[n-2].kind == kindImpact || cur.lines[n-2].kind == kindMeta)
	if directlyAfterHead && looksLikeAuthors(last.text) {
		// The previous block's authors; the new block has no title line.
		return nil
	}
	cur.lines = cur.lines[:n-1]
	return &last
}

// reconcile pairs JSON-only segments (a JSON object with no visible title or
// head of its own) with JSON-less segments that name the same paper by DOI or
// title, so pages that keep all their JSON in one place (a script at the end
// of the body) still give one record per paper.
func reconcile(segs []*segment) []*segment {
	var jsonOnly, visibleOnly []int
	for i, s := range segs {
		switch {
		case s.json == nil && s.anchored():
			visibleOnly = append(visibleOnly, i)
		case s.json != nil && !s.hasHead() && !s.hasTitleFor(s.json):
			jsonOnly = append(jsonOnly, i)
		}
	}
	if len(jsonOnly) == 0 || len(visibleOnly) == 0 {
		return segs
	}
	// Candidates for an object: every visible segment on a page of the
	// site's size; past that, only those whose head shows its DOI or whose
	// title line is its title (an index, so the pairing stays linear).
	candidates := func(p *paperJSON) []int { return visibleOnly }
	if len(jsonOnly)*len(visibleOnly) > maxPairings {
		// (paired entries are dropped from the buckets as pairing goes,
		// so that a bucket is not walked again and again)
		index := map[string][]int{}
		for _, vi := range visibleOnly {
			v := segs[vi]
			if d := v.headDOI(); d != "" {
				index["doi:"+record.DOIKey(d)] = append(index["doi:"+record.DOIKey(d)], vi)
			} else if ti, ok := v.titleCandidate(); ok {
				en, _ := splitTitleLine(v.lines[ti].text)
				k := "title:" + foldKey(strings.TrimRight(en, "."))
				index[k] = append(index[k], vi)
			}
		}
		bucket := func(k string) []int {
			b := index[k]
			for len(b) > 0 && segs[b[0]].json != nil {
				b = b[1:] // paired already: not walked again
			}
			index[k] = b
			return b[:min(len(b), maxTries):min(len(b), maxTries)]
		}
		candidates = func(p *paperJSON) []int {
			t := bucket("title:" + foldKey(strings.TrimRight(p.plainTitle(), ".")))
			if d := p.doiKey(); d != "" {
				return append(bucket("doi:"+d), t...)
			}
			return t
		}
	}
	drop := make([]bool, len(segs))
	tails := map[int]*segment{} // a block of its own found at the end of a paired segment
	indexed := len(jsonOnly)*len(visibleOnly) > maxPairings
	for _, ji := range jsonOnly {
		j := segs[ji]
		tries := 0
		for _, vi := range candidates(j.json) {
			v := segs[vi]
			if v.json != nil {
				continue // paired already (an index bucket is tried from its start)
			}
			if indexed && tries >= maxTries {
				break // a bucket of look-alikes: bound the work per object
			}
			tries++
			if !v.names(j.json) {
				continue
			}
			if k := v.tailBlock(j); k > 0 {
				tails[vi] = &segment{lines: v.lines[k:len(v.lines):len(v.lines)]}
				v.lines = v.lines[:k:k]
			}
			v.json, v.jsonAt, v.jsonRaw, v.grouped = j.json, len(v.lines), j.jsonRaw, j.grouped
			v.lines = append(v.lines, j.lines...)
			drop[ji] = true
			break
		}
	}
	out := make([]*segment, 0, len(segs)+len(tails))
	for i, s := range segs {
		if !drop[i] {
			out = append(out, s)
		}
		if t := tails[i]; t != nil {
			out = append(out, t)
		}
	}
	return out
}

// maxPairings bounds the visible segments tried for each JSON-only one,
// beyond which reconcile pairs by index only, trying at most maxTries
// unpaired candidates of an object's bucket.
const (
	maxPairings = 1 << 16
	maxTries    = 8
)

func (s *segment) hasTitleFor(p *paperJSON) bool {
	for _, l := range s.lines {
		if l.kind == kindText {
			if ok, _, _ := matchTitle(l.text, p); ok {
				return true
			}
		}
	}
	return false
}

// names reports whether the visible segment names paper p by DOI or title.
func (s *segment) names(p *paperJSON) bool {
	if d := s.headDOI(); d != "" && p.DOI != "" {
		return record.DOIKey(d) == record.DOIKey(p.DOI)
	}
	if i, ok := s.titleCandidate(); ok {
		m, _, _ := matchTitle(s.lines[i].text, p)
		return m
	}
	return s.hasTitleFor(p)
}

// matchTitle reports whether a visible title line shows JSON title jt, and
// returns what follows it on the line (the Chinese title). exact is false
// when the line was matched only loosely (cut off, or differing after a
// common prefix), which callers report as a mismatch when it matters.
func matchTitle(lineText string, p *paperJSON) (ok bool, rest string, exact bool) {
	pt := p.plainTitle()
	if pt == "" {
		return false, "", false
	}
	if len(lineText) >= len(pt) && strings.EqualFold(lineText[:len(pt)], pt) {
		rest = lineText[len(pt):]
		r, _ := utf8.DecodeRuneInString(rest)
		// After the title: nothing, the Chinese title (which may begin
		// with Latin words, but holds CJK), or punctuation. Other words
		// make another, longer title.
		if rest == "" || isCJK(r) || strings.ContainsRune(".。:：", r) && afterStop(rest) || r == ' ' && hasCJK(rest) {
			return true, strings.Trim(strings.TrimLeft(rest, ".:："), titleSeparators), true
		}
	}
	// Visible title cut off: a prefix of the JSON title, long enough to mean
	// something.
	if len(lineText) >= 24 && len(lineText) < len(pt) && strings.EqualFold(pt[:len(lineText)], lineText) {
		return true, "", false
	}
	// The English part is the title but for a final '.': the line starts
	// with the title less its last character, or it is not worth splitting.
	k := len(pt) - 1
	for k > 0 && !utf8.RuneStart(pt[k]) {
		k--
	}
	if len(lineText) < k || !strings.EqualFold(lineText[:k], pt[:k]) {
		return false, "", false
	}
	en, cn := splitTitleLine(lineText)
	if en != "" && (strings.EqualFold(en, strings.TrimRight(pt, ".")) || strings.EqualFold(strings.TrimRight(en, "."), pt)) {
		return true, cn, true
	}
	return false, "", false
}

// matchTitle1 reports whether a line shows paper p's title.
func matchTitle1(text string, p *paperJSON) bool {
	ok, _, _ := matchTitle(text, p)
	return ok
}

// afterStop: what follows a title's final stop on its line is nothing, or
// the Chinese title ("Title. 标题。"), not more words of a longer title
// ("Preface.00", "Results: a survey").
func afterStop(rest string) bool {
	_, n := utf8.DecodeRuneInString(rest)
	rest = strings.TrimLeft(rest[n:], " ")
	return rest == "" || hasCJK(rest)
}

// matchAuthors reports whether a visible line shows the JSON authors.
func matchAuthors(lineText string, p *paperJSON) bool {
	if p.Authors == "" {
		return false
	}
	b := p.authorList()
	if len(b) == 0 {
		return false
	}
	// The line starts with the first name (or a cut-off part of it, when
	// it is the only one): a cheap test before splitting the line.
	n := min(len(b[0]), 4)
	if sp := strings.IndexByte(b[0], ' '); sp >= 0 && sp < n {
		n = sp // (a space in the name may be a no-break space on the line)
	}
	if len(lineText) < n || !strings.EqualFold(lineText[:n], b[0][:n]) {
		return false
	}
	if cjkDominant(lineText) && !cjkDominant(string(p.Authors)) {
		return false
	}
	a := splitAuthors(lineText)
	if len(a) == 0 || len(b) == 0 || len(a) > len(b) {
		return false
	}
	for i := 0; i < len(a) && i < 3; i++ {
		if !strings.EqualFold(a[i], b[i]) {
			// The last visible name may be cut off.
			if i == len(a)-1 && len(a) > 1 && strings.HasPrefix(strings.ToLower(b[i]), strings.ToLower(a[i])) {
				return true
			}
			return false
		}
	}
	return true
}

// matchAbstract reports whether a visible line is the start of the JSON
// abstract.
func matchAbstract(lineText string, p *paperJSON) bool {
	pa := p.plainAbstract()
	if len(pa) < 16 || len(lineText) < 16 {
		return false
	}
	n := min(len(lineText), 80)
	for n > 0 && n < len(lineText) && !utf8.RuneStart(lineText[n]) {
		n--
	}
	pre := lineText[:n]
	return len(pre) >= 12 && len(pa) >= len(pre) && strings.EqualFold(pa[:len(pre)], pre)
}

// looksLikeTitleLine: an English title followed by a Chinese one.
func looksLikeTitleLine(s string) bool {
	en, cn := splitTitleLine(s)
	return en != "" && cn != ""
}

// rejectNonPapers keeps the JSON objects that are papers: an object that
// pairs with a visible paper block (the block shows its title, or its head
// or its authors or abstract, in place or by reconcile), or, on a page with
// no visible paper block at all (a capture of the JSON alone), an object
// of the paper shape (paperShape). Any other object (an advert, a tracking
// or login object with a title in a data- attribute) is dropped and counted
// in the page's json-not-paper warning; its segment keeps its visible
// lines, if any.
func rejectNonPapers(segs []*segment, page *Page) []*segment {
	visibleBlocks := false
	for _, s := range segs {
		if s.hasHead() {
			visibleBlocks = true
			break
		}
	}
	out := segs[:0]
	for _, s := range segs {
		if s.json != nil && !s.isPaper(visibleBlocks) {
			page.JSONRejected++
			page.warn(PageWarnJSONNotPaper)
			s.json = nil
			if len(s.lines) == 0 {
				continue
			}
		}
		out = append(out, s)
	}
	return out
}

// isPaper reports whether the segment's JSON object is a paper: paired
// with a visible block, or of the paper shape on a page of JSON alone. A
// block with a visible title but no head (an advert that shows its own
// title) must have the paper shape too.
func (s *segment) isPaper(visibleBlocks bool) bool {
	switch {
	case s.hasHead():
		return true
	case s.showsItsJSON():
		return s.json.paperShape()
	}
	return !visibleBlocks && s.json.paperShape()
}

// showsItsJSON reports whether the segment's visible lines pair with its
// JSON object: a head (the segmenter let the object in only if the head
// does not name another paper), or a line showing its title, authors or
// abstract.
func (s *segment) showsItsJSON() bool {
	if s.hasHead() || s.hasTitleFor(s.json) {
		return true
	}
	for _, l := range s.lines {
		if l.kind == kindText && (matchAuthors(l.text, s.json) || matchAbstract(l.text, s.json)) {
			return true
		}
	}
	return false
}
