package parser

import (
	"bytes"
	"cmp"
	"slices"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Flattening from the token stream. A listing page is read in one pass
// over its tokens, without a tree: what is open (a link, a heading, a
// hidden element, a <pre>) is a stack of small entries, and a line is
// the only text held. Memory is then the page's bytes and its lines, and
// the CPU a fraction of building the DOM.
//
// The lines are the ones flattenHTML makes from the DOM, for markup whose
// tree is its tags (every element closed where it ends, or where HTML
// closes it by itself: a <p> before a block, an <li> before the next).
// Where the tree builder would move things (a link closed out of order and
// reopened, text inside a <table> between its cells, a tag that breaks
// out of <svg>, an end tag the builder ignores), the stream says so
// (soup), and Parse reads the page from goquery's DOM instead (when the
// page is within maxDOMBytes). FuzzStreamMatchesDOM holds the two to the
// same lines wherever the stream does not say soup.

// maxDOMBytes is the largest page read from a DOM when its markup is
// soup: a tree costs about 35 times its page in memory (measured: a 4 MB
// page of misnested links, 135 MB; 16 MB of small elements, 1 GB), so a
// larger page is read from the stream whatever its markup (page warning
// html-fallback). A listing page of the site is 50 to 200 KB.
const maxDOMBytes = 1 << 20

// streamEl is an open element.
type streamEl struct {
	a      atom.Atom
	name   string // for elements without an atom
	role   elRole
	start  int    // a link: len(buf) when it opened
	href   string // a link's href
	hidden int    // a hidden element: where its text starts in the capture
}

type elRole uint8

const (
	elNone    elRole = iota
	elBlock          // a line ends before and after it
	elLink           // <a>
	elHeading        // <h1>…<h6>
	elSkip           // not shown (style, svg, select…)
	elHidden         // hidden attribute or style: its text is a JSON candidate
	elScript         // <script>: a JSON script's body is a candidate
	elTitle          // <title>
)

// streamer flattens one page from its tokens.
type streamer struct {
	f       flattener
	stack   []streamEl
	capture []byte           // the text of a hidden element, a JSON script or the title
	quiet   int              // open elements whose text is not shown (skip, hidden, script, title)
	quiets  []elRole         // their roles, innermost last
	pre     int              // open <pre> elements
	foreign int              // open <svg>/<math>
	dropNL  bool             // the next text follows <pre>: its first newline is not shown
	tables  int              // open <table> elements
	open1   [5]int32         // open <p>, <li>, <dd>/<dt>, <a>, <select> (slot*)
	forms   int              // open <form> elements
	attrs   []html.Attribute // the current tag's attributes (those read)
	soup    bool             // the tree builder would make another tree of this markup
	deep    bool             // more elements open at once than the tree builder accepts
}

// tokenizer is what flattenStream reads a page with: x/net/html's
// Tokenizer, or the lexer (lexer.go) for the markup it reads.
type tokenizer interface {
	Next() html.TokenType
	Text() []byte
	TagName() ([]byte, bool)
	TagAttr() (key, val []byte, more bool)
}

// maxTreeDepth is the nesting past which html.Parse refuses a document.
// The stream looks at most this far down its stack for an open element
// (as the tree builder's own searches do), so its work is linear in the
// page whatever its nesting.
const maxTreeDepth = 512

// maxStack bounds the open elements kept (a hostile page of unclosed
// tags would otherwise keep one entry for each).
const maxStack = 4 * maxTreeDepth

// floor is the lowest stack index a search looks at.
func (st *streamer) floor() int { return max(len(st.stack)-maxTreeDepth, 0) }

// flattenStream reads a page's lines from its token stream; soup says the
// markup is one whose DOM the stream cannot stand for (read it from the
// DOM), deep that the DOM would refuse it.
func flattenStream(s []byte, emit func(rawLine)) (title string, soup, deep bool) {
	return streamLines(s, emit, false)
}

// streamLines is flattenStream; with stopOnSoup it stops at the first
// markup it cannot stand for (soup), for a caller that then reads the
// page from a DOM: what it emitted is incomplete, and the title empty.
func streamLines(s []byte, emit func(rawLine), stopOnSoup bool) (title string, soup, deep bool) {
	st := &streamer{f: flattener{emit: emit}}
	var z tokenizer
	if lx, ok := lexSmall(s); ok {
		z = lx // (lexer.go: the page's markup is of the subset it reads)
	} else {
		z = html.NewTokenizer(bytes.NewReader(s))
	}
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			for len(st.stack) > 0 {
				st.pop()
			}
			st.f.flush()
			return st.f.title, st.soup, st.deep
		case html.TextToken:
			st.text(z.Text())
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			attrs := st.attrs[:0]
			for hasAttr {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				if keptAttr(k) {
					attrs = append(attrs, html.Attribute{Key: string(k), Val: string(v)})
				}
			}
			st.attrs = attrs
			st.startTag(name, attrs, tt == html.SelfClosingTagToken)
		case html.EndTagToken:
			name, _ := z.TagName()
			st.endTag(name)
		case html.CommentToken:
			if st.foreign > 0 {
				st.soup = true // (a CDATA section, which the builder reads as text there)
			}
		}
		if stopOnSoup && st.soup {
			return "", true, st.deep
		}
	}
}

