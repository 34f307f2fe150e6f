package parser

import (
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// decodePaper decodes one complete JSON object into the fields the parser
// uses, in one pass. It accepts exactly the inputs encoding/json accepts
// (syntax, string escapes, invalid UTF-8 and lone surrogates replaced by
// U+FFFD, case-insensitive keys, the last of duplicate keys winning, nesting
// up to 10,000 deep), but decodes only the paper fields and skips the rest.
// A field of an unexpected type is ignored and flagged with oddTypes; the
// rest of the object is still read. ok is false when b is not one JSON
// object. A differential fuzz test holds it to encoding/json.
func decodePaper(b []byte) (p *paperJSON, ok bool) {
	p, end, ok := decodePaperAt(string(b), 0)
	if !ok {
		return nil, false
	}
	d := jdec{b: string(b), i: end}
	d.ws()
	if d.i != len(d.b) {
		return nil, false
	}
	return p, true
}

// decodePaperAt decodes the JSON object that starts at s[start] and returns
// the offset just past it; text after the object is not looked at. The
// decoded strings share memory with s.
func decodePaperAt(s string, start int) (p *paperJSON, end int, ok bool) {
	d := jdec{b: s, i: start}
	p = new(paperJSON)
	if !d.object(func(key string) bool { return d.paperField(p, key) }) {
		return nil, d.i, false
	}
	p.oddTypes = d.odd
	return p, d.i, true
}

// jdec is a cursor over JSON text.
type jdec struct {
	b     string
	i     int
	depth int
	odd   bool // a known field had a value of the wrong type
}

// maxJSONDepth is encoding/json's nesting limit.
const maxJSONDepth = 10000

func (d *jdec) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *jdec) peek() byte {
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

// object reads {"key": value, …}, calling field for each key with the cursor
// on the value; field must consume the value and report syntax errors. The
// key is only valid during the call.
func (d *jdec) object(field func(key string) bool) bool {
	if d.peek() != '{' {
		return false
	}
	d.depth++
	if d.depth > maxJSONDepth {
		return false
	}
	d.i++
	d.ws()
	if d.peek() == '}' {
		d.i++
		d.depth--
		return true
	}
	for {
		d.ws()
		key, ok := d.key()
		if !ok {
			return false
		}
		d.ws()
		if d.peek() != ':' {
			return false
		}
		d.i++
		d.ws()
		if !field(key) {
			return false
		}
		d.ws()
		switch d.peek() {
		case ',':
			d.i++
		case '}':
			d.i++
			d.depth--
			return true
		default:
			return false
		}
	}
}

// paperField decodes the value of one key of a paper object.
func (d *jdec) paperField(p *paperJSON, key string) bool {
	switch key {
	case "title":
		return d.strField(&p.Title)
	case "authors":
		if d.peek() == '[' {
			// A list of names reads as the names joined, as the site
			// writes them; a list of anything else is odd.
			return d.rawField(func(raw string) error { return p.Authors.UnmarshalJSON([]byte(raw)) })
		}
		a := string(p.Authors)
		ok := d.strField(&a)
		p.Authors = nameList(a)
		return ok
	case "doi":
		return d.strField(&p.DOI)
	case "DOIUrl":
		return d.strField(&p.DOIURL)
	case "abstract":
		// Kept as the raw literal: plainAbstract decodes and collapses it
		// in one pass.
		switch d.peek() {
		case '"':
			start := d.i
			if !d.skipStr() {
				return false
			}
			p.abstractRaw, p.Abstract = d.b[start:d.i], ""
			return true
		case 'n':
			return d.literal("null") || d.skip()
		}
		d.odd = true
		return d.skip()
	case "PeriodicalId":
		return d.rawField(p.PeriodicalID.fromJSON)
	case "journal":
		return d.journalField(&p.Journal)
	case "PeriodicalIF":
		return d.rawField(p.PeriodicalIF.fromJSON)
	case "publicationDate":
		return d.strField(&p.PublicationDate)
	case "publicationTypes":
		return d.rawField(p.PublicationType.fromJSON)
	case "openAccessPdf":
		return d.strField(&p.OpenAccessPDF)
	case "citationCount":
		if d.literal("null") {
			p.CitationCount = nil
			return true
		}
		if p.CitationCount == nil {
			p.CitationCount = new(flexInt)
		}
		return d.rawField(p.CitationCount.fromJSON)
	case "paperid":
		return d.rawField(p.PaperID.fromJSON)
	case "PeriodicalName":
		return d.strField(&p.PeriodicalName)
	case "RegionNum":
		return d.rawField(p.RegionNum.fromJSON)
	case "RegionCategory":
		return d.strField(&p.RegionCategory)
	case "TitleCN":
		return d.strField(&p.TitleCN)
	case "AbstractTextCN":
		return d.strField(&p.AbstractTextCN)
	case "JCR":
		return d.strField(&p.JCR)
	case "JCRName":
		return d.strField(&p.JCRName)
	}
	if k := foldPaperKey(key); k != "" {
		return d.paperField(p, k)
	}
	return d.skip()
}

// paperKeys are the JSON names of paperJSON's fields.
var paperKeys = []string{"title", "authors", "doi", "DOIUrl", "abstract", "PeriodicalId",
	"journal", "PeriodicalIF", "publicationDate", "publicationTypes", "openAccessPdf",
	"citationCount", "paperid", "PeriodicalName", "RegionNum", "RegionCategory", "TitleCN",
	"AbstractTextCN", "JCR", "JCRName"}

// foldPaperKey maps a key that matched no field exactly to the field it
// matches case-insensitively, as encoding/json does, or "".
func foldPaperKey(key string) string {
	ascii := true
	for i := range len(key) {
		if key[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		// For ASCII keys, folding is ASCII case-insensitivity (the field
		// names are ASCII): no allocation.
		for _, k := range paperKeys {
			if asciiEqualFold(k, key) {
				return k
			}
		}
		return ""
	}
	for _, k := range paperKeys {
		if strings.EqualFold(k, key) {
			return k
		}
	}
	return ""
}

func (d *jdec) journalField(dst **journalObj) bool {
	if d.literal("null") {
		*dst = nil
		return true
	}
	if d.peek() != '{' {
		d.odd = true
		return d.skip()
	}
	if *dst == nil {
		*dst = new(journalObj)
	}
	j := *dst
	return d.object(func(k string) bool {
		switch {
		case k == "name" || strings.EqualFold(k, "name"):
			return d.strField(&j.Name)
		case k == "volume" || strings.EqualFold(k, "volume"):
			return d.rawField(j.Volume.fromJSON)
		case k == "pages" || strings.EqualFold(k, "pages"):
			return d.rawField(j.Pages.fromJSON)
		}
		return d.skip()
	})
}

// strField decodes a string into dst; null leaves it; another type is odd.
func (d *jdec) strField(dst *string) bool {
	switch d.peek() {
	case '"':
		s, ok := d.str()
		if ok {
			*dst = s
		}
		return ok
	case 'n':
		return d.literal("null") || d.skip()
	}
	d.odd = true
	return d.skip()
}

// rawField validates a value and hands its text to a lenient decoder; a
// decoder error marks the object odd but does not stop decoding.
func (d *jdec) rawField(dec func(string) error) bool {
	start := d.i
	if !d.skip() {
		return false
	}
	if err := dec(d.b[start:d.i]); err != nil {
		d.odd = true
	}
	return true
}

// literal consumes lit (true, false, null) if it is next.
func (d *jdec) literal(lit string) bool {
	if len(d.b)-d.i >= len(lit) && d.b[d.i:d.i+len(lit)] == lit {
		d.i += len(lit)
		return true
	}
	return false
}

// skip consumes and validates one value of any type.
func (d *jdec) skip() bool {
	switch c := d.peek(); {
	case c == '{':
		return d.object(func(string) bool { return d.skip() })
	case c == '[':
		d.depth++
		if d.depth > maxJSONDepth {
			return false
		}
		d.i++
		d.ws()
		if d.peek() == ']' {
			d.i++
			d.depth--
			return true
		}
		for {
			d.ws()
			if !d.skip() {
				return false
			}
			d.ws()
			switch d.peek() {
			case ',':
				d.i++
			case ']':
				d.i++
				d.depth--
				return true
			default:
				return false
			}
		}
	case c == '"':
		return d.skipStr()
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	}
	return false
}

// number consumes -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *jdec) number() bool {
	if d.peek() == '-' {
		d.i++
	}
	switch c := d.peek(); {
	case c == '0':
		d.i++
	case c >= '1' && c <= '9':
		d.digits()
	default:
		return false
	}
	if d.peek() == '.' {
		d.i++
		if !d.digits() {
			return false
		}
	}
	if c := d.peek(); c == 'e' || c == 'E' {
		d.i++
		if c := d.peek(); c == '+' || c == '-' {
			d.i++
		}
		if !d.digits() {
			return false
		}
	}
	return true
}

func (d *jdec) digits() bool {
	start := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	return d.i > start
}

// skipStr consumes and validates a string without decoding it.
func (d *jdec) skipStr() bool {
	d.i++ // opening quote
	for d.i < len(d.b) {
		// Plain bytes are skipped with one table look-up each.
		for d.i < len(d.b) && !strSpecial[d.b[d.i]] {
			d.i++
		}
		if d.i >= len(d.b) {
			return false
		}
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return true
		case c < ' ':
			return false
		case c == '\\':
			if !d.escape(nil) {
				return false
			}
			continue
		}
		d.i++
	}
	return false
}

