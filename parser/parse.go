package parser

import (
	"context"

	"bytes"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/PuerkitoBio/goquery"

	"github.com/litcrawl/litcrawl/record"
)

// Format says how to read the bytes of a page.
type Format string

const (
	FormatAuto Format = ""     // sniff: HTML when the first non-blank byte is '<'
	FormatHTML Format = "html" // an HTML document
	FormatText Format = "text" // a plain-text capture: what a browser shows, one line per line
)

// ParseFormat checks a --format value.
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(s) {
	case "", "auto":
		return FormatAuto, nil
	case "html":
		return FormatHTML, nil
	case "text", "txt":
		return FormatText, nil
	}
	return "", fmt.Errorf("format %q: expected auto, html or text", s)
}

// Options describe where the bytes of a page came from.
type Options struct {
	// URL of the page, when it was fetched (recorded in each record's
	// source; the parser does not read it).
	URL string
	// Journal and Page are the listing page's journal id and page number,
	// when the caller knows them (the crawler from the URL it fetched,
	// `crawl parse` from the file name, both through the site's URL scheme).
	// Zero: taken from the page itself (the JSON PeriodicalId, the
	// heading's 第N页), when it says.
	Journal int64
	Page    int
	// Capture is the file path or URL recorded in each record's source.
	// Defaults to URL.
	Capture string
	// ContentType is the HTTP Content-Type header, if any (for the charset).
	ContentType string
	// Charset forces a charset label ("gbk"), overriding every declaration.
	Charset string
	// Format of the bytes; FormatAuto sniffs.
	Format Format
	// FetchedAt is when the page was fetched; zero for files.
	FetchedAt time.Time
	// RunID names the crawl run, recorded in each record's source.
	RunID string
}

// Page is what Parse found on one listing page.
type Page struct {
	// Records are the papers in page order; Source.Position is 1-based.
	Records []record.Record
	// JournalID and PageNo are the page's journal and page number, when known
	// (from Options, else the JSON or the heading).
	JournalID int64
	PageNo    int
	// JournalName from the page heading, when seen.
	JournalName string
	// HeadingSeen: a "…最新文献" heading or <title> was seen.
	HeadingSeen bool
	// FooterSeen: one of the site's footer lines (ICP licence, …) was seen.
	FooterSeen bool
	// BlocksFound counts paper blocks found; BlocksDropped those that had too
	// little to make a record (no title, DOI or id).
	BlocksFound   int
	BlocksDropped int
	// LastPage is this page's number when its pager shows it is the last
	// page (no "next" link, and no higher page number); 0 otherwise.
	LastPage int
	// Format and Charset say how the bytes were read.
	Format  Format
	Charset string
	// Warnings about the page as a whole (see the PageWarn* constants).
	Warnings []string
	// JSONRejected counts the JSON objects that looked like papers at first
	// sight but were not taken as papers (PageWarnJSONNotPaper).
	JSONRejected int

	pager     []string           // the pager lines seen
	cut       bool               // the bytes end before the page does (PageWarnTextTruncated)
	footerRaw int32              // the raw line of the last footer line seen, or -1
	lastWhole bool               // the last paper's block reached its closing part (readEnding)
	evidence  []int              // per record, how much visible lines vouch for its JSON
	fromLines []uint8            // per record, which fields came from visible lines (fromLines*)
	doubts    []Finding          // fields read by content that could not be settled (Findings)
	capture   string             // Options.Capture, else Options.URL
	explained map[int]*Explained // Explain: what each raw line was taken for
	titles    int                // distinct titles by content (line.strong) of the blocks without JSON
	noJSON    int                // records made without JSON
	dupIDs    []string           // site ids that two blocks of other titles or DOIs gave
}

// Page-level warning codes.
const (
	// PageWarnCharsetGuessed: no charset was declared and the bytes were not
	// UTF-8; they were read as GB18030.
	PageWarnCharsetGuessed = "charset-guessed"
	// PageWarnJSONScanLimit: a line held so many unbalanced braces that the
	// JSON scan stopped at its work bound; papers after that point may be
	// missing their JSON.
	PageWarnJSONScanLimit = "json-scan-limit"
	// PageWarnHTMLFallback: the document was read from its token stream
	// where the tree builder would read it otherwise: nested deeper than
	// it accepts, or markup it rearranges on a page too large for a DOM.
	PageWarnHTMLFallback = "html-fallback"
	// PageWarnTooManyLines: the page held more than maxPageLines lines (a
	// listing page has a few thousand): the rest was not read, and the
	// page has a finding.
	PageWarnTooManyLines = "too-many-lines"
	// PageWarnJSONNotPaper: JSON objects with a title that are not a paper
	// (an advert, a tracking or login object) were rejected; their number
	// is Page.JSONRejected.
	PageWarnJSONNotPaper = "json-not-paper"
	// PageWarnTextTruncated: the page was cut off: an HTML page that ends
	// without its closing tags, or a capture that ends inside a JSON
	// object. Its last record carries the record warning text-truncated,
	// unless the page's footer came after it.
	PageWarnTextTruncated = "text-truncated"
	// PageWarnControlChars: a record's field held control characters
	// (a NUL in a JSON paperid, an ESC in a title), taken out.
	PageWarnControlChars = "control-characters"
)

