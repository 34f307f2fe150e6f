package parser

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/litcrawl/litcrawl/record"
)

// paperJSON holds the fields of the site's embedded paper object that the
// parser uses. Types are lenient: the site is not consistent about numbers
// versus strings, and a field of an unexpected type is dropped (with
// warning json-odd-types) instead of rejecting the whole object.
type paperJSON struct {
	Title           string      `json:"title"`
	Authors         nameList    `json:"authors"`
	DOI             string      `json:"doi"`
	DOIURL          string      `json:"DOIUrl"`
	Abstract        string      `json:"abstract"`
	PeriodicalID    flexInt     `json:"PeriodicalId"`
	Journal         *journalObj `json:"journal"`
	PeriodicalIF    flexFloat   `json:"PeriodicalIF"`
	PublicationDate string      `json:"publicationDate"`
	PublicationType flexString  `json:"publicationTypes"`
	OpenAccessPDF   string      `json:"openAccessPdf"`
	CitationCount   *flexInt    `json:"citationCount"`
	PaperID         flexString  `json:"paperid"`
	PeriodicalName  string      `json:"PeriodicalName"`
	RegionNum       flexInt     `json:"RegionNum"`
	RegionCategory  string      `json:"RegionCategory"`
	TitleCN         string      `json:"TitleCN"`
	AbstractTextCN  string      `json:"AbstractTextCN"`
	JCR             string      `json:"JCR"`
	JCRName         string      `json:"JCRName"`

	// Set by the extractor, not by the JSON.
	// abstractRaw is the abstract's JSON string literal, quotes included,
	// when the one-pass decoder read it; Abstract is then decoded on demand
	// (abstractText).
	abstractRaw string

	truncated bool // the object was cut off; only complete fields are set
	oddTypes  bool // some field had an unexpected type and was ignored

	// Plain-text forms, computed once: every visible line of a block is
	// matched against them.
	plain struct {
		done            bool
		title, abstract string
		authors         []string
	}
}

func (p *paperJSON) texts() {
	if !p.plain.done {
		p.plain.done = true
		p.plain.title = plainText(p.Title)
		if p.abstractRaw != "" {
			p.plain.abstract = collapseJSONString(p.abstractRaw)
			if strings.IndexByte(p.plain.abstract, '<') >= 0 || strings.IndexByte(p.plain.abstract, '&') >= 0 {
				p.plain.abstract = plainText(p.abstractText()) // markup to strip
			}
		} else {
			p.plain.abstract = plainText(p.Abstract)
		}
		p.plain.authors = splitAuthors(string(p.Authors))
	}
}

// abstractText is the abstract as the JSON gives it (decoded, not plain).
func (p *paperJSON) abstractText() string {
	if p.Abstract == "" && p.abstractRaw != "" {
		d := jdec{b: p.abstractRaw}
		p.Abstract, _ = d.str()
	}
	return p.Abstract
}

// doiKey is the object's DOI (from doi, else DOIUrl) in its identity form.
func (p *paperJSON) doiKey() string {
	d := strings.TrimSpace(p.DOI)
	if d == "" {
		d = doiFromURL(p.DOIURL)
	}
	return record.DOIKey(d)
}

// plainTitle is the title as plain text.
func (p *paperJSON) plainTitle() string { p.texts(); return p.plain.title }

// plainAbstract is the abstract as plain text.
func (p *paperJSON) plainAbstract() string { p.texts(); return p.plain.abstract }

// authorList is the authors string split into names.
func (p *paperJSON) authorList() []string { p.texts(); return p.plain.authors }

type journalObj struct {
	Name   string     `json:"name"`
	Volume flexString `json:"volume"`
	Pages  flexString `json:"pages"`
}

// paperShape reports whether the object, seen alone, has the shape of a
// paper: a title and at least two of DOI, paper id, authors, publication
// date and journal.
func (p *paperJSON) paperShape() bool {
	if strings.TrimSpace(p.Title) == "" {
		return false
	}
	n := 0
	for _, has := range []bool{
		strings.TrimSpace(p.DOI) != "" || strings.TrimSpace(p.DOIURL) != "",
		strings.TrimSpace(string(p.PaperID)) != "",
		strings.TrimSpace(string(p.Authors)) != "",
		strings.TrimSpace(p.PublicationDate) != "",
		p.Journal != nil && strings.TrimSpace(p.Journal.Name) != "" || strings.TrimSpace(p.PeriodicalName) != "" || p.PeriodicalID > 0,
	} {
		if has {
			n++
		}
	}
	return n >= 2
}

// nameList is the authors: a JSON string as the site writes it, or a list
// of names, read as the names joined with ", ". Anything else is a type
// error (json-odd-types).
type nameList string

func (n *nameList) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*n = nameList(s)
		return nil
	}
	var names []string
	if err := json.Unmarshal(b, &names); err != nil {
		return &json.UnmarshalTypeError{Value: "authors " + string(b[:min(len(b), 1)])}
	}
	*n = nameList(strings.Join(names, ", "))
	return nil
}

// isPaper reports whether the object is paper metadata rather than some other
// JSON with a title key (site configuration, analytics, …).
func (p *paperJSON) isPaper() bool {
	if strings.TrimSpace(p.Title) == "" {
		return false
	}
	return strings.TrimSpace(string(p.PaperID)) != "" || strings.TrimSpace(p.DOI) != ""
}