// strSpecial marks the bytes that end a run of plain string content: the
// closing quote, a backslash, and control characters (invalid in JSON).
var strSpecial = func() (t [256]bool) {
	for c := range ' ' {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// key reads an object key. Without escapes it is a substring of the input
// (no copy); invalid UTF-8 in a key cannot name a paper field, so it is left
// as is.
func (d *jdec) key() (string, bool) {
	if d.peek() != '"' {
		return "", false
	}
	start := d.i + 1
	for j := start; j < len(d.b); j++ {
		switch c := d.b[j]; {
		case c == '"':
			d.i = j + 1
			return d.b[start:j], true
		case c == '\\':
			return d.str()
		case c < ' ':
			return "", false
		}
	}
	return "", false
}

// str decodes a string at the cursor (which must be on '"').
func (d *jdec) str() (string, bool) {
	if d.peek() != '"' {
		return "", false
	}
	d.i++
	start := d.i
	// Fast path: no escapes and valid UTF-8.
	var high byte // OR of all bytes: bit 7 set when any is non-ASCII
	for d.i < len(d.b) && !strSpecial[d.b[d.i]] {
		high |= d.b[d.i]
		d.i++
	}
	if d.i >= len(d.b) {
		return "", false
	}
	switch d.b[d.i] {
	case '"':
		s := d.b[start:d.i]
		d.i++
		if high < utf8.RuneSelf || utf8.ValidString(s) {
			return s, true
		}
		return string(appendFixUTF8(make([]byte, 0, len(s)), s)), true
	case '\\':
		// The slow path below.
	default:
		return "", false // a control character
	}
	// Slow path: escapes. Find the end first, to size the buffer exactly.
	probe := jdec{b: d.b, i: start - 1}
	if !probe.skipStr() {
		return "", false
	}
	buf := make([]byte, 0, probe.i-start)
	if high < utf8.RuneSelf {
		buf = append(buf, d.b[start:d.i]...)
	} else {
		buf = appendFixUTF8(buf, d.b[start:d.i])
	}
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			// buf is never written again: share it instead of copying.
			return unsafe.String(unsafe.SliceData(buf), len(buf)), true
		case c < ' ':
			return "", false
		case c == '\\':
			if !d.escape(&buf) {
				return "", false
			}
		default:
			j := d.i
			high := false
			for j < len(d.b) {
				c := d.b[j]
				if c == '"' || c == '\\' || c < ' ' {
					break
				}
				high = high || c >= utf8.RuneSelf
				j++
			}
			if high {
				buf = appendFixUTF8(buf, d.b[d.i:j])
			} else {
				buf = append(buf, d.b[d.i:j]...)
			}
			d.i = j
		}
	}
	return "", false
}

