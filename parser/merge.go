package parser

import (
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/litcrawl/litcrawl/record"
)

// The segmenter reads lines in page order, and a block whose lines come in
// another order (the head or the citation line before the title, the JSON
// first, the authors anywhere) can leave it in pieces: a fragment without
// JSON beside the block that carries it. reunite puts such fragments back,
// judging by what they show, not by where they stand.

// reunite joins each fragment (a segment without JSON) to the neighbouring
// segment whose JSON it shows, or, when it shows no paper at all, to the
// neighbour that lacks what it holds. A fragment that names another paper
// (another DOI, a title line of its own) is a block of its own and stays.
func reunite(segs []*segment) []*segment {
	// A few passes: a fragment may find its block only once a fragment
	// between them has gone home. Each pass is linear in the segments.
	for pass := 0; pass < reunitePasses; pass++ {
		changed := false
		next := nextWithJSON(segs)
		var prev *segment // the last segment with JSON, if only text-less fragments stand between
		hops := 0
		for i, f := range segs {
			if f.json != nil {
				prev, hops = f, 0
				continue
			}
			if len(f.lines) == 0 {
				continue
			}
			nx := next[i]
			if f.peel(prev, nx) {
				changed = true
			}
			if len(f.lines) > 0 {
				switch to := f.home(prev, nx); {
				case to == nil || len(to.lines)+len(f.lines) > maxBlockLines:
				case to == prev:
					if k := f.tailBlock(prev); k > 0 {
						// Its start is the block's; the rest is a block
						// of its own (without JSON or head).
						prev.lines = append(prev.lines, f.lines[:k]...)
						f.lines = f.lines[k:]
						break
					}
					prev.lines = append(prev.lines, f.lines...)
					f.lines = nil
				default:
					nx.lines = append(f.lines[:len(f.lines):len(f.lines)], nx.lines...)
					nx.jsonAt += len(f.lines)
					f.lines = nil
				}
			}
			switch {
			case len(f.lines) == 0:
				changed = true
			case f.hasAnyText() || hops >= maxHops:
				prev = nil // a block of its own stands between
			default:
				hops++
			}
		}
		out := segs[:0]
		for _, s := range segs {
			if s.json != nil || len(s.lines) > 0 {
				out = append(out, s)
			}
		}
		segs = out
		if !changed {
			break
		}
	}
	return segs
}

const (
	reunitePasses = 4 // passes of reunite
	maxHops       = 4 // text-less fragments a fragment looks past for its block
)

// chineseLine: a line in Chinese that is no title line (which starts
// with its English title): a Chinese abstract, say.
func chineseLine(t string) bool {
	r, _ := utf8.DecodeRuneInString(t)
	return isCJK(r) && cjkDominant(t)
}

// hasKind reports whether the segment has a line of kind k.
func (s *segment) hasKind(k lineKind) bool {
	for _, l := range s.lines {
		if l.kind == k {
			return true
		}
	}
	return false
}

// nextWithJSON gives, for each segment, the next segment with JSON,
// looking past at most maxHops fragments without text (head or citation
// lines alone), or nil.
func nextWithJSON(segs []*segment) []*segment {
	next := make([]*segment, len(segs))
	var nx *segment
	hops := 0
	for i := len(segs) - 1; i >= 0; i-- {
		next[i] = nx
		switch s := segs[i]; {
		case s.json != nil:
			nx, hops = s, 0
		case len(s.lines) == 0:
		case s.hasAnyText() || hops >= maxHops:
			nx = nil
		default:
			hops++
		}
	}
	return next
}