// IsListing reports whether the page looks like a genuine listing page: a
// listing heading, the site footer, or at least one paper block. A captcha or
// error page has none of these.
func (p *Page) IsListing() bool {
	return p.HeadingSeen || p.FooterSeen || p.BlocksFound > 0
}

func (p *Page) warn(code string) {
	for _, w := range p.Warnings {
		if w == code {
			return
		}
	}
	p.Warnings = append(p.Warnings, code)
}

// Memory. A page read from its token stream peaks at about 13 times its
// size (measured: a 10 MB text capture of two million short lines, 116 MB;
// a 16 MB page of small elements, 204 MB, the process included); a page
// of at most maxDOMBytes whose markup is read from a DOM, at 35 to 42
// times (the tree's nodes, about 21 times the page live; the stream that
// found the soup stopped there, and its lines are let go first). parseBudget bounds what the parses of one process hold at once,
// whatever the callers' concurrency: each parse is admitted with its
// page's expected peak, and waits while the others hold the budget. A
// page whose expected peak passes the budget waits for all of it, and
// parses alone.
const (
	parseBudget     = 512 << 20
	streamPeakRatio = 13
	domPeakRatio    = 45
)

var parsing = semaphore.NewWeighted(parseBudget)

// admit waits until a page of n bytes may be parsed; the func it returns
// gives the budget back.
func admit(n int) func() {
	ratio := int64(streamPeakRatio)
	if n <= maxDOMBytes {
		ratio = domPeakRatio
	}
	w := min(int64(n)*ratio, parseBudget)
	parsing.Acquire(context.Background(), w) // (never fails: no deadline)
	return func() { parsing.Release(w) }
}

// Parse splits a saved or fetched listing page into paper records. It reads
// HTML of any markup and plain-text captures, tolerates noise, cut-off text
// and missing parts, and never panics. The error is non-nil only for bad
// options (an unknown charset).
//
// Parse is safe for concurrent use; it keeps no state between calls.
func Parse(data []byte, opts Options) (*Page, error) {
	defer admit(len(data))()
	lines, page, err := readLines(data, opts, false)
	if err != nil {
		return nil, err
	}
	parseLines(lines, page, opts)
	return page, nil
}

// readLines decodes and flattens a page into its classified lines, and
// starts its Page with what the bytes say (format, charset, <title>, cut
// off). explain keeps what each line was taken for (Explain).
func readLines(data []byte, opts Options, explain bool) ([]line, *Page, error) {
	text, page, err := decodePage(data, opts)
	if err != nil {
		return nil, nil, err
	}
	if explain {
		page.explained = map[int]*Explained{}
	}
	hint := 0
	if page.Format != FormatHTML {
		hint = min(bytes.Count(text, []byte{'\n'})+1, maxPageLines) // (a raw line may make up to three lines: the rest grows)
	}
	c := newClassifier(page, hint)
	flattenLines(text, page, c.add)
	if opts.Page > 0 {
		page.PageNo = opts.Page // what the caller knows wins over the <title>
	}
	return c.finish(), page, nil
}

// decodePage decodes a page's bytes into text and starts its Page with
// what they say (format, charset, cut off) and what the caller knows.
func decodePage(data []byte, opts Options) ([]byte, *Page, error) {
	format := opts.Format
	if format == FormatAuto {
		format = sniffFormat(data)
	}
	text, cs, guessed, err := decodeBytes(data, opts.ContentType, opts.Charset, format == FormatHTML)
	if err != nil {
		return nil, nil, err
	}
	page := &Page{Format: format, Charset: cs}
	page.cut = format == FormatHTML && !closed(text)
	if guessed && cs != "utf-8" {
		page.warn(PageWarnCharsetGuessed)
	}
	page.capture = opts.Capture
	if page.capture == "" {
		page.capture = opts.URL
	}
	if opts.Journal > 0 {
		page.JournalID = opts.Journal
	}
	return text, page, nil
}

