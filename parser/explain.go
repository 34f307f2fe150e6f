package parser

import (
	"slices"
	"strings"
	"time"
)

// Explained is what one visible line of a page was taken for, for
// crawl parse --explain: a person reads why a page gave what it gave.
type Explained struct {
	// Line is the line's number among the page's visible lines (from 1).
	Line int    `json:"line"`
	Text string `json:"text"`
	// Kind is what the line is by itself: furniture, heading, title,
	// impact line, date/DOI line, citation line, JSON object, text.
	Kind string `json:"kind"`
	// Paper is the position of the record the line went into; 0 for none.
	Paper int `json:"paper,omitempty"`
	// Taken is the field the line gave, or why it gave none.
	Taken string `json:"taken"`
}

// Explanation is a page's parse, line by line, with its findings.
type Explanation struct {
	Page     *Page
	Lines    []Explained
	Findings []Finding
}

// Explain parses a page as Parse does and says, for each visible line,
// what it was taken for: which paper and field, furniture, or nothing
// (and why a block gave no paper).
func Explain(data []byte, opts Options) (*Explanation, error) {
	defer admit(len(data))()
	lines, page, err := readLines(data, opts, true)
	if err != nil {
		return nil, err
	}
	jsonLines := slices.DeleteFunc(slices.Clone(lines), func(l line) bool { return l.kind != kindJSON })
	segs := parseLines(lines, page, opts) // (which reuses lines)
	for _, s := range segs {
		var r *recordView
		if s.rec >= 0 && s.rec < len(page.Records) {
			r = &recordView{pos: s.rec + 1, json: s.json != nil, title: page.Records[s.rec].Title, titleCN: page.Records[s.rec].TitleCN,
				authors: page.Records[s.rec].Authors, abstract: page.Records[s.rec].Abstract, abstractCN: page.Records[s.rec].AbstractCN}
		}
		why := ""
		switch {
		case r != nil:
		case !s.anchored():
			why = "no paper: a piece with no title, head, citation line or JSON"
		default:
			why = "no paper: no title, DOI or site id"
		}
		for i := range s.lines {
			l := &s.lines[i]
			e := page.explainSet(int(l.raw), l.text, kindName(l), why)
			if r != nil {
				e.Paper, e.Taken = r.pos, r.field(l)
			}
		}
		if s.json != nil {
			e := page.explainSet(int(s.jsonRaw), "{"+s.json.plainTitle()+" …}", "JSON object", why)
			if r != nil {
				e.Paper, e.Taken = r.pos, "the paper's JSON"
			}
		}
	}
	for _, l := range jsonLines {
		if _, ok := page.explained[int(l.raw)]; !ok && l.kind == kindJSON {
			page.explainSet(int(l.raw), "{"+l.objects()[0].plainTitle()+" …}", "JSON object", "no paper: not a paper's object, or merged into another")
		}
	}
	ex := &Explanation{Page: page, Findings: page.Findings(time.Now())}
	for _, e := range page.explained {
		ex.Lines = append(ex.Lines, *e)
	}
	slices.SortFunc(ex.Lines, func(a, b Explained) int { return a.Line - b.Line })
	page.explained = nil
	return ex, nil
}

// explainSet records what raw line ri was taken for, when explaining.
func (p *Page) explainSet(ri int, text, kind, taken string) *Explained {
	if p.explained == nil {
		return nil // not explaining: nothing kept (and nothing allocated)
	}
	e := p.explained[ri]
	if e == nil {
		e = &Explained{Line: ri + 1, Text: cutValue(text)}
		p.explained[ri] = e
	}
	e.Kind, e.Taken = kind, taken
	return e
}

func kindName(l *line) string {
	switch l.kind {
	case kindImpact:
		return "impact line"
	case kindMeta:
		return "date/DOI line"
	case kindCitation:
		return "citation line"
	case kindJSON:
		return "JSON object"
	case kindNoise:
		return "furniture"
	case kindHeading:
		return "heading"
	}
	if l.strong() {
		return "title"
	}
	return "text"
}

// recordView is what a record's fields say of its lines.
type recordView struct {
	pos                                  int
	json                                 bool // made with the block's JSON
	title, titleCN, abstract, abstractCN string
	authors                              []string
}

// field names the field a line of the record's block gave.
func (r *recordView) field(l *line) string {
	switch l.kind {
	case kindImpact:
		if l.head.published != "" || l.head.doi != "" {
			return "ranking, date, DOI"
		}
		return "ranking: impact factor, zone, subject, JCR"
	case kindMeta:
		return "date, DOI"
	case kindCitation:
		return "citations"
	}
	t := l.text
	switch {
	case r.title != "" && strings.HasPrefix(strings.ToLower(t), strings.ToLower(strings.TrimRight(r.title, "."))):
		if r.titleCN != "" && strings.Contains(t, r.titleCN) {
			return "title, title_cn"
		}
		return "title"
	case r.titleCN != "" && t == r.titleCN:
		return "title_cn"
	case r.abstract != "" && t == r.abstract:
		return "abstract"
	case r.abstractCN != "" && t == r.abstractCN:
		return "abstract_cn"
	case len(r.authors) > 0 && slices.Equal(splitAuthors(t), r.authors):
		return "authors"
	}
	if r.json {
		return "shown; the JSON gives the field"
	}
	return "no field: not read"
}
