package parser

// The end of a capture. A capture may stop anywhere: inside a JSON object,
// inside its last block's visible text (on a sentence's end too), or after
// a whole block, inside the next one's first lines. One policy for every
// layout, decided here, between segmenting and assembling:
//
//   - A block the capture cut is kept: its record gets the warning
//     text-truncated, and the lines it has kept are read as its fields (a
//     short cut Chinese abstract is its Chinese abstract).
//   - The start of a next block, cut before it names its paper (a title
//     cut mid-word, a title and a ranking line), is no paper and no
//     finding: the page gets the warning text-truncated.
//
// A block is whole when it reaches the part its page's blocks close with:
// the JSON object where every other block of the page has one, the
// citation line where every other has one. A page without such parts (no
// JSON, no citation lines) is cut when its last line stops mid-sentence.
// (One that stops at its date/DOI line where every other block goes on
// past it is not: blocks that lead with names or an abstract, the first
// shown without them, read the same way shifted by one, and its missing
// names alarm.)
// A footer after the last block says the page is whole.

// readEnding decides where the capture ends: it marks the last paper's
// block cutEnd when the capture cut it, and the pieces after it cutNext
// when they are a next block cut off; it sets page.cut when either is so.
// Pieces after a cut block that belong to it (its cut Chinese abstract,
// split off by the segmenter) join it.
func readEnding(segs []*segment, page *Page) []*segment {
	last := -1
	for i, s := range segs {
		if s.named() {
			last = i
		}
	}
	if last < 0 {
		return segs
	}
	tail := segs[last+1:]
	if footerBelow(segs[last:], page.footerRaw) || !smallTail(tail) {
		return segs
	}
	b := segs[last]
	whole, known := closes(segs, last)
	if !known {
		// Cut bytes (an HTML page without its end), or a last line that
		// stops mid-sentence, say the block may be cut. (A block that
		// stops at its date/DOI line cannot be told from one shown
		// without names, or from blocks read shifted by one: it stays
		// whole, and what it lacks alarms.)
		whole = !page.cut && !endsMidSentence(b)
	}
	if whole {
		page.lastWhole = true
		for _, t := range tail {
			t.cutNext = true
		}
		if len(tail) > 0 {
			page.cut = true
		}
		return segs
	}
	for _, t := range tail {
		b.lines = append(b.lines, t.lines...)
	}
	b.cutEnd, page.cut = true, true
	return segs[:last+1]
}

// named: the segment can name a paper (its JSON, or a visible DOI, date
// or site id): a piece without one is no paper.
func (s *segment) named() bool {
	if s.json != nil {
		return true
	}
	for _, l := range s.lines {
		if h := l.head; h != nil && (h.doi != "" || h.published != "" || h.paperID != "") {
			return true
		}
	}
	return false
}

// footerBelow: the page's footer came after every line of segs.
func footerBelow(segs []*segment, footer int32) bool {
	if footer < 0 {
		return false
	}
	for _, s := range segs {
		if s.json != nil && s.jsonRaw >= footer {
			return false
		}
		for _, l := range s.lines {
			if l.raw >= footer {
				return false
			}
		}
	}
	return true
}

// smallTail: the pieces after the last paper are what a block's start
// shows before the cut: a title line, a ranking line, and at most one
// more line that is neither names nor prose (a Chinese title on a line of
// its own). A piece with names or an abstract is a block read whole that
// names no paper: its lines are no paper's, and a finding.
func smallTail(tail []*segment) bool {
	text := 0
	for _, t := range tail {
		for _, l := range t.lines {
			switch {
			case l.kind == kindCitation || l.kind == kindMeta:
				return false
			case l.kind != kindText:
			case looksLikeAuthors(l.text) || looksLikeNameList(l.text) || looksLikeProse(l.text) || endsSentence(l.text) && len(l.text) > 80:
				return false
			default:
				text++
			}
		}
	}
	return text <= 2
}

// closes reports whether segs[i] is whole: known false when it lacks the
// part every other paper block of the page has (its JSON, its citation
// line), known true when it ends with such a part (a complete JSON object,
// or a citation line, after every other line of it). Otherwise the
// question has no answer from the page's parts.
func closes(segs []*segment, i int) (whole, known bool) {
	others, withJSON, withCite := 0, 0, 0
	for k, s := range segs {
		if k == i || !s.named() {
			continue
		}
		others++
		if s.json != nil {
			withJSON++
		}
		if s.hasKind(kindCitation) {
			withCite++
		}
	}
	b := segs[i]
	switch {
	case others > 0 && withJSON == others && b.json == nil:
		return false, true
	case closedAtEnd(b):
		return true, true
	case textBeforeFirst(segs):
		// Text no block took stands before the first block: blocks may
		// lead with what was read as the previous block's end (names
		// before the title), and what the last block lacks is that
		// misreading's, for the page's findings to show.
		return false, false
	case others > 0 && withCite == others && !b.hasKind(kindCitation):
		return false, true
	}
	return false, false
}

// textBeforeFirst: a piece before the page's first named block holds text.
func textBeforeFirst(segs []*segment) bool {
	for _, s := range segs {
		if s.named() {
			return false
		}
		if s.hasKind(kindText) {
			return true
		}
	}
	return false
}

// closedAtEnd: the block ends with a closing part: its citation line, or
// its complete JSON object with nothing but a citation line after it.
func closedAtEnd(s *segment) bool {
	if n := len(s.lines); n > 0 && s.lines[n-1].kind == kindCitation {
		return true
	}
	if s.json == nil || s.json.truncated {
		return false
	}
	for _, l := range s.lines[min(s.jsonAt, len(s.lines)):] {
		if l.kind != kindCitation {
			return false
		}
	}
	return true
}

// endsMidSentence: the block's last line is text that stops as no
// sentence does.
func endsMidSentence(s *segment) bool {
	if s.json != nil && s.jsonAt >= len(s.lines) || len(s.lines) == 0 {
		return false
	}
	l := s.lines[len(s.lines)-1]
	return l.kind == kindText && !endsSentence(l.text)
}