// flattenLines gives a page's visible lines and JSON candidates to emit,
// in page order, and notes the <title>'s facts. HTML is read from its token
// stream (stream.go). Markup the stream cannot stand for is read from
// goquery's DOM when the page is small enough for a tree: the stream's
// lines are then held until it is read whole. A larger page goes from the
// stream to emit line by line, whatever its markup.
func flattenLines(text []byte, page *Page, emit func(rawLine)) {
	if page.Format != FormatHTML {
		splitTextLines(string(text), emit)
		return
	}
	var title string
	if len(text) > maxDOMBytes {
		var soup, deep bool
		if title, soup, deep = flattenStream(text, emit); soup || deep {
			page.warn(PageWarnHTMLFallback)
		}
	} else {
		var raw []rawLine
		keep := func(r rawLine) { raw = append(raw, r) }
		var soup, deep bool
		title, soup, deep = streamLines(text, keep, true)
		switch {
		case soup:
			// The stream stopped at the soup, and its lines go before the
			// tree is built (a tree costs 20 to 30 times its page). The
			// tree builder copies what it keeps, so text (which may be
			// data itself) is not retained.
			raw = nil
			if doc, err := goquery.NewDocumentFromReader(bytes.NewReader(text)); err == nil {
				title = flattenHTML(doc, keep)
			} else {
				// (x/net/html refuses a page nested past 512 elements:
				// the stream reads it whole after all.)
				title, _, _ = flattenStream(text, keep)
				page.warn(PageWarnHTMLFallback)
			}
		case deep:
			page.warn(PageWarnHTMLFallback)
		}
		for _, r := range raw {
			emit(r)
		}
	}
	page.titleFacts(title)
}

// titleFacts notes what the page's <title> says (the listing's heading).
func (p *Page) titleFacts(title string) {
	if title == "" {
		return
	}
	if j, n, ok := titleFacts(title); ok {
		p.HeadingSeen = true
		p.JournalName, p.PageNo = j, n
	}
}

// parseLines turns the classified lines of a page into its records (and
// page facts), returning the segments they were assembled from.
func parseLines(lines []line, page *Page, opts Options) []*segment {
	page.LastPage = lastPageFromPager(page.pager, page.PageNo)
	segs := segmentLines(lines)
	segs = reconcile(segs)
	segs = reunite(segs)
	rejected := page.JSONRejected
	segs = rejectNonPapers(segs, page)
	if page.JSONRejected > rejected {
		segs = reunite(segs) // fragments beside a rejected object's lines
	}
	segs = readEnding(segs, page)
	assemble(segs, page, opts)
	cleanControl(page)
	dedupe(page, segs)
	if len(page.Records) == 0 || page.byContent() {
		// Papers lost where no JSON anchors them? The titles the blocks
		// without JSON show, against the records made without JSON.
		page.titles, page.noJSON = countTitles(segs), 0
		for i := range page.Records {
			if hasWarning(page.Records[i], record.WarnNoJSON) {
				page.noJSON++
			}
		}
	}
	if page.cut {
		page.warn(PageWarnTextTruncated)
		if n := len(page.Records); n > 0 && !page.lastWhole && !footerAfter(segs, n-1, page.footerRaw) {
			page.Records[n-1].AddWarning(record.WarnTextTruncated)
		}
	}
	return segs
}

// byContent reports whether a record of the page was read from visible
// lines alone.
func (p *Page) byContent() bool {
	for i := range p.Records {
		if hasWarning(p.Records[i], record.WarnNoJSON) {
			return true
		}
	}
	return false
}

// countTitles counts the distinct titles by content (line.strong) that
// the segments without JSON show.
func countTitles(segs []*segment) int {
	seen := map[string]bool{}
	for _, s := range segs {
		if s.json != nil || s.cutNext {
			continue
		}
		for i := range s.lines {
			if s.lines[i].strong() {
				seen[s.lines[i].text] = true
			}
		}
	}
	return len(seen)
}

