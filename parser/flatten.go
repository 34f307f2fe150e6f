package parser

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/litcrawl/litcrawl/record"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// rawLine is one line of flattened text before classification. json marks a
// JSON candidate that did not come from visible text (a
// <script type="application/json"> body or a data attribute).
type rawLine struct {
	text string
	json bool
	// What the markup says of a visible line (HTML only):
	mark lineMark
	hint *lineHint // links the line holds, when it holds any that matter
}

// lineHint is what the links of a line say.
type lineHint struct {
	paperID string // the site id of a link to /literature/{id}.htm that is the line
	doi     string // the DOI of a doi.org link on the line
}

// lineMark is what the markup says a visible line is.
type lineMark uint8

const (
	markNone       lineMark = iota
	markTitle               // a heading, or a link to the paper's page that is the whole line
	markLinksOnly           // only short links (navigation, a pager, a language switch)
	markTitleLine           // (line.strong) a title line: English, then Chinese
	markPlain               // (line.strong) a text line that is no title by content
	markNames               // (appendText) a line labelled as the names: "Authors: …", "作者："
	markAbstract            // (appendText) a line labelled as the abstract: "Abstract: …"
	markAbstractCN          // (appendText) a line labelled as the Chinese abstract: "摘要："
)

// flattenHTML walks the DOM and flattens visible text into lines: block-level
// elements and <br> end a line, inline elements keep their text together,
// script, style and other invisible elements are skipped, except JSON
// scripts, whose bodies become JSON candidate lines. It also returns the
// document's <title>.
func flattenHTML(doc *goquery.Document, emit func(rawLine)) (title string) {
	f := &flattener{emit: emit}
	for _, n := range doc.Nodes {
		f.walk(n, walkState{})
	}
	f.flush()
	return f.title
}

type flattener struct {
	emit  func(rawLine) // each line, as it ends
	buf   []byte
	title string
	// The current line's markup: text inside links, headings.
	linkBytes  int    // bytes of the line's text inside links
	links      int    // links with text on the line
	longLink   bool   // a link's text is longer than navigation's
	heading    bool   // text inside h1..h6
	paperID    string // a link to /literature/{id}.htm
	paperBytes int    // that link's text bytes
	doi        string // a doi.org link's DOI
	toolLink   bool   // a link's text is a tool's (toolWords)
}

// maxNavLink is the longest link text, in bytes, of a navigation line.
const maxNavLink = 48

// toolWords are the texts of a paper's tool links ("Full text", "PDF",
// "查看详情"): a link with one of them is no title, even to the paper's page.
var toolWords = map[string]bool{"full text": true, "fulltext": true, "pdf": true, "html": true, "read more": true, "more": true,
	"details": true, "view": true, "view article": true, "download": true, "abstract": true, "cite": true, "export": true,
	"详情": true, "查看详情": true, "全文": true, "下载": true, "阅读全文": true, "查看全文": true, "原文链接": true, "全文链接": true,
	"摘要": true, "引用": true, "收藏": true, "分享": true, "导出": true, "更多": true}

func (f *flattener) flush() {
	if len(f.buf) == 0 {
		f.resetMarks()
		return
	}
	text := collapsedLen(f.buf) // (before collapseBytes, which works in place)
	if t := collapseBytes(f.buf); t != "" {
		rl := rawLine{text: t}
		if f.doi != "" {
			rl.hint = &lineHint{doi: f.doi}
		}
		switch {
		case f.paperID != "" && f.paperBytes*2 >= text && (f.heading || !f.toolLink):
			rl.mark, rl.hint = markTitle, &lineHint{paperID: f.paperID, doi: f.doi}
		case f.heading:
			rl.mark = markTitle
		case f.links >= 2 && !f.longLink && f.paperID == "" && f.doi == "" && f.linkBytes+2*f.links >= text,
			f.links == 1 && f.linkBytes == text && f.toolLink && f.doi == "":
			// Navigation, or one short link alone on its line ("Full
			// text", "PDF", "查看详情"), which is no title: a paper's
			// title is longer, or a heading.
			rl.mark = markLinksOnly
		}
		f.emit(rl)
	}
	f.buf = f.buf[:0]
	f.resetMarks()
}

