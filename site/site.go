// Package site is the listing site's URL scheme: one value, built from the
// two path templates of the configuration (site.first_page and
// site.page_n), that both formats the URL of a journal's listing page and
// reads the journal and page back from a URL, a path or a saved page's file
// name. The crawler, the test site, the demo, the bench and `crawl parse`
// all use it, so the scheme is written down once.
package site

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// The placeholders of a template.
const (
	JournalVar = "{journal}"
	PageVar    = "{page}"
)

// Scheme formats and parses listing URLs. It is immutable and safe for
// concurrent use.
type Scheme struct {
	first, pageN string
	// Anchored patterns over a URL's path (and query, when the template
	// has one), and over a file name's tail.
	reFirst, reN         *regexp.Regexp
	fileFirst, fileN     *regexp.Regexp
	firstHasQ, pageNHasQ bool
}

// Default is the scheme of the real site (and of the shipped config).
var Default = MustNew("/literature_d{journal}.htm", "/literature_d{journal}_{page}.htm")

// New compiles a scheme: firstPage is the path of page 1 and holds
// {journal}; pageN is the path of page N and holds {journal} and {page}.
// Both start with "/". The two must tell their pages apart: a URL made from
// one is never read as the other.
func New(firstPage, pageN string) (*Scheme, error) {
	switch {
	case !strings.HasPrefix(firstPage, "/") || strings.Count(firstPage, JournalVar) != 1 || strings.Contains(firstPage, PageVar):
		return nil, fmt.Errorf("first page %q: expected a path starting with / that holds {journal} once and no {page}, e.g. /literature_d{journal}.htm", firstPage)
	case !strings.HasPrefix(pageN, "/") || strings.Count(pageN, JournalVar) != 1 || strings.Count(pageN, PageVar) != 1:
		return nil, fmt.Errorf("page n %q: expected a path starting with / that holds {journal} and {page} once each, e.g. /literature_d{journal}_{page}.htm", pageN)
	case strings.Contains(pageN, "{journal}{page}") || strings.Contains(pageN, "{page}{journal}"):
		return nil, fmt.Errorf("page n %q: {journal} and {page} need something between them", pageN)
	}
	for _, t := range []struct{ name, tmpl string }{{"first page", firstPage}, {"page n", pageN}} {
		if digitNextToVar(t.tmpl) {
			return nil, fmt.Errorf("%s %q: a digit next to {journal} or {page} runs into the number: put something else around them", t.name, t.tmpl)
		}
	}
	s := &Scheme{first: firstPage, pageN: pageN,
		reFirst: compile(firstPage, "^", "$"), reN: compile(pageN, "^", "$"),
		fileFirst: compile(fileTail(firstPage), `(?:^|[^A-Za-z0-9])`, `$`),
		fileN:     compile(fileTail(pageN), `(?:^|[^A-Za-z0-9])`, `$`),
		firstHasQ: strings.Contains(firstPage, "?"), pageNHasQ: strings.Contains(pageN, "?")}
	// The two templates must not read each other's pages.
	for _, tt := range []struct {
		journal int64
		page    int
	}{{501422, 1}, {501422, 2}, {7, 10}, {123456789012, 99999}} {
		j, p, ok := s.ParseURL(s.URL("https://site.example", tt.journal, tt.page))
		if !ok || j != tt.journal || p != tt.page {
			return nil, fmt.Errorf("templates %q and %q: the URL of journal %d page %d reads back as journal %d page %d: the two must tell their pages apart",
				firstPage, pageN, tt.journal, tt.page, j, p)
		}
	}
	return s, nil
}

// digitNextToVar reports whether a digit stands right before or after a
// placeholder ("/d{journal}7{page}.htm" would read journal 1001 page 3 as
// journal 10 page 13).
func digitNextToVar(tmpl string) bool {
	isDigit := func(i int) bool { return i >= 0 && i < len(tmpl) && tmpl[i] >= '0' && tmpl[i] <= '9' }
	for _, v := range []string{JournalVar, PageVar} {
		for i := 0; ; {
			j := strings.Index(tmpl[i:], v)
			if j < 0 {
				break
			}
			at := i + j
			if isDigit(at-1) || isDigit(at+len(v)) {
				return true
			}
			i = at + len(v)
		}
	}
	return false
}

// MustNew is New for templates known to be good; it panics otherwise.
func MustNew(firstPage, pageN string) *Scheme {
	s, err := New(firstPage, pageN)
	if err != nil {
		panic(err)
	}
	return s
}