// keptAttr: the attributes the flattening reads (a link's href, what
// hides an element, a script's type, data-* JSON); the others are not
// copied out of the tokenizer.
func keptAttr(k []byte) bool {
	switch string(k) {
	case "href", "hidden", "style", "type":
		return true
	}
	return bytes.HasPrefix(k, []byte("data-"))
}

// text handles a text token.
func (st *streamer) text(t []byte) {
	if st.dropNL {
		st.dropNL = false
		t = bytes.TrimPrefix(t, []byte("\n"))
	}
	if bytes.IndexByte(t, 0) >= 0 {
		// The tree builder drops NULs in text (the tokenizer has made
		// those of a script's or a title's text U+FFFD).
		t = bytes.ReplaceAll(t, []byte{0}, nil)
	}
	if n := len(st.stack); n > 0 && tableContext(st.stack[n-1].a) && len(bytes.TrimSpace(t)) > 0 {
		st.soup = true // text between a table's cells goes before the table (out of a hidden one too)
	}
	if st.quiet > 0 {
		if st.innerQuiet() {
			st.capture = append(st.capture, t...)
		}
		return
	}
	st.childOfHeading()
	if st.pre == 0 {
		st.f.buf = append(st.f.buf, t...)
		return
	}
	st.f.text(string(t), true)
}

// innerQuiet: the innermost quiet element is one whose text is kept (a
// hidden element, a JSON script, the title), not a skipped one.
func (st *streamer) innerQuiet() bool {
	k := st.quietKind()
	return k == elHidden || k == elScript || k == elTitle
}

// quietKind is the role of the innermost quiet element.
func (st *streamer) quietKind() elRole {
	if len(st.quiets) == 0 {
		return elNone
	}
	return st.quiets[len(st.quiets)-1]
}

// childOfHeading: the DOM walk marks a heading's line when a child of the
// heading comes after text on the line.
func (st *streamer) childOfHeading() {
	if n := len(st.stack); n > 0 && st.stack[n-1].role == elHeading && len(st.f.buf) > 0 {
		st.f.heading = true
	}
}

// shown opens an element whose text is shown: a block ends the line
// before it; a heading marks its lines; <pre> keeps its newlines.
func (st *streamer) shown(a atom.Atom, attrs []html.Attribute) elRole {
	role := elNone
	if isBlock(a) {
		st.f.flush()
		role = elBlock
	}
	st.f.jsonAttrsOf(attrs)
	switch a {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		role = elHeading
	case atom.Pre:
		st.pre++
		st.dropNL = true
	case atom.Listing, atom.Textarea:
		st.dropNL = true // (the tree builder drops its first newline; flatten.go shows its lines as text)
	}
	return role
}