// peel moves the text lines at the start of fragment f that show the
// previous block's paper to it, and those at its end that show the next
// block's paper to that one: a block's own lines that its order put
// beyond its JSON or its citation line.
func (f *segment) peel(prev, next *segment) bool {
	moved := false
	if prev != nil {
		// A head line at the start that is the block's (no DOI, or its
		// DOI), when the block has none of its kind.
		for len(f.lines) > 1 && (f.lines[0].kind == kindImpact || f.lines[0].kind == kindMeta) &&
			(f.lines[0].head.doi == "" || record.DOIKey(f.lines[0].head.doi) == prev.json.doiKey()) && !prev.hasKind(f.lines[0].kind) {
			prev.lines = append(prev.lines, f.lines[0])
			f.lines = f.lines[1:]
			moved = true
		}
		// Then the lines that show its paper, and the Chinese lines among
		// them (its Chinese abstract), up to the last that shows it.
		k := 0
		for i, l := range f.lines {
			if l.kind != kindText {
				break
			}
			if shows(l.text, prev.json) && !prev.repeats(l.text) {
				k = i + 1
			} else if !chineseLine(l.text) {
				break
			}
		}
		if k > 0 {
			prev.lines = append(prev.lines, f.lines[:k]...)
			f.lines = f.lines[k:]
			moved = true
		}
	}
	if next != nil {
		// The lines at the end that are the next block's: lines that show
		// its paper, a head with its DOI or none (of a kind it lacks), and
		// Chinese lines among them.
		k := len(f.lines)
		for i := len(f.lines) - 1; i >= 0; i-- {
			l := f.lines[i]
			if l.kind == kindText && shows(l.text, next.json) && !next.repeats(l.text) ||
				(l.kind == kindImpact || l.kind == kindMeta) && !next.hasKind(l.kind) &&
					(l.head.doi == "" || record.DOIKey(l.head.doi) == next.json.doiKey()) {
				k = i
			} else if l.kind != kindText || !chineseLine(l.text) {
				break
			}
		}
		if k < len(f.lines) && k > 0 && f.hasAnyText() {
			tail := f.lines[k:len(f.lines):len(f.lines)]
			next.lines = append(tail, next.lines...)
			next.jsonAt += len(tail)
			f.lines = f.lines[:k]
			moved = true
		}
	}
	return moved
}

// home is the neighbour (prev or next, either may be nil) fragment f
// belongs to, or nil.
func (f *segment) home(prev, next *segment) *segment {
	to := f.homeBy(prev, next)
	if to == nil && f.anchored() && !f.hasHead() && !f.titled() && !f.hasText(isTitleLine) && f.noTitle() {
		// A citation line with text, but neither a head nor a title line:
		// no paper of its own, whatever its place. Rather a neighbour's
		// stray lines than a phantom paper (its "title" a names line).
		if prev != nil {
			return prev
		}
		return next
	}
	return to
}

// tailBlock returns where, in a fragment whose start shows segment s's
// paper, a block of its own starts: at an English line that shows nothing
// of the paper, followed by a citation line, with no line of the paper
// from there on (a block without JSON or head after a shuffled block's
// lines). 0 when there is none.
func (f *segment) tailBlock(s *segment) int {
	p := s.json
	ofPaper := func(l line) bool {
		switch l.kind {
		case kindText:
			return shows(l.text, p)
		case kindImpact, kindMeta:
			return l.head.doi != "" && record.DOIKey(l.head.doi) == p.doiKey()
		}
		return false
	}
	last := -1 // the last line of the paper
	for i, l := range f.lines {
		if ofPaper(l) {
			last = i
		}
	}
	if last < 0 {
		return 0
	}
	for i := last + 1; i < len(f.lines); i++ {
		l := f.lines[i]
		if l.kind != kindText || cjkDominant(l.text) || looksLikeAuthors(l.text) {
			continue
		}
		for _, m := range f.lines[i+1:] {
			if m.kind == kindCitation {
				return i
			}
		}
		return 0
	}
	return 0
}

