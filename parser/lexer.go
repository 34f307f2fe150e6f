package parser

import (
	"bytes"
	"unicode/utf8"

	"golang.org/x/net/html"
)

// A fast lexer for the markup listing pages are made of. x/net/html's
// tokenizer reads a page a byte at a time through its own buffer: on a
// listing page it is a third of the parse. The lexer reads the page's
// bytes in place, with bytes.IndexByte, for the subset of HTML such pages
// use: text, tags with quoted or plain attributes, comments, a doctype,
// and the raw-text elements (script, style, title, textarea…). At the
// first construct outside it (a NUL or a carriage return, a tag or
// comment the end of the page cuts, "<?", "<![CDATA[", a script holding
// "<!--", an attribute with an odd entity…) it gives up, and the page is
// read with x/net/html's tokenizer. Where it does not give up, its tokens
// are the tokenizer's (FuzzLexerMatchesTokenizer), comments and the
// doctype left out. It lexes the whole page before the first token is
// read, so it is used for pages of at most maxDOMBytes (the tokens of a
// larger page would cost their own memory).

// lexTok is one token, as spans of the page.
type lexTok struct {
	kind       html.TokenType
	a, b       int32 // text, or the tag's name
	attr, nAtt int32 // the tag's attributes: lexer.attrs[attr : attr+nAtt]
	raw        bool  // text of a raw-text element: not unescaped
}

// lexAttr is an attribute's key and value spans.
type lexAttr struct{ k0, k1, v0, v1 int32 }

// lexer tokenizes a page in place; it implements the methods of
// html.Tokenizer that flattenStream calls.
type lexer struct {
	s     []byte
	toks  []lexTok
	attrs []lexAttr
	i     int // the next token
	cur   *lexTok
	nAttr int32  // attributes of cur returned
	name  []byte // scratch: the lower-cased tag name (TagName)
	key   []byte // scratch: a lower-cased attribute key (TagAttr)
	plain []byte // scratch: an unescaped text (Text)
}

// rawTextElements are the elements whose content the tokenizer reads as
// text up to their end tag; rcdata says which of them unescape it.
var rawTextElements = map[string]bool{"script": false, "style": false, "iframe": false, "noembed": false,
	"noframes": false, "noscript": false, "xmp": false, "textarea": true, "title": true}

// lex tokenizes s, or says it cannot (ok false): the page is then read
// with x/net/html's tokenizer.
func lex(s []byte) (*lexer, bool) {
	if len(s) >= 1<<31-1 || bytes.IndexByte(s, 0) >= 0 || bytes.IndexByte(s, '\r') >= 0 {
		return nil, false
	}
	z := &lexer{s: s, toks: make([]lexTok, 0, len(s)/128+16)} // (a listing page: a token for each 100-odd bytes)
	for i := 0; i < len(s); {
		j := bytes.IndexByte(s[i:], '<')
		if j < 0 {
			z.text(i, len(s), false)
			break
		}
		j += i
		if !z.opens(j) { // a '<' that opens nothing: text
			k := j + 1
			for k < len(s) {
				m := bytes.IndexByte(s[k:], '<')
				if m < 0 {
					k = len(s)
					break
				}
				if z.opens(k + m) {
					k += m
					break
				}
				k += m + 1
			}
			z.text(i, k, false)
			i = k
			continue
		}
		z.text(i, j, false)
		n := len(z.toks)
		next, ok := z.markup(j)
		if !ok {
			return nil, false
		}
		i = next
		if len(z.toks) == n {
			continue // a comment, a doctype
		}
		if t := &z.toks[n]; t.kind == html.StartTagToken || t.kind == html.SelfClosingTagToken {
			if rc, isRaw := rawTextElements[string(lowerASCII(s[t.a:t.b], &z.name))]; isRaw {
				if i, ok = z.rawText(i, string(lowerASCII(s[t.a:t.b], &z.name)), rc); !ok {
					return nil, false
				}
			}
		}
	}
	return z, true
}

// text adds the text s[a:b], if any.
func (z *lexer) text(a, b int, raw bool) {
	if b > a {
		z.toks = append(z.toks, lexTok{kind: html.TextToken, a: int32(a), b: int32(b), raw: raw})
	}
}