// voidElement: no content, no end tag.
func voidElement(a atom.Atom) bool {
	switch a {
	case atom.Area, atom.Base, atom.Br, atom.Col, atom.Embed, atom.Hr, atom.Img, atom.Input, atom.Keygen,
		atom.Link, atom.Meta, atom.Param, atom.Source, atom.Track, atom.Wbr, atom.Image:
		return true
	}
	return false
}

// skipped: elements whose content is not shown (flattenHTML's list).
func skipped(a atom.Atom) bool {
	switch a {
	case atom.Style, atom.Noscript, atom.Template, atom.Iframe, atom.Object,
		atom.Svg, atom.Math, atom.Select, atom.Button, atom.Textarea, atom.Head:
		return true
	}
	return false
}

func (st *streamer) startTag(name []byte, attrs []html.Attribute, selfClosing bool) {
	st.dropNL = false
	a := atom.Lookup(name)
	if st.foreign > 0 {
		st.foreignTag(a, selfClosing)
		return
	}
	if st.quiet > 0 && st.quietKind() == elHidden {
		if n := len(st.stack); tableContext(st.stack[n-1].a) && !tablePart(a) {
			st.soup = true // an element between a hidden table's cells goes before it
		}
		st.impliedEnds(a) // a hidden element is closed as any other
	}
	if st.quiet > 0 {
		st.quietTag(a, string(name), selfClosing)
		return
	}
	switch a {
	case atom.Frameset, atom.Plaintext, atom.Frame:
		st.soup = true
	case atom.Body, atom.Html:
		if hiddenElement(&html.Node{Attr: attrs}) {
			st.soup = true // a hidden body: the DOM shows nothing of it
		}
		return // one body, one html: the builder merges a second's attributes
	case atom.Form:
		if st.forms > 0 {
			st.soup = true // a form in a form: the builder ignores it, and its end tag
		}
	case atom.Base, atom.Basefont, atom.Bgsound:
		st.soup = true // head elements: the DOM reads them in the head, or not at all
	case atom.Head:
		// <head> holds <title> and JSON scripts; nothing else is shown.
		// Its other elements are read as the DOM reads a head, by
		// skipping them, when they are the head's (the tree builder
		// closes the head at the first element a head cannot hold).
		return
	}
	if st.tables == 0 && tableOnly(a) {
		return // a table part outside a table: the builder ignores the tag
	}
	if n := len(st.stack); n > 0 && tableContext(st.stack[n-1].a) && !tablePart(a) {
		st.soup = true // an element between a table's cells goes before the table
	}
	st.childOfHeading()
	st.impliedEnds(a)
	st.open(a, name, attrs, selfClosing)
}

// open opens an element (a void one is only read): what it is to the
// lines (its role) and what it says (a link's href, JSON attributes).
func (st *streamer) open(a atom.Atom, name []byte, attrs []html.Attribute, selfClosing bool) {
	if formatting(a) && len(attrs) > 1 {
		// The tree builder sorts a formatting element's attributes (its
		// Noah's Ark clause): the DOM gives their JSON in that order.
		slices.SortFunc(attrs, func(x, y html.Attribute) int {
			return cmp.Or(strings.Compare(x.Key, y.Key), strings.Compare(x.Val, y.Val))
		})
	}
	if len(st.stack) >= maxStack && !voidElement(a) {
		// Nested past what any page needs (and past the tree builder,
		// which refuses 512): the element is read as if it closed at
		// once, so the stack, like the lines, stays bounded.
		st.deep = true
		if isBlock(a) {
			st.f.flush()
		}
		return
	}
	if voidElement(a) {
		switch a {
		case atom.Br, atom.Hr:
			st.f.flush()
		case atom.Input, atom.Meta, atom.Link:
		default:
			st.f.jsonAttrsOf(attrs) // (an <img data-paper='{…}'>)
		}
		return
	}
	el := streamEl{a: a}
	if a == 0 {
		el.name = string(name)
	}
	switch {
	case a == atom.Script:
		el.role = elScript
		if !isJSONScript(&html.Node{Attr: attrs}) {
			el.role = elSkip
		}
	case a == atom.Title:
		el.role = elTitle
	case skipped(a):
		el.role = elSkip
		if a == atom.Svg || a == atom.Math {
			st.foreign++
			if selfClosing {
				st.foreign--
				return
			}
		}
	case hiddenElement(&html.Node{Attr: attrs}):
		st.f.jsonAttrsOf(attrs)
		el.role = elHidden
		st.capture = st.capture[:0]
	case a == atom.A:
		st.f.jsonAttrsOf(attrs)
		el.role, el.start = elLink, len(st.f.buf)
		for _, at := range attrs {
			if at.Key == "href" {
				el.href = at.Val
				break
			}
		}
	default:
		el.role = st.shown(a, attrs)
	}
	switch el.role {
	case elSkip, elHidden, elScript, elTitle:
		st.quiet++
		st.quiets = append(st.quiets, el.role)
		if el.role != elSkip && el.role != elHidden {
			st.capture = st.capture[:0]
		}
	}
	st.push(el)
}