// namedBlock reports whether the fragment reads as a block of its own
// without head or Chinese title: a title in its title place, then a line
// of names.
func (f *segment) namedBlock() bool {
	i, ok := f.titleCandidate()
	if !ok || f.noTitle() || cjkDominant(f.lines[i].text) {
		return false
	}
	for _, l := range f.lines[i+1:] {
		if l.kind == kindText && looksLikeAuthors(l.text) {
			return true
		}
	}
	return false
}

// noTitle reports whether the line in the fragment's title place is no
// title: a names line or a paragraph (a block without head, JSON or
// Chinese title still shows a title in English).
func (f *segment) noTitle() bool {
	i, ok := f.titleCandidate()
	return !ok || looksLikeAuthors(f.lines[i].text) || looksLikeAbstract(f.lines[i].text) || looksLikeProse(f.lines[i].text)
}

// homeBy is home's judgement by what the fragment shows: the neighbour
// whose paper it shows more (claim), else, for lines of no identity, the
// neighbour that lacks them (homeOfParts).
func (f *segment) homeBy(prev, next *segment) *segment {
	sp, sn := f.claim(prev), f.claim(next)
	anyText := f.hasAnyText()
	switch {
	case sp < 0 && sn < 0 && !anyText && f.hasHead():
		// Head lines alone, naming a DOI that neither neighbour's object
		// has: the head of a neighbour that has none (its JSON disagrees
		// with its visible DOI), heads standing before the JSON.
		for _, s := range []*segment{next, prev} {
			if s != nil && !s.hasHead() {
				return s
			}
		}
		return nil
	case sp < 0 && sn < 0:
		return nil
	case sp > 0 && sp > sn:
		return prev
	case sn > 0 && sn > sp:
		return next
	case sp > 0 || sn > 0:
		return nil // shows both as much: leave it
	}
	// It shows neither paper and names no other: lines of no identity.
	latin := f.hasText(func(t string) bool { return !cjkDominant(t) })
	switch {
	case anyText && (f.hasHead() && latin || f.titled() || f.hasText(isTitleLine) || f.anchored() && f.namedBlock()):
		// An English line with a head, or a title line, or a title in
		// English and a names line before a citation line: a block of its
		// own (a paper without JSON). A head with Chinese text alone (an
		// abstract) has no title: it is a shuffled block's.
		return nil
	case anyText && !f.anchored():
		// Text alone after a block's JSON: the block's when it is a line
		// the block lacks (visible authors that the JSON does not give).
		if prev != nil && sp == 0 && f.fillsNeed(prev) {
			return prev
		}
		return nil
	}
	return f.homeOfParts(prev, next, sp, sn)
}

// homeOfParts places head or citation lines without a DOI (with, perhaps,
// a stray line that is no title): to the neighbour that lacks them, the
// one whose impact factor they show first; a citation line alone ends its
// block in the site's order (the previous).
func (f *segment) homeOfParts(prev, next *segment, sp, sn int) *segment {
	var kinds [kindJSON + 1]bool
	for _, l := range f.lines {
		kinds[l.kind] = l.kind != kindText
	}
	fits := func(s *segment, c int) bool {
		if s == nil || c < 0 {
			return false
		}
		for _, l := range s.lines {
			if kinds[l.kind] {
				return false
			}
		}
		return true
	}
	okPrev, okNext := fits(prev, sp), fits(next, sn)
	switch {
	case okPrev && f.impactOf(prev.json):
		return prev
	case okNext && f.impactOf(next.json):
		return next
	case kinds[kindCitation] && !kinds[kindImpact] && !kinds[kindMeta] && okPrev:
		return prev
	case kinds[kindCitation] && !kinds[kindImpact] && !kinds[kindMeta] && okNext:
		return next
	case kinds[kindCitation] && !kinds[kindImpact] && !kinds[kindMeta]:
		return nil
	case okNext:
		return next
	case okPrev:
		return prev
	}
	return nil
}

// fillsNeed reports whether text fragment f holds the authors line that
// segment s lacks: its JSON gives no authors and no line of it reads like
// names.
func (f *segment) fillsNeed(s *segment) bool {
	return len(s.json.authorList()) == 0 && !s.hasText(looksLikeAuthors) && f.hasText(looksLikeAuthors)
}

