package parser

import (
	"html"
	"strings"
	"unicode"
	"unicode/utf8"
)

// collapse is record.CollapseSpace, working on bytes: ASCII is copied as
// is and only non-ASCII bytes are decoded to look for Unicode spaces.
func collapse(s string) string {
	// Fast path: nothing to change.
	clean := len(s) == 0 || (s[0] != ' ' && s[len(s)-1] != ' ')
	for i := 0; clean && i < len(s); i++ {
		c := s[i]
		switch {
		case c < ' ':
			clean = false
		case c == ' ':
			clean = s[i+1] != ' ' // s[len-1] is not a space, so i+1 is in range
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRuneInString(s[i:])
			if unicode.IsSpace(r) || r == utf8.RuneError && n == 1 {
				clean = false
			}
			i += n - 1
		}
	}
	if clean {
		return s
	}
	b := make([]byte, 0, len(s))
	space := false
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c <= ' ' {
				space = true
				i++
				continue
			}
			j := wordRunEnd(s, i, len(s), 0)
			if space && len(b) > 0 {
				b = append(b, ' ')
			}
			space = false
			b = append(b, s[i:j]...)
			i = j
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			space = true
			i += n
			continue
		}
		if space && len(b) > 0 {
			b = append(b, ' ')
		}
		space = false
		if r == utf8.RuneError && n == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return string(b)
}

// wordRunEnd returns where the run of printable ASCII starting at s[i]
// ends (at most at end): words and the single spaces between them, which
// collapsing copies at once. stop, if not 0, is one more byte that ends the
// run (a JSON literal's backslash).
func wordRunEnd(s string, i, end int, stop byte) int {
	word := func(c byte) bool { return c > ' ' && c < utf8.RuneSelf && c != stop }
	j := i + 1
	for j < end {
		if word(s[j]) {
			j++
		} else if s[j] == ' ' && j+1 < end && word(s[j+1]) {
			j += 2
		} else {
			break
		}
	}
	return j
}

// collapseBytes is collapse for a scratch buffer: it compacts b in place
// and allocates only the resulting string.
func collapseBytes(b []byte) string {
	w := 0
	space := false
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			i++
			if c <= ' ' {
				space = true
				continue
			}
			if space && w > 0 {
				b[w] = ' '
				w++
			}
			space = false
			b[w] = c
			w++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if unicode.IsSpace(r) {
			space = true
			i += n
			continue
		}
		if r == utf8.RuneError && n == 1 {
			// An invalid byte: U+FFFD is 3 bytes, more than it replaces,
			// so finish with the allocating version.
			head := string(b[:w])
			if space && w > 0 {
				head += " "
			}
			return head + collapse(string(b[i:]))
		}
		if space && w > 0 {
			b[w] = ' '
			w++
		}
		space = false
		w += copy(b[w:], b[i:i+n])
		i += n
	}
	return string(b[:w])
}

// isCJK reports whether r is a Han, Hiragana, Katakana or Hangul character or
// CJK punctuation (the ideographic full stop, full-width colon, …).
func isCJK(r rune) bool {
	if r < 0x2E80 {
		return false
	}
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r) ||
		(r >= 0x3000 && r <= 0x303F) || (r >= 0xFF00 && r <= 0xFFEF)
}

func hasCJK(s string) bool {
	for _, r := range s {
		if isCJK(r) {
			return true
		}
	}
	return false
}

// cjkDominant reports whether most letters of s are CJK: a Chinese title or
// abstract rather than an English line that mentions a Chinese word.
func cjkDominant(s string) bool {
	cjk, latin := 0, 0
	for _, r := range s {
		switch {
		case isCJK(r):
			cjk++
		case r < utf8.RuneSelf && (r|0x20 >= 'a' && r|0x20 <= 'z'):
			latin++
		}
	}
	// A CJK character carries about as much as a short English word.
	return cjk > 0 && cjk*4 >= latin
}

// splitTitleLine splits a visible title line "English title 中文标题" where
// the Chinese title starts at the first space-separated word holding a CJK
// character: "…Environment FlashFlex：适应异构…" splits before "FlashFlex：".
// A Chinese title may also begin with Latin words of its own, which then
// move to it (latinLead): "…Embedded Projects C/C++ 嵌入式项目的…" splits
// before "C/C++", and "FedSense: … Edge FedSense: 边缘的…" before the
// second "FedSense:".
func splitTitleLine(line string) (en, cn string) {
	line = strings.TrimSpace(line)
	pos := 0
	for pos < len(line) {
		sp := strings.IndexByte(line[pos:], ' ')
		word := line[pos:]
		if sp >= 0 {
			word = line[pos : pos+sp]
		}
		if hasCJK(word) {
			pos = latinLead(line, pos)
			return strings.TrimRight(line[:pos], titleSeparators+":："), strings.TrimLeft(line[pos:], titleSeparators)
		}
		if sp < 0 {
			break
		}
		pos += sp + 1
	}
	return line, ""
}