// The elements whose open count the streamer keeps (open1).
const (
	slotP = iota
	slotLi
	slotDdDt
	slotA
	slotSelect
)

// slot is a's index in open1, or -1.
func slot(a atom.Atom) int {
	switch a {
	case atom.P:
		return slotP
	case atom.Li:
		return slotLi
	case atom.Dd, atom.Dt:
		return slotDdDt
	case atom.A:
		return slotA
	case atom.Select:
		return slotSelect
	}
	return -1
}

func (st *streamer) push(el streamEl) {
	if k := slot(el.a); k >= 0 {
		st.open1[k]++
	}
	switch el.a {
	case atom.Table:
		st.tables++
	case atom.Form:
		st.forms++
	}
	st.stack = append(st.stack, el)
	if len(st.stack) > maxTreeDepth {
		st.deep = true
	}
}

// quietTag: a start tag inside an element whose text is not shown is
// only counted, to find that element's end.
func (st *streamer) quietTag(a atom.Atom, name string, selfClosing bool) {
	if (a == atom.Input || a == atom.Keygen || a == atom.Textarea || a == atom.Select) && st.inSelect() {
		st.soup = true // the builder closes the select
	}
	if voidElement(a) {
		return
	}
	if len(st.stack) >= maxStack {
		st.deep = true
		return
	}
	if a == atom.Svg || a == atom.Math {
		st.foreign++
		if selfClosing {
			st.foreign--
			return
		}
	}
	el := streamEl{a: a, role: elNone}
	if a == 0 {
		el.name = name
	}
	if top := st.stack[len(st.stack)-1]; top.a == a && (a == atom.Button || a == atom.Select || a == atom.A) {
		st.soup = true // the builder closes the first
	}
	st.push(el)
}

// foreignTag: inside <svg> or <math>, self-closing tags are closed; an
// HTML element breaks out of the foreign content in the tree builder.
func (st *streamer) foreignTag(a atom.Atom, selfClosing bool) {
	if _, raw := rawTextElements[a.String()]; raw || a == atom.Plaintext {
		st.soup = true // in foreign content the builder reads it as markup, the tokenizer as text
	}
	if len(st.stack) >= maxStack {
		st.deep = true
		return
	}
	switch a {
	case atom.B, atom.Big, atom.Blockquote, atom.Body, atom.Br, atom.Center, atom.Code, atom.Dd, atom.Div, atom.Dl,
		atom.Dt, atom.Em, atom.Embed, atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6, atom.Head, atom.Hr, atom.I,
		atom.Img, atom.Li, atom.Listing, atom.Menu, atom.Meta, atom.Nobr, atom.Ol, atom.P, atom.Pre, atom.Ruby, atom.S,
		atom.Small, atom.Span, atom.Strong, atom.Strike, atom.Sub, atom.Sup, atom.Table, atom.Tt, atom.U, atom.Ul,
		atom.Var, atom.Font:
		st.soup = true
	}
	if selfClosing {
		return
	}
	if a == atom.Svg || a == atom.Math {
		st.foreign++
	}
	st.push(streamEl{a: a})
}