// impactOf reports whether f shows the impact factor of paper p.
func (f *segment) impactOf(p *paperJSON) bool {
	for _, l := range f.lines {
		if l.head != nil && l.head.hasImpact && p.PeriodicalIF > 0 && math.Abs(l.head.impact-float64(p.PeriodicalIF)) <= 0.05 {
			return true
		}
	}
	return false
}

// claim scores how much fragment f shows of the paper of segment s: -1
// when it names another paper (another DOI; a title line of its own beside
// a head), 0 when it shows nothing of it, more for a DOI (4), the title
// (2), the authors or abstract (1 each).
func (f *segment) claim(s *segment) int {
	if s == nil {
		return -1
	}
	p := s.json
	score := 0
	if d := f.headDOI(); d != "" {
		pd, own := p.doiKey(), s.headDOI()
		if pd != "" && record.DOIKey(d) != pd || pd == "" && own != "" && record.DOIKey(d) != record.DOIKey(own) {
			return -1 // another DOI than the paper's (or, its JSON giving none, than its block shows)
		}
		if pd != "" {
			score += 4
		}
	}
	if f.ownBlock(s) {
		return -1
	}
	shown, unshown := f.linesShown(s)
	switch {
	case shown < 0:
		return -1
	case score+shown == 0 && unshown && f.hasHead():
		// A head with an English line that is not this paper's: a block
		// of its own.
		return -1
	}
	return score + shown
}

// ownBlock: fragment f is a block of its own beside segment s: a title
// line of its own beside a block that has its title, or a line in the
// title's place before a head of its own (without the paper's DOI, or of
// a kind the block has already) that is not this paper's (a paper without
// JSON in the site's order), whatever else it shares with s (boilerplate
// abstract, the same names, the DOI its JSON gives).
func (f *segment) ownBlock(s *segment) bool {
	p := s.json
	doiMatch := f.headDOI() != "" && record.DOIKey(f.headDOI()) == p.doiKey()
	if s.hasTitleFor(p) && !doiMatch && f.hasText(func(t string) bool { return isTitleLine(t) && !shows(t, p) }) {
		return true
	}
	secondHead := false
	for _, l := range f.lines {
		if (l.kind == kindImpact || l.kind == kindMeta) && s.hasKind(l.kind) {
			secondHead = true
		}
	}
	ti, ok := f.titleCandidate()
	return ok && f.hasHead() && !shows(f.lines[ti].text, p) && !chineseLine(f.lines[ti].text) && (secondHead || !doiMatch)
}

// linesShown scores the text lines of f that show s's paper: its title 2,
// its authors or abstract 1 (-1: a second title line, another paper's:
// Editorial); unshown says an English line shows nothing of it.
func (f *segment) linesShown(s *segment) (score int, unshown bool) {
	p := s.json
	for _, l := range f.lines {
		if l.kind != kindText {
			continue
		}
		titled, _, _ := matchTitle(l.text, p)
		switch {
		case s.repeats(l.text) && titled:
			return -1, unshown
		case s.repeats(l.text):
			// names or abstract shown already: they say nothing
		case titled:
			score += 2
		case matchAuthors(l.text, p) || matchAbstract(l.text, p):
			score++
		case !cjkDominant(l.text):
			unshown = true
		}
	}
	return score, unshown
}

