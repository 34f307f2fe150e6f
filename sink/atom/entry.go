package atom

import (
	"bytes"
	"cmp"
	"encoding/json"
	"encoding/xml"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/litcrawl/litcrawl/internal/textsafe"
	"github.com/litcrawl/litcrawl/record"
)

// entry is one paper as its feed shows it, cleaned when it is made (see
// clean) and never changed after: its XML and its line in the state file
// are rendered once.
type entry struct {
	ID        string   `json:"id"` // the paper's id
	Title     string   `json:"title"`
	TitleCN   string   `json:"title_cn,omitempty"`
	Authors   []string `json:"authors,omitempty"`
	Published string   `json:"published,omitempty"` // RFC 3339, from the paper; "" when it gives none
	Updated   string   `json:"updated"`             // RFC 3339: Published, else when the feed first had it
	// Revised is when the feed got a later revision of the paper (RFC
	// 3339; "" for none): the entry's <updated>, while its place in the
	// feed stays where Updated put it.
	Revised string `json:"revised,omitempty"`
	Link    string `json:"link,omitempty"` // the DOI URL, else the paper's page (http or https)
	DOI     string `json:"doi,omitempty"`
	Summary string `json:"summary,omitempty"` // the abstract
	Subject string `json:"subject,omitempty"`
	Journal string `json:"journal,omitempty"` // the journal's name
	// Epoch is the feed's epoch when it first had the paper, Rank where
	// the listing had it then (page × rankPage + position; 0: not known):
	// papers of one date are newest first by them (newer).
	Epoch int   `json:"epoch,omitempty"`
	Rank  int64 `json:"rank,omitempty"`

	xml, line []byte         // rendered once (render)
	fetch     string         // the fetch of the page it came from: run and time ("session" for files)
	rec       *record.Record // the record its texts are made from, until fill
}

// Bounds of an entry's text: a feed stays a size a reader fetches.
const (
	maxLineRunes    = 1000  // a title, a subject, a name
	maxAuthorRunes  = 200   // an author
	maxAuthors      = 100   // authors named (the rest as "and N more")
	maxSummaryRunes = 10000 // an abstract
	maxIDBytes      = 512   // a paper's id (a longer one is refused)
	// rankPage: an entry's rank is page × rankPage + position.
	rankPage = 100_000
)

// validID reports whether id can be a paper's entry id: 1 to maxIDBytes
// bytes of valid UTF-8 without control characters, not only spaces (two
// ids never become one entry id).
func validID(id string) bool {
	return len(id) <= maxIDBytes && strings.TrimSpace(id) != "" && utf8.ValidString(id) &&
		!strings.ContainsFunc(id, textsafe.Control)
}

// tagAuthority names this program in the tag: URIs of feeds and entries
// (RFC 4151): an id never changes with the directory or the base URL, so
// a reader never shows a paper twice.
const tagAuthority = "tag:litcrawl.github.io,2026:"

// newEntry makes a record's entry, written at now. Its texts are made by
// fill, for the entries that make it into a feed only (a backfill's older
// papers never do).
func newEntry(r *record.Record, now time.Time) *entry {
	e := &entry{ID: r.ID, rec: r, fetch: cmp.Or(strings.TrimSpace(r.Source.RunID+" "+r.Source.FetchedAt), "session")}
	if p, i := r.Source.Page, r.Source.Position; p > 0 && p <= 1_000_000 && i > 0 && i < rankPage {
		e.Rank = int64(p)*rankPage + int64(i)
	}
	if r.Journal != nil {
		e.Journal = clean(r.Journal.Name, true, maxLineRunes)
	}
	// A date more than a year ahead is a mistake of the source's: taken
	// as none, it would hold the top of the feed for good.
	if t, ok := paperTime(r.Published); ok && t.Before(now.AddDate(1, 0, 0)) {
		e.Published = t.Format(time.RFC3339)
	}
	e.Updated = e.Published // an undated paper's: its epoch's time (merge)
	return e
}

// doiKey is the DOI key the entry's paper is known by (record.PaperDOIKey).
func (e *entry) doiKey() string {
	if e.rec != nil {
		return record.PaperDOIKey(e.rec.ID, e.rec.DOI)
	}
	return record.PaperDOIKey(e.ID, e.DOI)
}

