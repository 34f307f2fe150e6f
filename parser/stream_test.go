package parser

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"
)

// domLines flattens s from goquery's DOM, as Parse did before the stream.
func domLines(s string) ([]rawLine, string, bool) {
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(s))
	if err != nil {
		return nil, "", false
	}
	var lines []rawLine
	title := flattenHTML(doc, func(r rawLine) { lines = append(lines, r) })
	return lines, title, true
}

// sameLines says where two flattenings differ, or "".
func sameLines(a, b []rawLine) string {
	show := func(l rawLine) string {
		h := ""
		if l.hint != nil {
			h = fmt.Sprintf(" hint=%+v", *l.hint)
		}
		return fmt.Sprintf("%q json=%v mark=%d%s", l.text, l.json, l.mark, h)
	}
	for i := range max(len(a), len(b)) {
		switch {
		case i >= len(a):
			return fmt.Sprintf("line %d: stream has none, DOM %s", i, show(b[i]))
		case i >= len(b):
			return fmt.Sprintf("line %d: stream %s, DOM has none", i, show(a[i]))
		case show(a[i]) != show(b[i]):
			return fmt.Sprintf("line %d: stream %s, DOM %s", i, show(a[i]), show(b[i]))
		}
	}
	return ""
}

// htmlFixtures are the HTML pages under fixtures/.
func htmlFixtures(t testing.TB) map[string][]byte {
	out := map[string][]byte{}
	for _, pat := range []string{"../fixtures/*/*.htm", "../fixtures/*/*/*.htm"} {
		files, _ := filepath.Glob(pat)
		for _, f := range files {
			data, err := readRepoFile(strings.TrimPrefix(filepath.ToSlash(f), "../"))
			if err != nil {
				t.Fatal(err)
			}
			out[f] = data
		}
	}
	return out
}

// The stream reads every HTML page of the fixtures as the DOM does, and
// none is soup: Parse reads them without a tree.
func TestStreamMatchesDOMOnFixtures(t *testing.T) {
	pages := htmlFixtures(t)
	if len(pages) < 15 {
		t.Fatalf("%d HTML fixtures", len(pages))
	}
	for name, data := range pages {
		text, _, _, _ := decodeBytes(data, "", "", true)
		var got []rawLine
		title, soup, deep := flattenStream(text, func(r rawLine) { got = append(got, r) })
		want, wantTitle, ok := domLines(string(text))
		if !ok || soup || deep {
			t.Errorf("%s: dom ok %v, soup %v, deep %v", name, ok, soup, deep)
			continue
		}
		if d := sameLines(got, want); d != "" || title != wantTitle {
			t.Errorf("%s: %s; title %q, want %q", name, d, title, wantTitle)
		}
	}
}