// opens: the '<' at j begins markup (a tag, an end tag, a comment or
// declaration, "<?").
func (z *lexer) opens(j int) bool {
	if j+1 >= len(z.s) {
		return false
	}
	c := z.s[j+1]
	return isASCIILetter(c) || c == '/' || c == '!' || c == '?'
}

// markup reads the markup at s[j] (a '<' that opens some): it returns
// where the text goes on after it, false for a construct outside the
// subset.
func (z *lexer) markup(j int) (int, bool) {
	s := z.s
	switch c := s[j+1]; {
	case c == '!':
		return z.declaration(j)
	case c == '?':
		return 0, false
	case c == '/':
		if j+2 >= len(s) || !isASCIILetter(s[j+2]) {
			return 0, false
		}
		return z.endTag(j)
	default:
		return z.startTag(j)
	}
}

// declaration skips a comment or a doctype.
func (z *lexer) declaration(j int) (int, bool) {
	s := z.s[j:]
	if bytes.HasPrefix(s, []byte("<!--")) {
		body := s[4:]
		if len(body) > 0 && body[0] == '>' || bytes.HasPrefix(body, []byte("->")) {
			return 0, false // "<!-->", "<!--->"
		}
		end := bytes.Index(body, []byte("-->"))
		if end < 0 || bytes.Contains(body[:end], []byte("--!")) || bytes.HasSuffix(body[:end], []byte("-")) {
			return 0, false
		}
		return j + 4 + end + 3, true
	}
	if len(s) >= 9 && bytes.EqualFold(s[2:9], []byte("doctype")) {
		end := bytes.IndexByte(s, '>')
		if end < 0 {
			return 0, false
		}
		return j + end + 1, true
	}
	return 0, false
}

// endTag reads "</name>" (white space before '>').
func (z *lexer) endTag(j int) (int, bool) {
	a := j + 2
	b := z.nameEnd(a)
	if b < 0 {
		return 0, false
	}
	k := skipSpace(z.s, b)
	if k >= len(z.s) || z.s[k] != '>' {
		return 0, false
	}
	z.toks = append(z.toks, lexTok{kind: html.EndTagToken, a: int32(a), b: int32(b)})
	return k + 1, true
}

// nameEnd is where a tag name from a ends: letters, digits and '-', up to
// white space, '/' or '>'; -1 for another byte, or the page's end.
func (z *lexer) nameEnd(a int) int {
	s := z.s
	for k := a; k < len(s); k++ {
		switch c := s[k]; {
		case isASCIILetter(c), c >= '0' && c <= '9', c == '-':
		case c == ' ', c == '\n', c == '\t', c == '\f', c == '/', c == '>':
			return k
		default:
			return -1
		}
	}
	return -1
}

// startTag reads a start tag and its attributes.
func (z *lexer) startTag(j int) (int, bool) {
	s := z.s
	a := j + 1
	b := z.nameEnd(a)
	if b < 0 {
		return 0, false
	}
	t := lexTok{kind: html.StartTagToken, a: int32(a), b: int32(b), attr: int32(len(z.attrs))}
	k := b
	for {
		k = skipSpace(s, k)
		switch {
		case k >= len(s):
			return 0, false
		case s[k] == '>':
			z.toks = append(z.toks, t)
			return k + 1, true
		case s[k] == '/':
			if k+1 >= len(s) || s[k+1] != '>' {
				return 0, false
			}
			t.kind = html.SelfClosingTagToken
			z.toks = append(z.toks, t)
			return k + 2, true
		}
		at, next, ok := z.attribute(k)
		if !ok {
			return 0, false
		}
		if !z.seen(t, at) {
			z.attrs = append(z.attrs, at)
			t.nAtt++
		}
		k = next
	}
}

