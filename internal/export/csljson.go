package export

import (
	"encoding/json"
	"io"
	"strings"

	"github.com/litcrawl/litcrawl/record"
)

// cslItem is an item of CSL-JSON (the Citation Style Language's input,
// which pandoc, Zotero and citeproc read).
type cslItem struct {
	ID             string    `json:"id"`
	CitationKey    string    `json:"citation-key"`
	Type           string    `json:"type"`
	Title          string    `json:"title,omitempty"`
	OriginalTitle  string    `json:"original-title,omitempty"`
	Author         []cslName `json:"author,omitempty"`
	ContainerTitle string    `json:"container-title,omitempty"`
	Volume         string    `json:"volume,omitempty"`
	Issue          string    `json:"issue,omitempty"`
	Page           string    `json:"page,omitempty"`
	Issued         *cslDate  `json:"issued,omitempty"`
	DOI            string    `json:"DOI,omitempty"`
	URL            string    `json:"URL,omitempty"`
	Abstract       string    `json:"abstract,omitempty"`
}

type cslName struct {
	Family  string `json:"family,omitempty"`
	Given   string `json:"given,omitempty"`
	Suffix  string `json:"suffix,omitempty"`
	Literal string `json:"literal,omitempty"`
}

type cslDate struct {
	DateParts [][]int `json:"date-parts"`
}

// WriteCSLJSON writes the records as a CSL-JSON array of
// article-journal items: the Chinese title as original-title (CSL has no
// variable for a title's translation; its alternative title is the one
// readers keep), authors as family and given names or a literal.
func WriteCSLJSON(w io.Writer, recs []record.Record) error {
	items := make([]cslItem, 0, len(recs))
	for i, key := range Keys(recs) {
		r := recs[i]
		it := cslItem{ID: key, CitationKey: key, Type: "article-journal", Title: oneLine(r.Title), OriginalTitle: oneLine(r.TitleCN),
			DOI: r.DOI, URL: cmpOr(r.DOIURL, r.URL), Abstract: strings.TrimSpace(cmpOr(r.Abstract, r.AbstractCN))}
		for _, a := range r.Authors {
			if n := SplitName(a); n != (Name{}) {
				it.Author = append(it.Author, cslName(n))
			}
		}
		if j := r.Journal; j != nil {
			it.ContainerTitle, it.Volume, it.Issue, it.Page = oneLine(j.Name), oneLine(j.Volume), oneLine(j.Issue), oneLine(j.Pages)
		}
		if y, m, d, ok := dateParts(r.Published); ok {
			parts := []int{y}
			if m > 0 {
				parts = append(parts, m)
				if d > 0 {
					parts = append(parts, d)
				}
			}
			it.Issued = &cslDate{DateParts: [][]int{parts}}
		}
		items = append(items, it)
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(items)
}