// flexString accepts a JSON string, number or bool; arrays of strings are
// joined with ", ". null leaves it empty.
type flexString string

func (f *flexString) UnmarshalJSON(b []byte) error { return f.fromJSON(string(b)) }

func (f *flexString) fromJSON(b string) error {
	b = strings.TrimSpace(b)
	if len(b) == 0 || b == "null" {
		return nil
	}
	switch b[0] {
	case '"':
		d := jdec{b: b}
		s, ok := d.str()
		if !ok {
			return &json.UnmarshalTypeError{Value: "string"}
		}
		*f = flexString(s)
	case '[':
		var ss []string
		if err := json.Unmarshal([]byte(b), &ss); err != nil {
			return &json.UnmarshalTypeError{Value: "array", Type: nil}
		}
		*f = flexString(strings.Join(ss, ", "))
	case '{':
		return &json.UnmarshalTypeError{Value: "object"}
	default:
		*f = flexString(b)
	}
	return nil
}

// flexInt accepts a JSON number or a numeric string.
type flexInt int64

func (f *flexInt) UnmarshalJSON(b []byte) error { return f.fromJSON(string(b)) }

func (f *flexInt) fromJSON(b string) error {
	s := strings.Trim(strings.TrimSpace(b), `"`)
	if s == "" || s == "null" {
		return nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		fl, ferr := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if ferr != nil || fl != float64(int64(fl)) {
			return &json.UnmarshalTypeError{Value: "number " + s}
		}
		n = int64(fl)
	}
	*f = flexInt(n)
	return nil
}

// flexFloat accepts a JSON number or a numeric string.
type flexFloat float64

func (f *flexFloat) UnmarshalJSON(b []byte) error { return f.fromJSON(string(b)) }

func (f *flexFloat) fromJSON(b string) error {
	s := strings.Trim(strings.TrimSpace(b), `"`)
	if s == "" || s == "null" {
		return nil
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		// "NaN" and "Infinity" parse, but no record can carry them.
		return &json.UnmarshalTypeError{Value: "number " + s}
	}
	*f = flexFloat(v)
	return nil
}

// salvageJournal reads the complete fields of a journal object that was
// cut off, or nil when none was complete.
func salvageJournal(b []byte) *journalObj {
	j := &journalObj{}
	salvageFields(b, map[string]any{"name": &j.Name, "volume": &j.Volume, "pages": &j.Pages}, nil)
	if *j == (journalObj{}) {
		return nil
	}
	return j
}

// salvagePaper reads the complete top-level fields of a JSON object that was
// cut off. It never fails; it returns what it could read.
func salvagePaper(b []byte) *paperJSON {
	p := &paperJSON{truncated: true}
	fields := map[string]any{
		"title": &p.Title, "authors": &p.Authors, "doi": &p.DOI, "DOIUrl": &p.DOIURL,
		"abstract": &p.Abstract, "PeriodicalId": &p.PeriodicalID, "journal": &p.Journal,
		"PeriodicalIF": &p.PeriodicalIF, "publicationDate": &p.PublicationDate,
		"publicationTypes": &p.PublicationType, "openAccessPdf": &p.OpenAccessPDF,
		"paperid": &p.PaperID, "PeriodicalName": &p.PeriodicalName, "RegionNum": &p.RegionNum,
		"RegionCategory": &p.RegionCategory, "JCR": &p.JCR, "JCRName": &p.JCRName,
	}
	p.oddTypes = salvageFields(b, fields, func(key string, rest []byte) {
		switch {
		case key == "journal" && len(rest) > 0 && rest[0] == '{':
			p.Journal = salvageJournal(rest) // cut inside the nested object
		case key == "abstract":
			// Cut inside the abstract: the text it kept is the abstract,
			// cut (the record says text-truncated, as for a visible one).
			p.Abstract = cutString(rest)
		}
	})
	return p
}

// cutString decodes a JSON string the end of the input cut (`"We study
// gra`): the text up to the cut, less an escape or a word the cut split
// (a word is dropped only when the text keeps others), or "".
func cutString(rest []byte) string {
	if len(rest) < 2 || rest[0] != '"' {
		return ""
	}
	b := rest
	if i := bytes.LastIndexByte(b, '\\'); i >= 0 && len(b)-i < 6 {
		b = b[:i] // a cut escape (\u00, \)
	}
	var out string
	if json.Unmarshal(append(append([]byte{}, b...), '"'), &out) != nil {
		return ""
	}
	if i := strings.LastIndexAny(out, " \u00a0"); i > 0 && !endsSentence(out) {
		out = out[:i] // the word the cut split
	}
	return strings.TrimSpace(out)
}

// salvageFields decodes the complete top-level fields of the cut-off
// object b into fields (by key), and calls cut, if not nil, with the key
// whose value the end of b cut and the text of that value. odd is true
// when a field had a wrong type (it is left empty).
func salvageFields(b []byte, fields map[string]any, cut func(key string, rest []byte)) (odd bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return odd
		}
		key, _ := kt.(string)
		at := dec.InputOffset()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if cut != nil {
				cut(key, bytes.TrimLeft(b[at:], " \t\r\n:"))
			}
			return odd
		}
		if dst, ok := fields[key]; ok && json.Unmarshal(raw, dst) != nil {
			odd = true
		}
	}
	return odd
}