// impliedEnds closes what a start tag closes in the tree builder: a <p>
// before a block, an <li> before an <li>, a cell or row before the next.
func (st *streamer) impliedEnds(a atom.Atom) {
	// (The searches below are skipped when nothing they look for is open:
	// a page of millions of <div>s costs no search of its stack each.)
	switch a {
	case atom.Li:
		if st.open1[slotLi] == 0 {
			break
		}
		st.closeInScope(func(x atom.Atom) bool { return x == atom.Li }, listStop)
	case atom.Dd, atom.Dt:
		if st.open1[slotDdDt] == 0 {
			break
		}
		st.closeInScope(func(x atom.Atom) bool { return x == atom.Dd || x == atom.Dt }, listStop)
	case atom.Td, atom.Th:
		if st.tables == 0 {
			break
		}
		st.closeInScope(func(x atom.Atom) bool { return x == atom.Td || x == atom.Th }, func(x atom.Atom) bool { return x == atom.Tr || tableStop(x) })
	case atom.Tr:
		if st.tables == 0 {
			break
		}
		st.closeInScope(func(x atom.Atom) bool { return x == atom.Tr }, func(x atom.Atom) bool { return tableStop(x) || x == atom.Tbody || x == atom.Thead || x == atom.Tfoot })
	case atom.Tbody, atom.Thead, atom.Tfoot:
		if st.tables == 0 {
			break
		}
		st.closeInScope(func(x atom.Atom) bool { return x == atom.Tbody || x == atom.Thead || x == atom.Tfoot }, tableStop)
	case atom.A:
		if st.open1[slotA] > 0 {
			st.soup = true // a link inside a link: the builder closes and reopens
		}
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		if n := len(st.stack); n > 0 && st.stack[n-1].role == elHeading {
			st.soup = true // a heading inside a heading
		}
	}
	if closesP(a) && st.open1[slotP] > 0 {
		st.closeInScope(func(x atom.Atom) bool { return x == atom.P }, func(x atom.Atom) bool { return x == atom.Button || scopeBoundary(x) })
	}
}

// listStop: where the search for an open <li>, <dd> or <dt> stops: a
// special element other than <address>, <div> and <p>.
func listStop(x atom.Atom) bool {
	return special(x) && x != atom.Address && x != atom.Div && x != atom.P
}

// tableStop: the boundaries of the table scope.
func tableStop(x atom.Atom) bool { return x == atom.Html || x == atom.Table || x == atom.Template }

// special: the tree builder's special elements.
func special(a atom.Atom) bool {
	if isBlock(a) && a != atom.Legend || skipped(a) || voidElement(a) {
		return true
	}
	switch a {
	case atom.Applet, atom.Marquee, atom.Script, atom.Title, atom.Xmp, atom.Noembed, atom.Noframes,
		atom.Plaintext, atom.Listing, atom.Frame, atom.Frameset, atom.Dialog, atom.Dir, atom.Hgroup, atom.Menu, atom.Search:
		return true
	}
	return false
}

// closesP: a start tag that closes an open <p>.
func closesP(a atom.Atom) bool {
	switch a {
	case atom.Address, atom.Article, atom.Aside, atom.Blockquote, atom.Center, atom.Details, atom.Dialog, atom.Dir,
		atom.Div, atom.Dl, atom.Fieldset, atom.Figcaption, atom.Figure, atom.Footer, atom.Header, atom.Hgroup,
		atom.Main, atom.Menu, atom.Nav, atom.Ol, atom.P, atom.Section, atom.Summary, atom.Ul, atom.H1, atom.H2,
		atom.H3, atom.H4, atom.H5, atom.H6, atom.Pre, atom.Listing, atom.Form, atom.Li, atom.Dd, atom.Dt, atom.Hr,
		atom.Xmp, atom.Search:
		return true
	}
	return false
}