// Markup the stream reads as the DOM does, and markup it hands to the DOM.
func TestStreamMarkup(t *testing.T) {
	for _, tc := range []struct {
		html string
		soup bool
	}{
		{`<ul><li>One<li>Two</ul>`, false},
		{`<p>One<div>Two</div>Three`, false},
		{`<div><p>One<p>Two</div>`, false},
		{`<table><tr><td>a<td>b<tr><td>c</table>`, false},
		{`<h2><a href="/literature/12.htm">A Title</a> 中文</h2>`, false},
		{`<pre>
x
y</pre>`, false},
		{`<div hidden>{"title":"T","paperid":"1"}</div><p>after`, false},
		{`<div style="display:none"><span>{"title":"T",</span>"paperid":"1"}</div>`, false},
		{`<script type="application/json">{"title":"T","paperid":"1"}</script>`, false},
		{`<svg><text>not shown</text></svg><p>shown`, false},
		{`<img data-paper='{"title":"T","paperid":"9"}'>`, false},
		{`<p>a</br>b</p>`, false},
		{`<dl><dt>a<dd>b<dt>c</dl>`, false},
		{`<li><section><li>x</section></li>`, false},
		{`<p>x</p></body>tail</html>more`, false},
		// Soup: the tree builder moves or reopens these.
		{`<a href="/x">one<a href="/y">two</a>`, true},
		{`<table>stray<tr><td>a</td></tr></table>`, true},
		{`<table><div>x</div><tr><td>a</table>`, true},
		{`<b><p>x</b>y</p>`, true},
		{`<div><span>x</div>y</span>`, false},
		{`<span><div>x</span>y</div>`, true},
		{`<svg><p>breaks out</p></svg>`, true},
		{`<h1>a<h2>b</h2></h1>`, true},
		{`<h2>Title</h3>more text<p>x</p>`, false},
		{`<form><div>x</form>y</div>`, true},
		{`<form>a<form>b</form>c</form>d`, true},
		{`<select><input>after text</select>`, true},
		{`<svg><style></svg><p>shown</p>`, true},
		{`<svg><textarea><p>x</p></textarea></svg>y`, true},
		{`<svg><![CDATA[ x > </svg> y ]]></svg>z`, true},
		{`<svg></p>x</svg>y`, true},
		{`<base data-x='{"title":"T","paperid":"1"}'><p>x`, true},
		{`<p>a<search>b</search>`, false},
		{`<html hidden><p>x</p>`, true},
		{`<body style="display:none"><p>x`, true},
		{`<table hidden>00`, true},
	} {
		var got []rawLine
		title, soup, _ := flattenStream([]byte(tc.html), func(r rawLine) { got = append(got, r) })
		if soup != tc.soup {
			t.Errorf("%q: soup %v, want %v", tc.html, soup, tc.soup)
		}
		if soup {
			continue
		}
		want, wantTitle, _ := domLines(tc.html)
		if d := sameLines(got, want); d != "" || title != wantTitle {
			t.Errorf("%q: %s", tc.html, d)
		}
	}
}

// FuzzStreamMatchesDOM: wherever the stream does not say soup (or too
// deep for the DOM), its lines are the DOM's.
func FuzzStreamMatchesDOM(f *testing.F) {
	for _, data := range htmlFixtures(f) {
		f.Add(data)
	}
	for _, s := range []string{`<ul><li>One<li>Two</ul>`, `<table><tr><td>a<td>b</table>`, `<p>a<div>b</div>`,
		`<h3><a href="https://doi.org/10.1/x">全文链接</a></h3>`, `<pre>\nx</pre>`, `<div hidden><p>{"title":"a"}</div>`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 || bytes.Contains(data, []byte("\r")) {
			return
		}
		var got []rawLine
		title, soup, deep := flattenStream(data, func(r rawLine) { got = append(got, r) })
		if soup || deep {
			return
		}
		want, wantTitle, ok := domLines(string(data))
		if !ok {
			return
		}
		if d := sameLines(got, want); d != "" || title != wantTitle {
			t.Errorf("%s; title %q, want %q", d, title, wantTitle)
		}
	})
}

// The parses of a process hold at most parseBudget of expected peak
// memory at once: a page whose expected peak is the whole budget waits
// for every other parse, and no other starts beside it.
func TestParseBudget(t *testing.T) {
	release := admit(parseBudget) // a page too large for the budget
	if parsing.TryAcquire(1) {
		t.Fatal("a parse was admitted beside one that holds the whole budget")
	}
	release()
	small := admit(100 << 10) // a 100 KB page: 35 × its size
	if !parsing.TryAcquire(parseBudget - 100<<10*domPeakRatio) {
		t.Fatal("the rest of the budget is not free beside a small page")
	}
	parsing.Release(parseBudget - 100<<10*domPeakRatio)
	small()
}

// tokensOf is a page's tokens as flattenStream reads them: text (adjacent
// texts joined, comments and doctypes left out), tags with their
// attributes.
func tokensOf(z tokenizer) []string {
	var out []string
	text := ""
	for {
		tt := z.Next()
		if tt != html.TextToken && text != "" && tt != html.CommentToken && tt != html.DoctypeToken {
			out = append(out, "text "+text)
			text = ""
		}
		switch tt {
		case html.ErrorToken:
			return out
		case html.TextToken:
			text += string(z.Text())
		case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken:
			name, more := z.TagName()
			t := fmt.Sprintf("%d <%s", tt, name)
			for more {
				var k, v []byte
				k, v, more = z.TagAttr()
				t += fmt.Sprintf(" %s=%q", k, v)
			}
			out = append(out, t)
		}
	}
}