// titleSeparators may stand between an English title and its Chinese
// title ("Title / 标题", "Title | 标题", "Title — 标题"): no part of either.
const titleSeparators = " /|-—–／｜·"

// latinLead returns where the Chinese title starts, given that its first
// CJK word starts at pos: earlier, at the Latin words just before it that
// belong to it. A word belongs when it ends with a colon (no English title
// ends so; "Name: 中文…"), or when it is a term (two capitals, a digit or
// a symbol in it) that the English title used already ("C/C++", "GPU")
// and the Chinese title does not have further on.
// The English title keeps at least two words and never ends on a word
// such as "the" or "of".
func latinLead(line string, pos int) int {
	// Word starts, from the last one before pos back to the first.
	var buf [8]int
	starts := buf[:0]
	for end := pos; end > 0 && len(starts) < 8; { // 4 that may move, and the English left
		e := strings.TrimRight(line[:end], " ")
		if e == "" {
			break
		}
		st := strings.LastIndexByte(e, ' ') + 1
		starts = append(starts, st)
		end = st
	}
	n := len(starts)             // words before the Chinese title
	word := func(k int) string { // k-th word from the end, 0 the last
		end := pos
		if k > 0 {
			end = starts[k-1]
		}
		return strings.TrimRight(line[starts[k]:end], " ")
	}
	// The English before a word, as far as a title goes.
	before := func(k int) string { return line[max(0, starts[k]-2048):starts[k]] }
	k := 0 // words that move
	for k < 4 && n-k > 2 {
		w := word(k)
		// A word with a colon leads the Chinese title when the English
		// title has it too, or it is a term ("FedSense: …FedSense: 网络…",
		// "ViFi:"); else the colon stands between the two titles
		// ("…Partial Synchrony: 部分同步…").
		colon := k == 0 && (strings.HasSuffix(w, ":") || strings.HasSuffix(w, "：")) &&
			(usedBefore(before(k), w) || termLike(strings.TrimRight(w, ":：")))
		term := termLike(w) && usedBefore(before(k), w) &&
			!strings.Contains(line[pos:], strings.TrimRight(w, ":：,")) // the Chinese has it already
		if !colon && !term {
			break
		}
		k++
	}
	for k > 0 && endsEnglishBadly(word(k)) {
		k--
	}
	if k == 0 {
		return pos
	}
	return starts[k-1]
}

// termLike: an acronym or a name a Chinese title keeps in Latin letters:
// two capitals or more (GPU, ViFi), a digit (5G), or a symbol (C/C++, C#).
// A capitalised English word (Learning, Graph) is not one.
func termLike(w string) bool {
	caps := 0
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case c >= 'A' && c <= 'Z':
			caps++
		case isDigit(c) || c == '+' || c == '/' || c == '#':
			return true
		}
	}
	return caps >= 2
}

func usedBefore(text, w string) bool {
	w = strings.TrimRight(w, ":：,")
	for text != "" {
		text = strings.TrimLeft(text, " ")
		word := text
		if i := strings.IndexByte(text, ' '); i >= 0 {
			word, text = text[:i], text[i:]
		} else {
			text = ""
		}
		if word != "" && strings.TrimRight(word, ":：,") == w {
			return true
		}
	}
	return false
}

// endsEnglishBadly: a word no English title ends on.
func endsEnglishBadly(w string) bool {
	switch strings.ToLower(w) {
	case "the", "a", "an", "of", "on", "in", "for", "to", "with", "and", "or", "via", "by", "at", "from", "into",
		"over", "under", "between", "after", "before", "about", "using", "across", "toward", "towards", "during",
		"without", "within", "through", "beyond", "against", "among", "versus", "vs", "vs.", "per", "like", "than",
		"as", "is", "are", "its", "their", "our", "upon", "onto", "beside", "behind", "since", "until", "near":
		return true
	}
	return false
}

// blockTags are the tags in abstracts that separate text; the others
// (i, em, sub, MathML, …) are inline and vanish without a space.
var blockTags = map[string]bool{
	"p": true, "div": true, "br": true, "li": true, "ul": true, "ol": true, "tr": true,
	"td": true, "table": true, "h1": true, "h2": true, "h3": true, "h4": true, "h5": true,
	"h6": true, "sec": true, "title": true, "label": true, "list-item": true, "list": true,
	"abstract": true, "section": true, "blockquote": true, "hr": true, "math": false,
}

// inlineTags are tags known to appear in abstracts and titles whose markup is
// dropped while their text is kept.
var inlineTags = map[string]bool{
	"i": true, "em": true, "b": true, "strong": true, "bold": true, "italic": true,
	"u": true, "sub": true, "sup": true, "span": true, "a": true, "uri": true, "sc": true,
	"font": true, "small": true, "big": true, "tt": true, "code": true, "underline": true,
	"inline-formula": true, "disp-formula": true, "tex-math": true, "alternatives": true,
	"ext-link": true, "xref": true, "named-content": true, "styled-content": true,
	"monospace": true, "roman": true, "strike": true, "img": true, "inline-graphic": true,
}