// collapsedLen is the length of b with its white space collapsed as a
// line's is (trimmed, each run one space), in characters, Chinese ones
// left out: pretty-printed markup counts as compact markup does, and a
// title line's Chinese title does not outweigh the link on its English
// title.
func collapsedLen(b []byte) int {
	n, space := 0, false
	b = bytes.TrimSpace(b)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		b = b[size:]
		switch {
		case r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f':
			space = true
			continue
		case isCJK(r):
			continue
		}
		if space {
			n++
			space = false
		}
		n++
	}
	return n
}

func (f *flattener) resetMarks() {
	f.linkBytes, f.links, f.longLink, f.heading, f.paperID, f.paperBytes, f.doi, f.toolLink = 0, 0, false, false, "", 0, "", false
}

// link walks an <a> element, noting what its text and href say of the line.
func (f *flattener) link(n *html.Node, st walkState) {
	start := len(f.buf)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		f.walk(c, st)
	}
	href := ""
	for _, a := range n.Attr {
		if a.Key == "href" {
			href = a.Val
			break
		}
	}
	f.endLink(start, href)
}

// endLink notes what a link that opened at start (len(f.buf) then) says
// of the line: its text, and its href (the first).
func (f *flattener) endLink(start int, href string) {
	if len(f.buf) < start {
		start = 0 // a line ended inside the link
	}
	t := bytes.TrimSpace(f.buf[start:])
	if len(t) == 0 {
		return
	}
	f.links++
	f.linkBytes += len(t)
	if len(t) <= 24 && toolWords[strings.ToLower(strings.Trim(string(t), " >»›"))] {
		f.toolLink = true
	}
	if len(t) > maxNavLink {
		f.longLink = true
	}
	if id := literatureID(href); id != "" && (f.paperID == "" || f.paperID == id) {
		// (the English title's link and the Chinese title's, to one paper)
		f.paperID = id
		f.paperBytes += collapsedLen(t)
	} else if strings.Contains(href, "doi.org/") {
		if d := record.ParseDOI(href).DOI; d != "" {
			f.doi = d
		}
	}
}

// literatureID is the site id of a link to a paper's page,
// "/literature/{id}.htm" (or "/literaturecn/…"), or "".
func literatureID(href string) string {
	i := strings.Index(href, "/literature")
	if i < 0 {
		return ""
	}
	rest := href[i+len("/literature"):]
	rest = strings.TrimPrefix(rest, "cn")
	if !strings.HasPrefix(rest, "/") {
		return ""
	}
	rest = rest[1:]
	j := 0
	for j < len(rest) && isDigit(rest[j]) {
		j++
	}
	if j == 0 || j > 20 || !strings.HasPrefix(rest[j:], ".htm") {
		return ""
	}
	return rest[:j]
}

func (f *flattener) addJSON(s string) {
	if s = strings.TrimSpace(s); s != "" {
		f.flush()
		f.emit(rawLine{text: s, json: true})
	}
}

// walkState is what the ancestors of a node decide for it.
type walkState struct {
	pre bool // inside <pre>: newlines end lines
}

func (f *flattener) walk(n *html.Node, st walkState) {
	switch n.Type {
	case html.TextNode:
		f.text(n.Data, st.pre)
		return
	case html.ElementNode:
	case html.DocumentNode:
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			f.walk(c, st)
		}
		return
	default: // comments, doctype
		return
	}
	switch n.DataAtom {
	case atom.Script:
		if isJSONScript(n) {
			f.addJSON(textContent(n))
		}
		return
	case atom.Title:
		if f.title == "" {
			f.title = collapse(textContent(n))
		}
		return
	case atom.Style, atom.Noscript, atom.Template, atom.Iframe, atom.Object,
		atom.Svg, atom.Math, atom.Select, atom.Button, atom.Input, atom.Textarea,
		atom.Head, atom.Meta, atom.Link:
		if n.DataAtom == atom.Head {
			// <head> holds <title> and JSON scripts; nothing else is visible.
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.ElementNode && (c.DataAtom == atom.Title || c.DataAtom == atom.Script) {
					f.walk(c, st)
				}
			}
		}
		return
	case atom.Br, atom.Hr:
		f.flush()
		return
	case atom.Pre:
		st.pre = true
	}
	if hiddenElement(n) {
		// Not shown, but the JSON of a block is often kept in a hidden
		// element: its whole text (read once) is a candidate if it looks
		// like JSON.
		f.jsonAttrs(n)
		if t := textContent(n); looksLikeJSONText(t) {
			f.addJSON(t)
		}
		return
	}
	if n.DataAtom == atom.A {
		f.jsonAttrs(n)
		f.link(n, st)
		return
	}
	block := isBlock(n.DataAtom)
	if block {
		f.flush()
	}
	f.jsonAttrs(n)
	heading := false
	switch n.DataAtom {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		heading = true
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if heading && len(f.buf) > 0 {
			f.heading = true
		}
		f.walk(c, st)
	}
	if heading && len(f.buf) > 0 {
		f.heading = true
	}
	if block {
		f.flush()
	} else if n.DataAtom == atom.Td || n.DataAtom == atom.Th {
		f.flush()
	}
}