// escape consumes one escape sequence at the cursor (on '\'), appending its
// value to *buf when buf is not nil.
func (d *jdec) escape(buf *[]byte) bool {
	r, next, ok := unescape(d.b, d.i)
	if !ok {
		return false
	}
	d.i = next
	if buf != nil {
		*buf = utf8.AppendRune(*buf, r)
	}
	return true
}

// unescape reads the escape sequence at s[i] == '\' and returns its rune
// and the offset after it. A lone UTF-16 surrogate is U+FFFD, and only its
// own escape is consumed (as encoding/json does).
func unescape(s string, i int) (r rune, next int, ok bool) {
	if i+1 >= len(s) {
		return 0, i, false
	}
	switch c := s[i+1]; c {
	case '"', '\\', '/':
		return rune(c), i + 2, true
	case 'b':
		return '\b', i + 2, true
	case 'f':
		return '\f', i + 2, true
	case 'n':
		return '\n', i + 2, true
	case 'r':
		return '\r', i + 2, true
	case 't':
		return '\t', i + 2, true
	case 'u':
		r1, ok := hex4(s, i+2)
		if !ok {
			return 0, i, false
		}
		i += 6
		if !utf16.IsSurrogate(r1) {
			return r1, i, true
		}
		if i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
			if r2, ok := hex4(s, i+2); ok {
				if dec := utf16.DecodeRune(r1, r2); dec != utf8.RuneError {
					return dec, i + 6, true
				}
			}
		}
		return utf8.RuneError, i, true
	}
	return 0, i, false
}

