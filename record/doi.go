package record

import (
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The one place a DOI is told from what is not one, and given the form
// the record keeps and the form identity is keyed on.

// isDOIForm: the directory indicator 10., a registrant code of four to
// nine digits (sub-codes after dots), a slash and a suffix without white
// space or control characters.
func isDOIForm(s string) bool {
	if len(s) < 6 || s[:3] != "10." {
		return false
	}
	i, digits := 3, 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i, digits = i+1, digits+1
	}
	if digits < 4 || digits > 9 {
		return false
	}
	for i < len(s) && s[i] == '.' { // sub-codes
		j := i + 1
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j == i+1 {
			return false
		}
		i = j
	}
	if i >= len(s)-1 || s[i] != '/' {
		return false
	}
	for j := i + 1; j < len(s); {
		if c := s[j]; c < utf8.RuneSelf { // (most DOIs are ASCII: no rune decoding)
			if c <= ' ' || c == 0x7f {
				return false
			}
			j++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[j:])
		if r == utf8.RuneError || unicode.IsSpace(r) || unicode.Is(unicode.Z, r) || unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) {
			return false // (white space, controls, and invisible format characters: U+200B, U+FEFF, U+202E)
		}
		j += n
	}
	return true
}

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
	s = trimDOIPrefix(strings.TrimSpace(s))
	switch {
	case s == "":
		return Identifier{}
	case len(s) > 6 && strings.EqualFold(s[:6], "arxiv-") && arxivNumber(s[6:]):
		id := s[6:]
		return Identifier{DOI: "10.48550/arXiv." + id, ArxivID: id}
	case len(s) > len(arxivDOIPrefix) && strings.EqualFold(s[:len(arxivDOIPrefix)], arxivDOIPrefix) && arxivNumber(s[len(arxivDOIPrefix):]):
		return Identifier{DOI: s, ArxivID: s[len(arxivDOIPrefix):]}
	case isDOIForm(s):
		return Identifier{DOI: s}
	}
	return Identifier{Other: s}
}

// arxivDOIPrefix is arXiv's DOI prefix, lower-cased.
const arxivDOIPrefix = "10.48550/arxiv."

// trimDOIPrefix takes a resolver URL (and its query or fragment: a
// tracker's "?utm=…") or a "doi:" label off s.
func trimDOIPrefix(s string) string {
	if len(s) < 4 || s[0] == '1' {
		return s // the common case: a bare DOI
	}
	for _, p := range doiPrefixes {
		if len(s) > len(p) && strings.EqualFold(s[:len(p)], p) {
			rest := strings.TrimSpace(s[len(p):])
			if strings.Contains(p, "doi.org/") {
				if q := strings.IndexAny(rest, "?#"); q > 0 {
					rest = rest[:q]
				}
			}
			return rest
		}
	}
	return s
}

// arxivNumber: an arXiv id "YYMM.NNNNN": a month 01 to 12, and four
// digits after it until 1412, five from 1501.
func arxivNumber(s string) bool {
	if len(s) != 9 && len(s) != 10 || s[4] != '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if i != 4 && (s[i] < '0' || s[i] > '9') {
			return false
		}
	}
	month := int(s[2]-'0')*10 + int(s[3]-'0')
	five := s[:4] >= "1501"
	return month >= 1 && month <= 12 && (len(s) == 10) == five
}

// DOIURL is the resolver link of a DOI ("" for a value that is none). The
// DOI's characters that a URL reserves ("#", "?", "%", spaces…) are
// escaped, as the DOI Handbook asks, so the link names the whole DOI.
func DOIURL(doi string) string {
	if !IsDOI(doi) {
		return ""
	}
	plain := true
	for i := 0; i < len(doi) && plain; i++ {
		plain = !urlReserved[doi[i]]
	}
	if plain {
		return "https://doi.org/" + doi // (most DOIs: nothing to escape)
	}
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len("https://doi.org/") + len(doi))
	b.WriteString("https://doi.org/")
	for i := 0; i < len(doi); i++ {
		c := doi[i]
		if urlReserved[c] {
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// urlReserved are the bytes DOIURL escapes: controls, space, non-ASCII,
// and what a URL reserves ("#", "?", "%", …).
var urlReserved = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = c <= ' ' || c >= 0x7f || strings.IndexByte("\"#%<>?[\\]^`{|}", byte(c)) >= 0
	}
	return t
}()

// IsDOI reports whether s, as it stands, is a DOI (10.NNNN/…, no URL or
// label around it).
func IsDOI(s string) bool { return isDOIForm(s) }

// PaperDOIKey is the DOI key a paper is known by, with its id: the key of
// its DOI, or of the DOI its id names ("doi:…", a paper read without its
// JSON) when it has none; "" when it has neither. A paper read once by
// one id and later by another is one paper when their keys are one (the
// ledgers, the atom sink's entries).
func PaperDOIKey(id, doi string) string {
	if k := DOIKey(doi); k != "" {
		return k
	}
	if d, ok := strings.CutPrefix(id, "doi:"); ok {
		return DOIKey(d)
	}
	return ""
}

// DOIKey is the form of a DOI used for identity: the DOI as ParseDOI
// reads it, lower-cased. An arXiv DOI keys as the site's arxiv-YYMM.NNNNN
// form, the key that states, fleet ledgers and tables written before
// schema version 3 hold for it, so they recognise the same papers. A
// value that is no DOI keys as itself, trimmed and lower-cased.
func DOIKey(doi string) string {
	// (the same as ParseDOI's reading, without its regular expressions:
	// identity is looked up for every line of a page)
	s := trimDOIPrefix(strings.TrimSpace(doi))
	if len(s) > len(arxivDOIPrefix) && strings.EqualFold(s[:len(arxivDOIPrefix)], arxivDOIPrefix) && arxivNumber(s[len(arxivDOIPrefix):]) {
		return "arxiv-" + s[len(arxivDOIPrefix):]
	}
	return strings.ToLower(s)
}

// MaxLinkBytes bounds a link a record's reader may open (WebLink).
const MaxLinkBytes = 2048

// WebLink is raw as a link a reader may open, "" when it is none: an
// absolute http or https URL with a host, without user information or
// control characters, of at most MaxLinkBytes as given and as written
// (escaped). A javascript: or data: link is none. The one rule for the
// links of the feeds' entries and of the exports.
func WebLink(raw string) string {
	raw = strings.TrimSpace(raw)
	if raw == "" || len(raw) > MaxLinkBytes || HasControl(raw) {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil {
		return ""
	}
	if out := u.String(); len(out) <= MaxLinkBytes {
		return out
	}
	return ""
}