// jsonAttrs adds the JSON held in data-* attributes as candidates.
func (f *flattener) jsonAttrs(n *html.Node) { f.jsonAttrsOf(n.Attr) }

func (f *flattener) jsonAttrsOf(attrs []html.Attribute) {
	for _, a := range attrs {
		if strings.HasPrefix(a.Key, "data-") && looksLikeJSONAttr(a.Val) {
			f.addJSON(a.Val)
		}
	}
}

// text appends a text node to the current line. Outside <pre>, newlines are
// just white space, as a browser shows them.
func (f *flattener) text(s string, pre bool) {
	if !pre {
		f.buf = append(f.buf, s...)
		return
	}
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			f.buf = append(f.buf, s...)
			return
		}
		f.buf = append(f.buf, s[:i]...)
		f.flush()
		s = s[i+1:]
	}
}

func isBlock(a atom.Atom) bool {
	switch a {
	case atom.P, atom.Div, atom.Li, atom.Ul, atom.Ol, atom.Dl, atom.Dt, atom.Dd,
		atom.Tr, atom.Td, atom.Th, atom.Table, atom.Tbody, atom.Thead, atom.Tfoot,
		atom.Caption, atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6,
		atom.Section, atom.Article, atom.Header, atom.Footer, atom.Nav, atom.Main,
		atom.Aside, atom.Blockquote, atom.Pre, atom.Form, atom.Fieldset, atom.Figure,
		atom.Figcaption, atom.Address, atom.Body, atom.Html, atom.Center, atom.Details,
		atom.Summary, atom.Legend:
		return true
	}
	return false
}

// hiddenElement: elements a browser does not show (hidden attribute,
// display:none or visibility:hidden inline style).
func hiddenElement(n *html.Node) bool {
	for _, a := range n.Attr {
		switch a.Key {
		case "hidden":
			return true
		case "style":
			v := strings.ReplaceAll(strings.ToLower(a.Val), " ", "")
			if strings.Contains(v, "display:none") || strings.Contains(v, "visibility:hidden") {
				return true
			}
		}
	}
	return false
}

// looksLikeJSONText: hidden text that may hold a paper object.
func looksLikeJSONText(s string) bool {
	return strings.Contains(s, `"title"`) || strings.Contains(s, "&quot;title&quot;")
}

func isJSONScript(n *html.Node) bool {
	for _, a := range n.Attr {
		if a.Key == "type" {
			t := strings.ToLower(strings.TrimSpace(a.Val))
			return t == "application/json" || t == "application/ld+json" || strings.HasSuffix(t, "+json")
		}
	}
	return false
}

func looksLikeJSONAttr(v string) bool {
	v = strings.TrimSpace(v)
	return strings.HasPrefix(v, "{") && strings.Contains(v, `"title"`)
}

func textContent(n *html.Node) string {
	if n.FirstChild != nil && n.FirstChild == n.LastChild && n.FirstChild.Type == html.TextNode {
		return n.FirstChild.Data
	}
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// splitTextLines splits a plain-text capture into trimmed, non-empty
// lines, given to emit one by one.
func splitTextLines(s string, emit func(rawLine)) {
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		var l string
		if i < 0 {
			l, s = s, ""
		} else {
			l, s = s[:i], s[i+1:]
		}
		if t := collapse(l); t != "" {
			emit(rawLine{text: t})
		}
	}
}