// collapseJSONString decodes a validated JSON string literal (quotes
// included) straight into collapsed text: what collapse would make of the
// decoded string, in one pass and one allocation.
func collapseJSONString(raw string) string {
	b := make([]byte, 0, len(raw))
	space := false
	last := len(raw) - 1 // the closing quote
	for i := 1; i < last; {
		if c := raw[i]; c > ' ' && c < utf8.RuneSelf && c != '\\' {
			j := wordRunEnd(raw, i, last, '\\')
			if space && len(b) > 0 {
				b = append(b, ' ')
			}
			space = false
			b = append(b, raw[i:j]...)
			i = j
			continue
		}
		var r rune
		switch c := raw[i]; {
		case c == '\\':
			var ok bool
			if r, i, ok = unescape(raw, i); !ok {
				return "" // not reachable for a validated literal
			}
		case c < utf8.RuneSelf:
			r = rune(c)
			i++
		default:
			var n int
			r, n = utf8.DecodeRuneInString(raw[i:])
			i += n
		}
		if r <= ' ' || unicode.IsSpace(r) {
			space = true
			continue
		}
		if space && len(b) > 0 {
			b = append(b, ' ')
		}
		space = false
		b = utf8.AppendRune(b, r)
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

func hex4(b string, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for k := i; k < i+4; k++ {
		c := b[k]
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// appendFixUTF8 appends s with each invalid byte replaced by U+FFFD.
func appendFixUTF8(buf []byte, s string) []byte {
	if utf8.ValidString(s) {
		return append(buf, s...)
	}
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		if r == utf8.RuneError && n == 1 {
			buf = utf8.AppendRune(buf, utf8.RuneError)
		} else {
			buf = append(buf, s[:n]...)
		}
		s = s[n:]
	}
	return buf
}

func asciiEqualFold(s, b string) bool {
	if len(s) != len(b) {
		return false
	}
	for i := range len(b) {
		x, y := s[i], b[i]
		if x|0x20 != y|0x20 || (x|0x20) < 'a' || (x|0x20) > 'z' {
			if x != y {
				return false
			}
		}
	}
	return true
}