// compile turns a template into a pattern: the literal parts quoted,
// {journal} a journal id of 1 to 18 digits, {page} a page number of 1 to 9.
func compile(tmpl, prefix, suffix string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(prefix)
	rest := tmpl
	for rest != "" {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			b.WriteString(regexp.QuoteMeta(rest))
			break
		}
		b.WriteString(regexp.QuoteMeta(rest[:i]))
		switch {
		case strings.HasPrefix(rest[i:], JournalVar):
			b.WriteString(`(?P<journal>[0-9]{1,18})`)
			rest = rest[i+len(JournalVar):]
		case strings.HasPrefix(rest[i:], PageVar):
			b.WriteString(`(?P<page>[0-9]{1,9})`)
			rest = rest[i+len(PageVar):]
		default:
			b.WriteString(regexp.QuoteMeta("{"))
			rest = rest[i+1:]
		}
	}
	b.WriteString(suffix)
	return regexp.MustCompile(b.String())
}

// fileTail is the part of a template a saved page's file name carries: its
// last path element, without a query.
func fileTail(tmpl string) string {
	p, _, _ := strings.Cut(tmpl, "?")
	return path.Base(p)
}

// FirstPage and PageN are the templates the scheme was built from.
func (s *Scheme) FirstPage() string { return s.first }
func (s *Scheme) PageN() string     { return s.pageN }

// Path is the path (and query, if the template has one) of a listing page:
// page 1 (or less) uses the first-page template.
func (s *Scheme) Path(journal int64, page int) string {
	tmpl := s.pageN
	if page <= 1 {
		tmpl = s.first
	}
	// Two ReplaceAll, not a strings.Replacer: building one costs more than
	// the rest of a page's path (the numbers hold no variable).
	return strings.ReplaceAll(strings.ReplaceAll(tmpl, JournalVar, strconv.FormatInt(journal, 10)), PageVar, strconv.Itoa(page))
}

// URL is the absolute URL of a listing page on the site at base (e.g.
// https://m.booksci.cn; a trailing slash is ignored).
func (s *Scheme) URL(base string, journal int64, page int) string {
	return strings.TrimRight(base, "/") + s.Path(journal, page)
}

// ParseURL reads the journal and page of a listing page from an absolute
// URL or a path (with its query, when the scheme's templates have one). ok
// is false for anything that is not a listing page of the scheme.
func (s *Scheme) ParseURL(raw string) (journal int64, page int, ok bool) {
	u, err := url.Parse(raw)
	if err != nil {
		return 0, 0, false
	}
	p := u.Path
	if u.RawQuery != "" {
		p += "?" + u.RawQuery
	}
	if m := match(s.reN, p, s.pageNHasQ); m != nil {
		return read(s.reN, m)
	}
	if m := match(s.reFirst, p, s.firstHasQ); m != nil {
		j, _, ok := read(s.reFirst, m)
		return j, 1, ok
	}
	return 0, 0, false
}

// match runs re over p, over p without its query when the template has none.
func match(re *regexp.Regexp, p string, withQuery bool) []string {
	if !withQuery {
		p, _, _ = strings.Cut(p, "?")
	}
	return re.FindStringSubmatch(p)
}

// ParseFile reads the journal and page from a saved page's file name (a
// path is fine): it ends with the last path element of a template, after
// any prefix that ends in a character other than a letter or digit
// ("mobile-literature_d12_3.htm"). A template ending in .htm also takes
// .html, as browsers save pages.
func (s *Scheme) ParseFile(name string) (journal int64, page int, ok bool) {
	base := path.Base(strings.ReplaceAll(name, `\`, "/"))
	for _, name := range []string{base, htmlAsHtm(base)} {
		if m := s.fileN.FindStringSubmatch(name); m != nil {
			return read(s.fileN, m)
		}
		if m := s.fileFirst.FindStringSubmatch(name); m != nil {
			j, _, ok := read(s.fileFirst, m)
			return j, 1, ok
		}
	}
	return 0, 0, false
}

func htmlAsHtm(name string) string {
	if strings.HasSuffix(name, ".html") {
		return strings.TrimSuffix(name, "l")
	}
	return name
}

// read takes the journal and page out of a match; page 0 when the pattern
// has none.
func read(re *regexp.Regexp, m []string) (journal int64, page int, ok bool) {
	for i, name := range re.SubexpNames() {
		var err error
		switch name {
		case "journal":
			if journal, err = strconv.ParseInt(m[i], 10, 64); err != nil || journal <= 0 {
				return 0, 0, false
			}
		case "page":
			if page, err = strconv.Atoi(m[i]); err != nil || page < 1 {
				return 0, 0, false
			}
		}
	}
	return journal, page, true
}