// fill makes the entry's texts from its record, cleaned, and lets the
// record go.
func (e *entry) fill() {
	r := e.rec
	if r == nil {
		return
	}
	e.rec = nil
	e.Title = clean(r.Title, true, maxLineRunes)
	e.TitleCN = clean(r.TitleCN, true, maxLineRunes)
	e.DOI = clean(r.DOI, true, maxLineRunes)
	e.Summary = clean(cmp.Or(r.Abstract, r.AbstractCN), false, maxSummaryRunes)
	e.Subject = clean(r.Subject, true, maxLineRunes)
	e.Link = webLink(r.DOIURL, r.URL)
	for i, a := range r.Authors {
		if i == maxAuthors {
			e.Authors = append(e.Authors, "and "+strconv.Itoa(len(r.Authors)-maxAuthors)+" more")
			break
		}
		if a = clean(a, true, maxAuthorRunes); a != "" {
			e.Authors = append(e.Authors, a)
		}
	}
}

// checkTexts makes an entry read back from a feed's state (a file anyone
// may have edited) what fill makes of a record: its texts cleaned and
// bounded, its link one a reader may open (a javascript: link is
// dropped), its DOI a DOI.
func (e *entry) checkTexts() {
	e.Title = clean(e.Title, true, maxLineRunes)
	e.TitleCN = clean(e.TitleCN, true, maxLineRunes)
	e.DOI = clean(e.DOI, true, maxLineRunes)
	if e.DOI != "" && !record.IsDOI(e.DOI) {
		e.DOI = ""
	}
	e.Summary = clean(e.Summary, false, maxSummaryRunes)
	e.Subject = clean(e.Subject, true, maxLineRunes)
	e.Journal = clean(e.Journal, true, maxLineRunes)
	e.Link = webLink(e.Link)
	authors := e.Authors[:0]
	for i, a := range e.Authors {
		if i == maxAuthors+1 {
			break
		}
		if a = clean(a, true, maxAuthorRunes); a != "" {
			authors = append(authors, a)
		}
	}
	e.Authors = authors
}

// paperTime reads a paper's date: a day (2024-09-02), a month, a year,
// or a time in RFC 3339 (with "T", "t" or a space between date and time).
func paperTime(s string) (time.Time, bool) {
	s = strings.ToUpper(strings.TrimSpace(s)) // RFC 3339 allows "t" and "z"
	for _, layout := range []string{"2006-01-02", time.RFC3339, "2006-01-02 15:04:05Z07:00", "2006-01", "2006"} {
		// The year is checked in UTC, as the feed writes it: 1000-01-01
		// at 00:30+01:00 is year 999 there, four digits or not.
		if t, err := time.Parse(layout, s); err == nil && t.UTC().Year() >= 1000 && t.UTC().Year() <= 9999 {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// webLink is the first of urls that a reader may open (record.WebLink);
// "" when none is.
func webLink(urls ...string) string {
	for _, raw := range urls {
		if l := record.WebLink(raw); l != "" {
			return l
		}
	}
	return ""
}

// clean makes text safe for a feed, whatever the source gave: broken
// UTF-8 becomes U+FFFD; control characters, characters XML 1.0 does not
// allow and the marks that reorder text are dropped; a one-line field's
// white space (new lines and tabs included) becomes single spaces; text
// longer than max runes is cut, with "…". Markup stays text: the XML
// writer escapes it, and every text element is type="text".
func clean(s string, oneLine bool, max int) string {
	if plain(s, max) {
		return s // most text: nothing to change
	}
	return cleanRunes(s, oneLine, max)
}

// cleanRunes is clean, rune by rune.
func cleanRunes(s string, oneLine bool, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	b.Grow(len(s))
	n, space := 0, false
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t' || r == '\r' || unicode.IsSpace(r):
			if oneLine || r != '\n' {
				space = true
				continue
			}
		case textsafe.Unsafe(r), // control characters, bidirectional marks
			r == 0xfffe || r == 0xffff, r >= 0xd800 && r <= 0xdfff, r > unicode.MaxRune: // not XML characters
			continue
		}
		if space && b.Len() > 0 && r != '\n' {
			b.WriteByte(' ')
			n++
		}
		space = false
		if n >= max {
			return strings.TrimSpace(b.String()) + "…"
		}
		b.WriteRune(r)
		n++
	}
	return strings.TrimSpace(b.String())
}

// plain reports whether clean leaves s as it is: printable ASCII, at
// most max characters, single spaces between words and none around them.
func plain(s string, max int) bool {
	if len(s) > max || s != "" && (s[0] == ' ' || s[len(s)-1] == ' ') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == ' ' && i > 0 && s[i-1] == ' ' {
			return false
		}
	}
	return true
}

// tagID is the tag: URI of kind/key (the key percent-encoded where the
// URI's syntax needs it).
func tagID(kind, key string) string {
	var b strings.Builder
	b.WriteString(tagAuthority)
	b.WriteString(kind)
	b.WriteByte(':')
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c < 0x80 && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~!$&'()*+,;=:@/", c) >= 0) {
			b.WriteByte(c)
			continue
		}
		b.WriteString("%" + strings.ToUpper(strconv.FormatUint(uint64(c)>>4, 16)+strconv.FormatUint(uint64(c)&15, 16)))
	}
	return b.String()
}