func isHeading(a atom.Atom) bool {
	return a == atom.H1 || a == atom.H2 || a == atom.H3 || a == atom.H4 || a == atom.H5 || a == atom.H6
}

// inSelect: a <select> is open.
func (st *streamer) inSelect() bool { return st.open1[slotSelect] > 0 }

// scopeBoundary: elements that end the tree builder's search for an open
// element ("in scope").
func scopeBoundary(a atom.Atom) bool {
	switch a {
	case atom.Applet, atom.Caption, atom.Html, atom.Table, atom.Td, atom.Th, atom.Marquee, atom.Object, atom.Template:
		return true
	}
	return false
}

// closeInScope closes the innermost open element that match says, if
// one is open before an element stop says.
func (st *streamer) closeInScope(match, stop func(atom.Atom) bool) {
	for i := len(st.stack) - 1; i >= st.floor(); i-- {
		x := st.stack[i].a
		if match(x) {
			st.popTo(i)
			return
		}
		if stop(x) {
			return
		}
	}
}

// optionalEnd: elements the tree builder closes without their end tag.
func optionalEnd(a atom.Atom) bool {
	switch a {
	case atom.P, atom.Li, atom.Dd, atom.Dt, atom.Option, atom.Optgroup, atom.Rb, atom.Rp, atom.Rt, atom.Rtc,
		atom.Tbody, atom.Td, atom.Tfoot, atom.Th, atom.Thead, atom.Tr, atom.Caption, atom.Colgroup:
		return true
	}
	return false
}

// popTo closes the open elements down to stack[i], that one included.
// Closing on the way one that matters to the lines (a link, a heading, a
// hidden or skipped element, a table part) is a tree the builder makes
// otherwise.
func (st *streamer) popTo(i int) {
	for len(st.stack)-1 > i {
		top := st.stack[len(st.stack)-1]
		if !optionalEnd(top.a) && (top.role != elNone && top.role != elBlock || scopeBoundary(top.a) || formatting(top.a)) {
			st.soup = true
		}
		st.pop()
	}
	st.pop()
}

// formatting: the tree builder's formatting elements, which it reopens
// after closing them out of order.
func formatting(a atom.Atom) bool {
	switch a {
	case atom.A, atom.B, atom.Big, atom.Code, atom.Em, atom.Font, atom.I, atom.Nobr, atom.S, atom.Small,
		atom.Strike, atom.Strong, atom.Tt, atom.U:
		return true
	}
	return false
}

func (st *streamer) endTag(name []byte) {
	st.dropNL = false
	a := atom.Lookup(name)
	if st.foreign > 0 && (a == atom.P || a == atom.Br) {
		st.soup = true // they break out of foreign content
	}
	if a == atom.Form && (len(st.stack) == 0 || st.stack[len(st.stack)-1].a != atom.Form) {
		st.soup = true // the builder closes a form without closing what is in it
	}
	if isHeading(a) && st.quiet == 0 {
		// Any heading's end tag closes the open heading, whatever its level.
		for i := len(st.stack) - 1; i >= st.floor(); i-- {
			if isHeading(st.stack[i].a) {
				a, name = st.stack[i].a, []byte(st.stack[i].a.String())
				break
			}
		}
	}
	if st.foreign == 0 && st.quiet == 0 {
		switch a {
		case atom.Br:
			st.childOfHeading()
			st.f.flush() // </br> is a <br>
			return
		case atom.Body, atom.Html, atom.Head:
			return // content after </body> is the body's
		}
	}
	i := len(st.stack) - 1
	for ; i >= st.floor(); i-- {
		if el := st.stack[i]; el.a == a && (a != 0 || el.name == string(name)) {
			break
		}
	}
	if i < st.floor() {
		i = -1
	}
	if i < 0 {
		if a == atom.P && st.quiet == 0 && st.foreign == 0 {
			st.childOfHeading()
			st.f.flush() // </p> alone is an empty paragraph
		}
		return // an end tag of nothing open: ignored
	}
	if st.quiet == 0 && st.foreign == 0 && st.endMoves(a, i) {
		st.soup = true
	}
	st.popTo(i)
}

