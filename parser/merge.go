package parser

import (
	"math"
	"strings"

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
	for changed := true; changed; {
		changed = false
		for i := 0; i < len(segs); i++ {
			f := segs[i]
			if f.json != nil || len(f.lines) == 0 {
				continue
			}
			prev, next := neighbour(segs, i, -1), neighbour(segs, i, +1)
			if f.peel(prev, next) {
				changed = true
				if len(f.lines) == 0 {
					segs = append(segs[:i], segs[i+1:]...)
					i--
					continue
				}
			}
			to := f.home(prev, next)
			if to == nil {
				continue
			}
			if to == prev {
				prev.lines = append(prev.lines, f.lines...)
				// (a fragment of no text it may have passed stays where it
				// is, for its own turn)
			} else {
				next.lines = append(f.lines[:len(f.lines):len(f.lines)], next.lines...)
				next.jsonAt += len(f.lines)
			}
			segs = append(segs[:i], segs[i+1:]...)
			i--
			changed = true
		}
	}
	return segs
}

// neighbour is the segment with JSON next to segs[i] in direction dir,
// looking past fragments without text (head or citation lines alone),
// or nil.
func neighbour(segs []*segment, i, dir int) *segment {
	for j := i + dir; j >= 0 && j < len(segs); j += dir {
		s := segs[j]
		if s.json != nil {
			return s
		}
		if s.hasText(func(string) bool { return true }) {
			return nil
		}
	}
	return nil
}

// peel moves the text lines at the start of fragment f that show the
// previous block's paper to it, and those at its end that show the next
// block's paper to that one: a block's own lines that its order put
// beyond its JSON or its citation line.
func (f *segment) peel(prev, next *segment) bool {
	moved := false
	if prev != nil {
		for len(f.lines) > 0 && f.lines[0].kind == kindText && shows(f.lines[0].text, prev.json) && !prev.repeats(f.lines[0].text) {
			prev.lines = append(prev.lines, f.lines[0])
			f.lines = f.lines[1:]
			moved = true
		}
	}
	if next != nil {
		for n := len(f.lines); n > 0 && f.lines[n-1].kind == kindText && shows(f.lines[n-1].text, next.json) && !next.repeats(f.lines[n-1].text); n-- {
			next.lines = append([]line{f.lines[n-1]}, next.lines...)
			next.jsonAt++
			f.lines = f.lines[:n-1]
			moved = true
		}
	}
	return moved
}

// home is the neighbour (prev or next, either may be nil) fragment f
// belongs to, or nil.
func (f *segment) home(prev, next *segment) *segment {
	to := f.homeBy(prev, next)
	if to == nil && f.anchored() && !f.hasHead() && !f.titled() && !f.hasText(isTitleLine) {
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

// homeBy is home's judgement by what the fragment shows.
func (f *segment) homeBy(prev, next *segment) *segment {
	sp, sn := f.claim(prev), f.claim(next)
	anyText := f.hasText(func(string) bool { return true })
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
	case sp > 0 || sn > 0:
		if sp > sn && sp > 0 {
			return prev
		}
		if sn > sp && sn > 0 {
			return next
		}
		return nil // shows both as much: leave it
	}
	// It shows neither paper and names no other: lines of no identity.
	if anyText && (f.hasHead() || f.titled() || f.hasText(isTitleLine)) {
		// A text line with a head, or a title line: a block of its own
		// (a paper without JSON).
		return nil
	}
	if anyText && !f.anchored() {
		// Text alone after a block's JSON: the block's when it is a line
		// the block lacks (visible authors that the JSON does not give).
		if prev != nil && sp == 0 && f.fillsNeed(prev) {
			return prev
		}
		return nil
	}
	// Head or citation lines without a DOI (with, perhaps, a stray line
	// that is no title): to the neighbour that lacks them, the one whose
	// impact factor they show first.
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
	for _, s := range []*segment{prev, next} {
		if s == prev && fits(s, sp) && f.impactOf(s.json) || s == next && fits(s, sn) && f.impactOf(s.json) {
			return s
		}
	}
	if kinds[kindCitation] && !kinds[kindImpact] && !kinds[kindMeta] {
		// A citation line ends its block in the site's order.
		if fits(prev, sp) {
			return prev
		}
		if fits(next, sn) {
			return next
		}
		return nil
	}
	if fits(next, sn) {
		return next
	}
	if fits(prev, sp) {
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
		pd := strings.TrimSpace(p.DOI)
		if pd == "" {
			pd = doiFromURL(p.DOIURL)
		}
		if pd != "" && record.DOIKey(d) != record.DOIKey(pd) {
			return -1
		}
		if pd != "" {
			score += 4
		}
	}
	unshown := false
	for _, l := range f.lines {
		if l.kind != kindText {
			continue
		}
		if s.repeats(l.text) {
			if ok, _, _ := matchTitle(l.text, p); ok {
				return -1 // a second title line: another paper's (Editorial)
			}
			continue // names or abstract shown already: they say nothing
		}
		if ok, _, _ := matchTitle(l.text, p); ok {
			score += 2
			continue
		}
		if matchAuthors(l.text, p) || matchAbstract(l.text, p) {
			score++
			continue
		}
		if !cjkDominant(l.text) {
			unshown = true
		}
	}
	if score == 0 && unshown && f.hasHead() {
		// A head with an English line that is not this paper's: a block
		// of its own.
		return -1
	}
	return score
}

// dedupe merges records of one page that name the same paper (same site
// id, or same DOI): a block the segmenter could not reunite yields two
// records, and one paper is one record. The record made with JSON is
// kept, where the first of them stood, and takes what only the other has.
func dedupe(page *Page, segs []*segment) {
	recs := page.Records
	byID, byDOI := map[string]int{}, map[string]int{}
	out := recs[:0]
	ev := page.evidence
	moved := make([]int, len(recs)) // old index -> new index
	for i := range recs {
		r := recs[i]
		at, dup := -1, false
		if !strings.HasPrefix(r.ID, "title:") {
			at, dup = lookup(byID, r.ID)
		}
		if !dup {
			at, dup = lookup(byDOI, record.DOIKey(r.DOI))
		}
		if !dup {
			moved[i] = len(out)
			ev[len(out)] = ev[i]
			out = append(out, r)
			index(byID, byDOI, r, len(out)-1)
			continue
		}
		moved[i] = at
		out[at] = mergeRecords(out[at], r, ev[i] > ev[at])
		ev[at] = max(ev[at], ev[i])
		index(byID, byDOI, out[at], at)
	}
	for i := range out {
		out[i].Source.Position = i + 1
	}
	page.Records, page.evidence = out, ev[:len(out)]
	for _, s := range segs {
		if s.rec >= 0 {
			s.rec = moved[s.rec]
		}
	}
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

func hasWarning(r record.Record, code string) bool {
	for _, w := range r.Warnings {
		if w == code {
			return true
		}
	}
	return false
}

func appendOnce(ws []string, w string) []string {
	for _, x := range ws {
		if x == w {
			return ws
		}
	}
	return append(ws, w)
}
