package record

import (
	"strings"

	"github.com/litcrawl/litcrawl/internal/textsafe"
)

// HasControl reports whether s holds a control character (C0, DEL or C1:
// NUL, ESC, a line break and the like: textsafe.Control).
//
// It reads bytes, not runes: C0 and DEL are single bytes, and C1 (U+0080
// to U+009F) is 0xC2 followed by 0x80 to 0x9F in UTF-8 (a record's
// abstracts are long, and every string of every record is checked).
func HasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c == 0x7f:
			return true
		case c == 0xc2 && i+1 < len(s) && s[i+1] >= 0x80 && s[i+1] <= 0x9f:
			return true
		}
	}
	return false
}

// StripControl is s without its control characters.
func StripControl(s string) string {
	if !HasControl(s) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if textsafe.Control(r) {
			return -1
		}
		return r
	}, s)
}

// CleanControl takes every control character out of the record's strings:
// its identifiers (id, doi, doi_url, site_doi, arxiv_id, the URLs, source
// and journal fields) and its text. A NUL in any of them is refused by
// PostgreSQL, an ESC reaches a terminal, a line break splits a log line:
// none belongs in a record. It returns the names of the fields it
// cleaned (none: nil). A DOI that changed gets its doi_url again.
func (r *Record) CleanControl() []string {
	var cleaned []string
	clean := func(name string, p *string) {
		if HasControl(*p) {
			*p = StripControl(*p)
			cleaned = append(cleaned, name)
		}
	}
	clean("id", &r.ID)
	clean("doi", &r.DOI)
	clean("doi_url", &r.DOIURL)
	clean("site_doi", &r.SiteDOI)
	clean("arxiv_id", &r.ArxivID)
	clean("url", &r.URL)
	clean("title", &r.Title)
	clean("title_cn", &r.TitleCN)
	for i := range r.Authors {
		clean("authors", &r.Authors[i])
	}
	clean("abstract", &r.Abstract)
	clean("abstract_cn", &r.AbstractCN)
	clean("published", &r.Published)
	clean("subject", &r.Subject)
	clean("jcr_quartile", &r.JCRQuartile)
	clean("jcr_category", &r.JCRCategory)
	clean("open_access_pdf", &r.OpenAccessPDF)
	clean("publication_type", &r.PublicationType)
	if j := r.Journal; j != nil {
		clean("journal.name", &j.Name)
		clean("journal.volume", &j.Volume)
		clean("journal.issue", &j.Issue)
		clean("journal.pages", &j.Pages)
	}
	clean("source.url", &r.Source.URL)
	clean("source.capture", &r.Source.Capture)
	clean("source.fetched_at", &r.Source.FetchedAt)
	clean("source.run_id", &r.Source.RunID)
	for i := range r.Warnings {
		clean("warnings", &r.Warnings[i])
	}
	for _, f := range cleaned {
		if f == "doi" {
			r.DOIURL = DOIURL(r.DOI)
		}
	}
	return cleaned
}