// render makes the entry's XML and its state line, once.
func (e *entry) render() {
	if e.xml != nil {
		return
	}
	e.fill()
	var b bytes.Buffer
	b.WriteString("  <entry>\n")
	element(&b, "id", "", tagID("paper", e.ID))
	title := cmp.Or(e.Title, e.TitleCN, "Untitled paper "+clean(e.ID, true, maxLineRunes))
	element(&b, "title", ` type="text"`, title)
	element(&b, "updated", "", max(e.Updated, e.Revised))
	if e.Published != "" {
		element(&b, "published", "", e.Published)
	}
	e.renderPaper(&b)
	if e.Link != "" {
		b.WriteString(`    <link rel="alternate" type="text/html" href="`)
		escape(&b, e.Link)
		b.WriteString("\"/>\n")
	}
	if e.Summary != "" {
		element(&b, "summary", ` type="text"`, e.Summary)
	}
	element(&b, "content", ` type="text"`, e.content())
	if e.Journal != "" {
		category(&b, e.Journal, "journal")
	}
	if e.Subject != "" {
		category(&b, e.Subject, "subject")
	}
	b.WriteString("  </entry>\n")
	e.xml = b.Bytes()
	line, err := json.Marshal(e)
	if err != nil { // strings only: cannot fail
		panic(err)
	}
	e.line = line
}

// renderPaper writes what makes the entry a paper to a reference
// manager (Zotero's feeds read these, as journals' own feeds give them):
// one Dublin Core creator per author, the PRISM DOI, publication name
// and cover date (the paper's day), and the DOI as a Dublin Core
// identifier. The authors are dc:creator only, not Atom's <author> too:
// feed readers (feedparser, the feed processor Zotero's reader comes
// from) read both as the entry's authors, and would list each twice;
// Atom's rule that an entry has an author is met by the feed's.
func (e *entry) renderPaper(b *bytes.Buffer) {
	for i, a := range e.Authors {
		if i == maxAuthors {
			break // ("and N more" is no author)
		}
		element(b, "dc:creator", "", a)
	}
	if e.DOI != "" {
		element(b, "prism:doi", "", e.DOI)
	}
	if e.Journal != "" {
		element(b, "prism:publicationName", "", e.Journal)
	}
	if len(e.Published) >= len("2006-01-02") {
		element(b, "prism:coverDate", "", e.Published[:len("2006-01-02")])
	}
	if e.DOI != "" {
		element(b, "dc:identifier", "", "doi:"+e.DOI)
	}
}

// content is the entry's text: the Chinese title, the DOI, the journal.
func (e *entry) content() string {
	var parts []string
	if e.TitleCN != "" && e.TitleCN != e.Title {
		parts = append(parts, e.TitleCN)
	}
	if e.DOI != "" {
		parts = append(parts, "DOI: "+e.DOI)
	}
	if e.Journal != "" {
		parts = append(parts, e.Journal)
	}
	if len(parts) == 0 {
		return cmp.Or(e.Title, e.TitleCN, clean(e.ID, true, maxLineRunes))
	}
	return strings.Join(parts, "\n")
}

func element(b *bytes.Buffer, name, attrs, text string) {
	b.WriteString("    <" + name + attrs + ">")
	escape(b, text)
	b.WriteString("</" + name + ">\n")
}

func category(b *bytes.Buffer, term, scheme string) {
	b.WriteString(`    <category term="`)
	escape(b, term)
	b.WriteString(`" scheme="` + tagAuthority + scheme + `"/>` + "\n")
}

// escape writes text escaped for XML text and attribute values (both
// quotes too); a character XML does not allow becomes U+FFFD.
func escape(b *bytes.Buffer, s string) {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	xml.EscapeText(b, []byte(s)) //nolint:errcheck // a bytes.Buffer does not fail
}

// newer orders entries newest first: by their time (the paper's date, or
// when the feed's epoch that first had it began); papers of one time by
// epoch, newest first (a nightly's papers from page 1 are newer than the
// last night's), then as the listing had them (page 1's first paper
// first), then by id. A paper delivered again keeps its place, and a run
// resumed after a crash goes on in the epoch it began, so it orders the
// feed as a run without the crash.
func newer(a, b *entry) int {
	return cmp.Or(strings.Compare(b.Updated, a.Updated), cmp.Compare(b.Epoch, a.Epoch), cmp.Compare(rank(a), rank(b)), strings.Compare(b.ID, a.ID))
}

// rank orders the entries of one time: an unknown rank after the known.
func rank(e *entry) int64 {
	if e.Rank <= 0 {
		return math.MaxInt64
	}
	return e.Rank
}