// attribute reads one attribute from s[k].
func (z *lexer) attribute(k int) (lexAttr, int, bool) {
	s := z.s
	var at lexAttr
	at.k0 = int32(k)
	for k < len(s) && !isSpace(s[k]) && s[k] != '/' && s[k] != '>' && s[k] != '=' {
		if c := s[k]; c == '"' || c == '\'' || c == '<' || c == '`' {
			return at, 0, false
		}
		k++
	}
	at.k1 = int32(k)
	if at.k1 == at.k0 {
		return at, 0, false // "=" before a name
	}
	at.v0, at.v1 = int32(k), int32(k)
	v := skipSpace(s, k)
	if v >= len(s) || s[v] != '=' {
		return at, k, true // no value
	}
	v = skipSpace(s, v+1)
	if v >= len(s) {
		return at, 0, false
	}
	switch q := s[v]; q {
	case '"', '\'':
		end := bytes.IndexByte(s[v+1:], q)
		if end < 0 {
			return at, 0, false
		}
		at.v0, at.v1 = int32(v+1), int32(v+1+end)
		k = v + 1 + end + 1
	case '>':
		return at, 0, false
	default:
		e := v
		for e < len(s) && !isSpace(s[e]) && s[e] != '>' {
			if c := s[e]; c == '"' || c == '\'' || c == '<' || c == '=' || c == '`' {
				return at, 0, false
			}
			e++
		}
		if s[e-1] == '/' {
			return at, 0, false // "<a href=x/>": the '/' is the value's
		}
		at.v0, at.v1 = int32(v), int32(e)
		k = e
	}
	if !plainEntities(s[at.v0:at.v1]) {
		return at, 0, false
	}
	return at, k, true
}

// seen: the tag has an attribute of at's name already (the tokenizer
// keeps the first).
func (z *lexer) seen(t lexTok, at lexAttr) bool {
	key := z.s[at.k0:at.k1]
	for _, o := range z.attrs[t.attr : t.attr+t.nAtt] {
		if equalASCIIFold(z.s[o.k0:o.k1], key) {
			return true
		}
	}
	return false
}