// dedupe merges records of one page that name the same paper (same site
// id, or same DOI): a block the segmenter could not reunite yields two
// records, and one paper is one record. The record made with JSON is
// kept, where the first of them stood, and takes what only the other has.
func dedupe(page *Page, segs []*segment) {
	recs := page.Records
	byID, byDOI := map[string]int{}, map[string]int{}
	out := recs[:0]
	ev, fl := page.evidence, page.fromLines
	moved := make([]int, len(recs)) // old index -> new index
	for i := range recs {
		r := recs[i]
		at, dup := -1, false
		if !strings.HasPrefix(r.ID, "title:") && !strings.HasPrefix(r.ID, "doi:") {
			at, dup = lookup(byID, r.ID) // (a "doi:" id is its DOI: below)
		}
		if !dup {
			at, dup = lookup(byDOI, record.DOIKey(r.DOI))
			if dup && !onePaper(out[at], r) && !unvouched(out[at], r, ev[at], ev[i]) {
				// Two papers (two titles) give one DOI: both stay, and
				// the DOI stays with the one without JSON (the DOI is
				// its identity), else the first. (An object that no
				// visible line vouches for, beside one that some do, is
				// no paper of its own: merged, as a copy.)
				if !hasWarning(out[at], record.WarnNoJSON) && hasWarning(r, record.WarnNoJSON) {
					out[at] = dropDOI(out[at])
					delete(byDOI, record.DOIKey(r.DOI))
					index(byID, byDOI, out[at], at)
				} else {
					r = dropDOI(r)
				}
				dup = false
			}
		}
		if !dup {
			moved[i] = len(out)
			ev[len(out)], fl[len(out)] = ev[i], fl[i]
			out = append(out, r)
			index(byID, byDOI, r, len(out)-1)
			continue
		}
		moved[i] = at
		if a := out[at]; a.ID == r.ID && (!sameTitleOrNone(a.Title, r.Title) || a.DOI != "" && r.DOI != "" && record.DOIKey(a.DOI) != record.DOIKey(r.DOI)) {
			// One site id, two titles or two DOIs: one of them is not the
			// paper the id names; merged as the site says, but flagged.
			page.dupIDs = append(page.dupIDs, r.ID)
		}
		out[at] = mergeRecords(out[at], r, ev[i] > ev[at])
		ev[at] = max(ev[at], ev[i])
		fl[at] |= fl[i] // (a merged record may take fields of either)
		index(byID, byDOI, out[at], at)
	}
	for i := range out {
		out[i].Source.Position = i + 1
	}
	page.Records, page.evidence, page.fromLines = out, ev[:len(out)], fl[:len(out)]
	for _, s := range segs {
		if s.rec >= 0 {
			s.rec = moved[s.rec]
		}
	}
}

// unvouched reports whether, of two records with JSON, one is an object
// that no visible line vouches for (evidence 0 or less) beside one that
// some do: a copy (an advert that took a paper's DOI), not a paper.
func unvouched(a, b record.Record, evA, evB int) bool {
	if hasWarning(a, record.WarnNoJSON) || hasWarning(b, record.WarnNoJSON) {
		return false
	}
	return evA <= 0 && evB > 0 || evB <= 0 && evA > 0
}

// onePaper reports whether two records that give one DOI are one paper:
// their titles agree (or one has none), and they do not differ in what
// tells papers apart: two site ids, two author lists, two dates.
func onePaper(a, b record.Record) bool {
	siteID := func(r record.Record) bool {
		return !strings.HasPrefix(r.ID, "doi:") && !strings.HasPrefix(r.ID, "title:")
	}
	switch {
	case !sameTitleOrNone(a.Title, b.Title):
		return false
	case siteID(a) && siteID(b) && a.ID != b.ID:
		return false
	case len(a.Authors) > 0 && len(b.Authors) > 0 && !slices.Equal(a.Authors, b.Authors):
		return false
	case a.Published != "" && b.Published != "" && a.Published != b.Published:
		return false
	}
	return true
}

// sameTitleOrNone: two titles of one paper (equal but for case, spaces
// and a final full stop), or one missing.
func sameTitleOrNone(a, b string) bool {
	return a == "" || b == "" || foldKey(strings.TrimRight(a, ".。 ")) == foldKey(strings.TrimRight(b, ".。 "))
}