// plainText turns an abstract or title that may hold HTML, JATS or MathML
// markup into plain text: tags stripped (block tags become a space), entities
// decoded, NUL (the site's "\u0000" line breaks) made a space and white space
// collapsed. A '<' that does not open a known tag is kept as text.
func plainText(s string) string {
	if strings.IndexByte(s, '<') < 0 && strings.IndexByte(s, '&') < 0 {
		return collapse(s) // collapse also turns NUL into a space
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c == 0 {
			b.WriteByte(' ')
			i++
			continue
		}
		if c != '<' {
			b.WriteByte(c)
			i++
			continue
		}
		name, end := tagAt(s, i)
		if end < 0 {
			b.WriteByte(c)
			i++
			continue
		}
		if blockTags[name] {
			b.WriteByte(' ')
		}
		i = end
	}
	out := b.String()
	if strings.IndexByte(out, '&') >= 0 {
		out = html.UnescapeString(out)
	}
	return collapse(out)
}

// tagAt parses a tag at s[i] == '<' and returns its lower-cased local name
// and the offset past its '>', or end < 0 when s[i:] does not start a known
// tag. Names with a namespace prefix (mml:mi, jats:p) and every MathML
// element count as known.
func tagAt(s string, i int) (name string, end int) {
	j := i + 1
	if j < len(s) && s[j] == '/' {
		j++
	}
	k := j
	for k < len(s) && (isASCIILetter(s[k]) || (k > j && (s[k] == '-' || s[k] == ':' || (s[k] >= '0' && s[k] <= '9')))) {
		k++
	}
	if k == j || k >= len(s) {
		return "", -1
	}
	if c := s[k]; c != '>' && c != ' ' && c != '/' && c != '\t' && c != '\n' {
		return "", -1
	}
	full := strings.ToLower(s[j:k])
	local := full
	if p := strings.LastIndexByte(full, ':'); p >= 0 {
		local = full[p+1:]
	}
	known := blockTags[local] || inlineTags[local] || local != full || isMathMLTag(local)
	if !known {
		return "", -1
	}
	gt := strings.IndexByte(s[k:], '>')
	if gt < 0 || gt > 2048 {
		return "", -1
	}
	return local, k + gt + 1
}

func isASCIILetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func isMathMLTag(name string) bool {
	switch name {
	case "math", "mi", "mo", "mn", "ms", "mtext", "mrow", "msub", "msup", "msubsup",
		"mfrac", "msqrt", "mroot", "mover", "munder", "munderover", "mtable", "mtr",
		"mtd", "mstyle", "mspace", "mpadded", "mphantom", "mfenced", "menclose",
		"semantics", "annotation", "annotation-xml", "mmultiscripts", "mprescripts", "none":
		return true
	}
	return false
}

// splitAuthors splits an authors string on the separators the site uses
// (", ", ";", " ,&nbsp;", ",&nbsp;", " , ", and the Chinese "，" and "、"),
// turns non-breaking spaces into spaces, trims, and drops empty parts. Odd
// names ("MollyYiming") are kept as the source gives them.
func splitAuthors(s string) []string {
	if strings.IndexByte(s, '&') >= 0 {
		s = html.UnescapeString(s)
	}
	var out []string
	add := func(p string) {
		// Trimmed first, most names are already clean: no copy.
		if p = collapse(strings.TrimSpace(p)); p != "" && hasLetterOrDigit(p) {
			out = append(out, p) // (a bullet or a stray mark is no name)
		}
	}
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		n := 0 // length of the separator at i
		switch {
		case c == ',' || c == ';':
			n = 1
		case c >= utf8.RuneSelf && (strings.HasPrefix(s[i:], "，") || strings.HasPrefix(s[i:], "、") || strings.HasPrefix(s[i:], "；")):
			n = 3
		}
		if n == 0 {
			i++
			continue
		}
		add(s[start:i])
		i += n
		start = i
	}
	add(s[start:])
	if n := len(out); n > 0 {
		// "…, Weihao Cui et al.": the list's own end, no part of a name.
		last := out[n-1]
		for _, tail := range []string{" et al.", " et al", " 等"} {
			if len(last) > len(tail) && strings.HasSuffix(last, tail) {
				out[n-1] = strings.TrimSpace(last[:len(last)-len(tail)])
			}
		}
		if out[n-1] == "et al." || out[n-1] == "et al" || out[n-1] == "等" {
			out = out[:n-1]
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// foldKey is the form used to compare visible text with JSON text: plain
// text, collapsed, lower-cased.
func foldKey(s string) string {
	return strings.ToLower(collapse(s))
}