// equalASCIIFold: a and b are equal, ASCII letters of either case alike
// (as the tokenizer lower-cases names: bytes.EqualFold would also take two
// invalid bytes for one).
func equalASCIIFold(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x >= 'A' && x <= 'Z' {
			x += 'a' - 'A'
		}
		if y >= 'A' && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// plainEntities: every '&' in an attribute value starts a character
// reference ended by ';' ("&amp;", "&#34;"), or is followed by no name:
// there the attribute's unescaping is the text's.
func plainEntities(v []byte) bool {
	for i := bytes.IndexByte(v, '&'); i >= 0; {
		k := i + 1
		for k < len(v) && (isASCIILetter(v[k]) || v[k] >= '0' && v[k] <= '9' || v[k] == '#') {
			k++
		}
		if k > i+1 && (k >= len(v) || v[k] != ';') {
			return false
		}
		n := bytes.IndexByte(v[k:], '&')
		if n < 0 {
			break
		}
		i = k + n
	}
	return true
}

// rawText reads a raw-text element's content up to its end tag (left for
// the next token).
func (z *lexer) rawText(i int, name string, rcdata bool) (int, bool) {
	s := z.s
	for k := i; ; {
		m := bytes.Index(s[k:], []byte("</"))
		if m < 0 {
			return 0, false // the page ends inside it
		}
		m += k
		e := m + 2 + len(name)
		if e < len(s) && equalASCIIFold(s[m+2:e], []byte(name)) && (isSpace(s[e]) || s[e] == '/' || s[e] == '>') {
			if name == "script" && bytes.Contains(s[i:m], []byte("<!--")) {
				return 0, false // the script's escaped states
			}
			z.text(i, m, !rcdata)
			return m, true
		}
		k = m + 2
	}
}

// Next is the next token's type (html.ErrorToken at the end).
func (z *lexer) Next() html.TokenType {
	if z.i >= len(z.toks) {
		z.cur = nil
		return html.ErrorToken
	}
	z.cur, z.nAttr = &z.toks[z.i], 0
	z.i++
	return z.cur.kind
}

// Text is a text token's text, unescaped unless raw (valid until the
// next call).
func (z *lexer) Text() []byte {
	t := z.s[z.cur.a:z.cur.b]
	if z.cur.raw || bytes.IndexByte(t, '&') < 0 {
		return t
	}
	if u, ok := unescapeCommon(t, z.plain[:0]); ok {
		z.plain = u
		return u
	}
	return []byte(html.UnescapeString(string(t)))
}

// unescapeCommon unescapes the character references HTML-escaped JSON is
// made of (&quot; &amp; &lt; &gt; &apos; &nbsp;, and numeric ones of
// plain characters) into dst, without the copies of html.UnescapeString;
// ok false at any other reference (then html.UnescapeString reads it).
func unescapeCommon(t, dst []byte) ([]byte, bool) {
	for {
		i := bytes.IndexByte(t, '&')
		if i < 0 {
			return append(dst, t...), true
		}
		dst = append(dst, t[:i]...)
		t = t[i:]
		end := bytes.IndexByte(t, ';')
		if end < 0 || end > 10 {
			return nil, false
		}
		ref := t[1:end]
		var r rune
		switch {
		case len(ref) > 1 && ref[0] == '#':
			n, ok := numericRef(ref[1:])
			if !ok {
				return nil, false
			}
			r = n
		default:
			switch string(ref) {
			case "quot":
				r = '"'
			case "amp":
				r = '&'
			case "lt":
				r = '<'
			case "gt":
				r = '>'
			case "apos":
				r = '\''
			case "nbsp":
				r = '\u00a0'
			default:
				return nil, false
			}
		}
		dst = utf8.AppendRune(dst, r)
		t = t[end+1:]
	}
}

// numericRef reads the digits of "&#NN;" or "&#xHH;" as a character that
// HTML takes as it is: not 0, no C1 control (HTML maps those to
// Windows-1252), no surrogate, at most U+10FFFF.
func numericRef(d []byte) (rune, bool) {
	base := 10
	if d[0] == 'x' || d[0] == 'X' {
		base, d = 16, d[1:]
	}
	if len(d) == 0 || len(d) > 6 {
		return 0, false
	}
	var n rune
	for _, c := range d {
		var v rune
		switch {
		case c >= '0' && c <= '9':
			v = rune(c - '0')
		case base == 16 && c|0x20 >= 'a' && c|0x20 <= 'f':
			v = rune(c|0x20-'a') + 10
		default:
			return 0, false
		}
		n = n*rune(base) + v
	}
	if n == 0 || n >= 0x80 && n <= 0x9f || n >= 0xd800 && n <= 0xdfff || n > 0x10ffff || n == 0x0d {
		return 0, false
	}
	return n, true
}

// TagName is a tag's lower-cased name, and whether it has attributes.
func (z *lexer) TagName() ([]byte, bool) {
	return lowerASCII(z.s[z.cur.a:z.cur.b], &z.name), z.cur.nAtt > 0
}

// TagAttr is the next attribute's lower-cased key and unescaped value.
func (z *lexer) TagAttr() (key, val []byte, more bool) {
	at := z.attrs[z.cur.attr+z.nAttr]
	z.nAttr++
	key = lowerASCII(z.s[at.k0:at.k1], &z.key)
	val = z.s[at.v0:at.v1]
	if bytes.IndexByte(val, '&') >= 0 {
		val = []byte(html.UnescapeString(string(val)))
	}
	return key, val, z.nAttr < z.cur.nAtt
}

// lowerASCII is b lower-cased: b itself when it has no upper case, else
// a copy in *buf (valid until the next call).
func lowerASCII(b []byte, buf *[]byte) []byte {
	up := false
	for _, c := range b {
		if c >= 'A' && c <= 'Z' {
			up = true
			break
		}
	}
	if !up {
		return b
	}
	*buf = append((*buf)[:0], b...)
	for i, c := range *buf {
		if c >= 'A' && c <= 'Z' {
			(*buf)[i] = c + 'a' - 'A'
		}
	}
	return *buf
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\f' }

func skipSpace(s []byte, k int) int {
	for k < len(s) && isSpace(s[k]) {
		k++
	}
	return k
}

// lexSmall is lex for a page of at most maxDOMBytes (a larger one's
// tokens would cost their own memory): ok false for a larger page.
func lexSmall(s []byte) (*lexer, bool) {
	if len(s) > maxDOMBytes {
		return nil, false
	}
	return lex(s)
}