// dropDOI takes the DOI (and what derives from it) off a record whose DOI
// another paper of the page has, with warning doi-conflict; a record known
// by its DOI alone is then known by its title.
func dropDOI(r record.Record) record.Record {
	r.DOI, r.DOIURL, r.SiteDOI, r.ArxivID, r.URL = "", "", "", "", ""
	if strings.HasPrefix(r.ID, "doi:") {
		r.ID = record.TitleID(r.Title, r.Published)
	}
	r.AddWarning(record.WarnDOIConflict)
	return r
}

func lookup(m map[string]int, k string) (int, bool) {
	if k == "" {
		return -1, false
	}
	i, ok := m[k]
	return i, ok
}

func index(byID, byDOI map[string]int, r record.Record, i int) {
	if !strings.HasPrefix(r.ID, "title:") {
		byID[r.ID] = i
	}
	if k := record.DOIKey(r.DOI); k != "" {
		byDOI[k] = i
	}
}

// mergeRecords merges two records of one paper, a before b on the page:
// the one made with JSON is the base (of two with JSON, the one whose
// visible lines vouch for it more, bBetter, else the first), and takes
// the fields it lacks from the other, at the place of the first. An object
// that no visible line shows (an advert that copies a paper's DOI) thus
// never stands for the paper. Warnings are the union.
func mergeRecords(a, b record.Record, bBetter bool) record.Record {
	base, other := a, b
	aJSON, bJSON := !hasWarning(a, record.WarnNoJSON), !hasWarning(b, record.WarnNoJSON)
	if bJSON && (!aJSON || bBetter) {
		base, other = b, a
		base.Source = a.Source // where the first stood
	}
	fill := func(dst *string, src string) {
		if *dst == "" {
			*dst = src
		}
	}
	fill(&base.DOI, other.DOI)
	fill(&base.DOIURL, other.DOIURL)
	fill(&base.SiteDOI, other.SiteDOI)
	fill(&base.ArxivID, other.ArxivID)
	fill(&base.URL, other.URL)
	fill(&base.Title, other.Title)
	fill(&base.TitleCN, other.TitleCN)
	fill(&base.Abstract, other.Abstract)
	fill(&base.AbstractCN, other.AbstractCN)
	fill(&base.Published, other.Published)
	fill(&base.Subject, other.Subject)
	fill(&base.JCRQuartile, other.JCRQuartile)
	fill(&base.JCRCategory, other.JCRCategory)
	fill(&base.OpenAccessPDF, other.OpenAccessPDF)
	fill(&base.PublicationType, other.PublicationType)
	if base.Authors == nil {
		base.Authors = other.Authors
	}
	if base.ImpactFactor == 0 {
		base.ImpactFactor = other.ImpactFactor
	}
	if base.Zone == 0 {
		base.Zone = other.Zone
	}
	if base.Citations == nil {
		base.Citations = other.Citations
	}
	if base.Journal == nil {
		base.Journal = other.Journal
	} else if other.Journal != nil {
		j := *base.Journal
		fill(&j.Name, other.Journal.Name)
		fill(&j.Volume, other.Journal.Volume)
		fill(&j.Issue, other.Journal.Issue)
		fill(&j.Pages, other.Journal.Pages)
		if j.ID == 0 {
			j.ID = other.Journal.ID
		}
		base.Journal = &j
	}
	var warnings []string
	for _, w := range append(append([]string(nil), base.Warnings...), other.Warnings...) {
		if w == record.WarnNoJSON && !(hasWarning(base, w) && hasWarning(other, w)) {
			continue // one of them had JSON
		}
		if w == record.WarnNoTitle && base.Title != "" {
			continue
		}
		warnings = appendOnce(warnings, w)
	}
	base.Warnings = warnings
	return base
}

func appendOnce(ws []string, w string) []string {
	for _, x := range ws {
		if x == w {
			return ws
		}
	}
	return append(ws, w)
}
