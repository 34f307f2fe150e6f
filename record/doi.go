package record

import (
	"regexp"
	"strings"
)

// The one place a DOI is told from what is not one, and given the form
// the record keeps and the form identity is keyed on.

// reDOI is a DOI: the directory indicator 10., a registrant code of four
// to nine digits (sub-codes after dots), a slash and a suffix without
// white space.
var reDOI = regexp.MustCompile(`^10\.[0-9]{4,9}(?:\.[0-9]+)*/[^\s\p{Z}\p{Cc}\x{FEFF}]+$`)

// reSiteArxiv is the site's stand-in for an arXiv paper's DOI,
// "arxiv-YYMM.NNNNN" (a version suffix may follow).
var reSiteArxiv = regexp.MustCompile(`^(?i:arxiv)-([0-9]{4}\.[0-9]{4,5})(v[0-9]+)?$`)

// reArxivDOI is arXiv's own DataCite DOI, 10.48550/arXiv.YYMM.NNNNN.
var reArxivDOI = regexp.MustCompile(`^(?i:10\.48550/arxiv\.)([0-9]{4}\.[0-9]{4,5})(v[0-9]+)?$`)

// doiPrefixes are taken off a DOI value: resolver URLs and labels.
var doiPrefixes = []string{"https://doi.org/", "http://doi.org/", "https://dx.doi.org/", "http://dx.doi.org/", "doi.org/", "doi:", "doi："}

// Identifier is what a value given as a DOI turns out to be.
type Identifier struct {
	// DOI is a DOI (10.NNNN/…), case kept as given, without a resolver
	// URL or a "doi:" label; "" when the value is none.
	DOI string
	// ArxivID is the arXiv id (YYMM.NNNNN) when the value names an arXiv
	// paper (the site's arxiv-YYMM.NNNNN or arXiv's 10.48550/arXiv.…).
	ArxivID string
	// Other is the value as given when it is neither a DOI nor an arXiv
	// id: it goes to the record's site_doi, never to doi.
	Other string
}

// ParseDOI reads a value given as a DOI: a DOI with or without
// "https://doi.org/" or "doi:", the site's "arxiv-YYMM.NNNNN" (which
// becomes arXiv's DOI 10.48550/arXiv.YYMM.NNNNN), or anything else, kept
// apart as Other.
func ParseDOI(s string) Identifier {
	s = strings.TrimSpace(s)
	for _, p := range doiPrefixes {
		if len(s) > len(p) && strings.EqualFold(s[:len(p)], p) {
			s = strings.TrimSpace(s[len(p):])
			break
		}
	}
	switch {
	case s == "":
		return Identifier{}
	case reSiteArxiv.MatchString(s):
		id := reSiteArxiv.FindStringSubmatch(s)[1]
		return Identifier{DOI: "10.48550/arXiv." + id, ArxivID: id}
	case reArxivDOI.MatchString(s):
		return Identifier{DOI: s, ArxivID: reArxivDOI.FindStringSubmatch(s)[1]}
	case reDOI.MatchString(s):
		return Identifier{DOI: s}
	}
	return Identifier{Other: s}
}

// IsDOI reports whether s, as it stands, is a DOI (10.NNNN/…, no URL or
// label around it).
func IsDOI(s string) bool { return reDOI.MatchString(s) }

// DOIKey is the form of a DOI used for identity: the DOI as ParseDOI
// reads it, lower-cased. An arXiv DOI keys as the site's arxiv-YYMM.NNNNN
// form, the key that states, fleet ledgers and tables written before
// schema version 3 hold for it, so they recognise the same papers. A
// value that is no DOI keys as itself, trimmed and lower-cased.
func DOIKey(doi string) string {
	id := ParseDOI(doi)
	switch {
	case id.ArxivID != "":
		return "arxiv-" + strings.ToLower(id.ArxivID)
	case id.DOI != "":
		return strings.ToLower(id.DOI)
	}
	return strings.ToLower(id.Other)
}

// DOIURL is the resolver link of a DOI ("" for a value that is none).
func DOIURL(doi string) string {
	if !IsDOI(doi) {
		return ""
	}
	return "https://doi.org/" + doi
}