// endMoves: the end tag of stack[i], with elements open inside it, is one
// the tree builder ignores (the element is not in its scope; a special
// element stands before an inline one's) or answers by moving elements
// (a formatting element closed out of order).
func (st *streamer) endMoves(a atom.Atom, i int) bool {
	if i == len(st.stack)-1 {
		return false
	}
	if formatting(a) {
		return true
	}
	for _, el := range st.stack[i+1:] {
		x := el.a
		switch {
		case !special(a) && special(x):
			return true
		case a == atom.Li && (x == atom.Ul || x == atom.Ol), a == atom.P && x == atom.Button:
			return true
		case tableFamily(a):
			if x == atom.Html || x == atom.Table || x == atom.Template {
				return true
			}
		case scopeBoundary(x):
			return true
		}
	}
	return false
}

// tableFamily: a table and its parts.
func tableFamily(a atom.Atom) bool {
	switch a {
	case atom.Table, atom.Tbody, atom.Thead, atom.Tfoot, atom.Tr, atom.Td, atom.Th, atom.Caption, atom.Colgroup:
		return true
	}
	return false
}

// pop closes the innermost open element.
func (st *streamer) pop() {
	el := st.stack[len(st.stack)-1]
	st.stack = st.stack[:len(st.stack)-1]
	if k := slot(el.a); k >= 0 {
		st.open1[k]--
	}
	switch el.a {
	case atom.Table:
		st.tables--
	case atom.Form:
		st.forms--
	}
	switch el.role {
	case elSkip:
		st.unquiet()
		if el.a == atom.Svg || el.a == atom.Math {
			st.foreign--
		}
	case elHidden:
		st.unquiet()
		if t := string(st.capture); looksLikeJSONText(t) {
			st.f.addJSON(t)
		}
		st.capture = st.capture[:0]
	case elScript:
		st.unquiet()
		st.f.addJSON(string(st.capture))
		st.capture = st.capture[:0]
	case elTitle:
		st.unquiet()
		if st.f.title == "" {
			st.f.title = collapse(string(st.capture))
		}
		st.capture = st.capture[:0]
	case elLink:
		st.f.endLink(el.start, el.href)
	case elHeading:
		if len(st.f.buf) > 0 {
			st.f.heading = true
		}
		st.f.flush()
	case elBlock:
		st.f.flush()
	}
	if el.a == atom.Pre {
		st.pre--
	}
	if (el.a == atom.Svg || el.a == atom.Math) && el.role == elNone && st.quiet > 0 {
		st.foreign--
	}
}

// tableOnly: tags the tree builder reads only inside a table.
func tableOnly(a atom.Atom) bool {
	switch a {
	case atom.Caption, atom.Col, atom.Colgroup, atom.Tbody, atom.Td, atom.Tfoot, atom.Th, atom.Thead, atom.Tr:
		return true
	}
	return false
}

// tableContext: elements whose children are table parts only.
func tableContext(a atom.Atom) bool {
	return a == atom.Table || a == atom.Tbody || a == atom.Thead || a == atom.Tfoot || a == atom.Tr
}

// tablePart: elements a table holds where they stand.
func tablePart(a atom.Atom) bool {
	switch a {
	case atom.Caption, atom.Colgroup, atom.Col, atom.Tbody, atom.Thead, atom.Tfoot, atom.Tr, atom.Td, atom.Th,
		atom.Script, atom.Style, atom.Template:
		return true
	}
	return false
}

// unquiet: a quiet element closed.
func (st *streamer) unquiet() {
	st.quiet--
	st.quiets = st.quiets[:len(st.quiets)-1]
}