// The lexer's tokens are the tokenizer's wherever it reads a page.
func TestLexerMatchesTokenizerOnFixtures(t *testing.T) {
	read := 0
	for name, data := range htmlFixtures(t) {
		lx, ok := lex(data)
		if !ok {
			continue
		}
		read++
		got, want := tokensOf(lx), tokensOf(html.NewTokenizer(bytes.NewReader(data)))
		if d := tokenDiff(got, want); d != "" {
			t.Errorf("%s: %s", name, d)
		}
	}
	if read < 15 {
		t.Errorf("the lexer read %d fixture pages: it should read the site's markup", read)
	}
}

func tokenDiff(got, want []string) string {
	for i := range max(len(got), len(want)) {
		g, w := "(none)", "(none)"
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return fmt.Sprintf("token %d: lexer %q, tokenizer %q", i, g, w)
		}
	}
	return ""
}

// FuzzLexerMatchesTokenizer: wherever the lexer reads an input, its
// tokens are x/net/html's tokenizer's.
func FuzzLexerMatchesTokenizer(f *testing.F) {
	for _, data := range htmlFixtures(f) {
		f.Add(data)
	}
	for _, s := range []string{`<p class="a">x &amp; y</p>`, `<script>if (a<b) {}</script>`, `<title>A &lt; B</title>`,
		`<!-- c --><!DOCTYPE html><a href=/x data-j='{"title":"t"}'>l</a>`, `a < b <br/> <img src=x alt="">`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lx, ok := lex(data)
		if !ok {
			return
		}
		if d := tokenDiff(tokensOf(lx), tokensOf(html.NewTokenizer(bytes.NewReader(data)))); d != "" {
			t.Error(d)
		}
	})
}

// A page past the line cap keeps the lines up to it, and says so: a page
// warning and a finding (no listing page has that many lines).
func TestLineCap(t *testing.T) {
	defer func(n int) { maxPageLines = n }(maxPageLines)
	maxPageLines = 100
	page := []byte(strings.Repeat("x\n", 500))
	p, err := Parse(page, Options{Format: FormatText})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range p.Findings(testNow) {
		found = found || strings.Contains(f.Why, "more lines than a listing page")
	}
	if !slices.Contains(p.Warnings, PageWarnTooManyLines) || !found {
		t.Errorf("warnings %q, finding %v", p.Warnings, found)
	}
}

// A page nested past the element cap is read in bounded memory, with the
// page warning html-fallback, and the lines after it still read.
func TestElementCap(t *testing.T) {
	page := strings.Repeat("<div>", 5*maxStack) + "deep" + strings.Repeat("</div>", 5*maxStack) + "<p>after</p>"
	var lines []string
	_, _, deep := flattenStream([]byte(page), func(r rawLine) { lines = append(lines, r.text) })
	if !deep || !slices.Equal(lines, []string{"deep", "after"}) {
		t.Errorf("deep %v, lines %q", deep, lines)
	}
	p, _ := Parse([]byte(page), Options{})
	if !slices.Contains(p.Warnings, PageWarnHTMLFallback) {
		t.Errorf("warnings %q", p.Warnings)
	}
}

// Soup in a page nested deeper than the tree builder takes (512 open
// elements, fewer than the stream's cap): the stream, which stopped at
// the soup for the tree, reads the page whole after all, with the page
// warning html-fallback.
func TestSoupTooDeepForTheTree(t *testing.T) {
	page := "<html><body>" + strings.Repeat("<div>", 600) + "<p><a href=/x>first<a href=/y>second</a></a></p><p>after the soup</p>" +
		strings.Repeat("</div>", 600) + "</body></html>"
	var lines []string
	p := &Page{Format: FormatHTML}
	flattenLines([]byte(page), p, func(r rawLine) { lines = append(lines, r.text) })
	if !slices.Contains(lines, "after the soup") || !slices.Contains(p.Warnings, PageWarnHTMLFallback) {
		t.Errorf("lines %q, warnings %q", lines, p.Warnings)
	}
}