// closed reports whether an HTML document has its closing </body> or
// </html> tag, outside any script: one without was cut off (a page served
// whole has them), and so was one that ends inside a script. It looks at
// the tags from the end back, and stops at the first closing tag.
func closed(text []byte) bool {
	inScript := false // going back, between a </script> and its <script>
	for i := len(text); ; {
		i = bytes.LastIndexByte(text[:i], '<')
		if i < 0 {
			return false
		}
		t := text[i:]
		switch {
		case tagIs(t, "</script"):
			inScript = true
		case tagIs(t, "<script"):
			if !inScript {
				return false // the text ends inside this script
			}
			inScript = false
		case !inScript && (tagIs(t, "</body") || tagIs(t, "</html")):
			// Only markup may follow the closing tag: text after it (a
			// quote, a statement) means it was a string in a script that
			// the cut left open.
			return onlyMarkup(t)
		}
	}
}

// endTag returns the offset of the </script> or </style> that ends the
// element t starts with, or -1.
func endTag(t []byte) int {
	for i := 1; ; {
		j := bytes.IndexByte(t[i:], '<')
		if j < 0 {
			return -1
		}
		i += j
		if tagIs(t[i:], "</script") || tagIs(t[i:], "</style") {
			return i
		}
		i++
	}
}

// onlyMarkup reports whether t holds nothing but tags and white space.
func onlyMarkup(t []byte) bool {
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case c == '<':
			if tagIs(t[i:], "<script") || tagIs(t[i:], "<style") {
				// Past its content, to its end tag.
				j := endTag(t[i:])
				if j < 0 {
					return false
				}
				i += j
			}
			j := bytes.IndexByte(t[i:], '>')
			if j < 0 {
				return false
			}
			i += j
		case c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\f':
			return false
		}
	}
	return true
}

// tagIs reports whether t starts with the tag name (ASCII case folded)
// followed by the end of the name: '>', '/' or white space.
func tagIs(t []byte, name string) bool {
	if len(t) <= len(name) || !asciiFold(t[:len(name)], name) {
		return false
	}
	switch t[len(name)] {
	case '>', '/', ' ', '\t', '\n', '\r', '\f':
		return true
	}
	return false
}

func asciiFold(b []byte, lower string) bool {
	for i := range len(lower) {
		c := b[i]
		if c >= 'A' && c <= 'Z' {
			c |= 0x20
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// sniffFormat: HTML when the first non-blank byte (after a BOM) is '<'.
func sniffFormat(data []byte) Format {
	data = bytes.TrimPrefix(data, []byte{0xEF, 0xBB, 0xBF})
	data = bytes.TrimLeft(data, " \t\r\n\f")
	if len(data) > 0 && data[0] == '<' {
		return FormatHTML
	}
	if len(data) > 1 && (data[0] == 0xFE || data[0] == 0xFF) {
		// UTF-16 with a BOM: look past it.
		return FormatHTML
	}
	return FormatText
}

// footerAfter reports whether the page's footer came after every line of
// record rec's block: the block was whole before the cut.
func footerAfter(segs []*segment, rec int, footer int32) bool {
	var mine []*segment
	for _, s := range segs {
		if s.rec == rec {
			mine = append(mine, s)
		}
	}
	return footerBelow(mine, footer)
}

// endsInObject reports whether s ends inside a JSON object: an object
// start ('{' then '"') whose braces the end of s leaves open.
func endsInObject(s string) bool {
	budget := scanBudgetFactor*len(s) + 4096
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], `{"`)
		if j < 0 {
			return false
		}
		start := i + j
		end, state := matchObject(s, start, &budget)
		switch {
		case budget < 0:
			return false
		case state == objTruncated:
			return true
		case state == objComplete:
			i = end
		default:
			i = start + 1
		}
	}
	return false
}

// titleFacts reads a <title> such as "X最新文献_第7页 - site".
func titleFacts(title string) (journal string, page int, ok bool) {
	i := strings.Index(title, "最新文献")
	if i < 0 {
		return "", 0, false
	}
	journal = strings.TrimSpace(title[:i])
	if m := reTitlePage.FindStringSubmatch(title[i:]); m != nil {
		fmt.Sscan(m[1], &page)
	}
	return journal, page, true
}

// cleanControl takes control characters out of every record's fields
// (record.CleanControl), with a page warning: no record carries a NUL, an
// ESC or a line break to a sink, a log or a terminal. An id left empty is
// made again from the DOI or the title.
func cleanControl(page *Page) {
	for i := range page.Records {
		r := &page.Records[i]
		if len(r.CleanControl()) == 0 {
			continue
		}
		page.warn(PageWarnControlChars)
		switch {
		case r.ID != "":
		case r.DOI != "":
			r.ID = record.DOIID(r.DOI)
		case r.SiteDOI != "":
			r.ID = record.DOIID(r.SiteDOI)
		default:
			r.ID = record.TitleID(r.Title, r.Published)
		}
	}
}
