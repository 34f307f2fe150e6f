// Package record defines the paper record: the one data type that the
// parser produces and every sink consumes.
//
// The JSON field names are a contract (see schema/record.schema.json and the
// README). Unknown values are omitted: a field is never null, and never 0 or
// "" standing for "unknown". The only number that may legitimately be 0 is
// Citations, which is therefore a pointer.
package record

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode"
)

// SchemaVersion is the value of schema_version in every record this build
// writes. It changes when a field is added, changes meaning or is removed,
// or a warning code is added: the JSON Schema forbids what it does not list.
// Version 2 added journal.issue and the text-truncated and doi-conflict
// warnings. Version 3: doi holds only a DOI (arXiv papers get arXiv's
// 10.48550/arXiv.… DOI), site_doi what the site gave that is none.
// Version 4: revision, changed and replaces (a paper the site changed is
// delivered again as its next revision; the last revision of an id wins).
const SchemaVersion = 4

// Record is one paper as seen on one listing page.
type Record struct {
	SchemaVersion int    `json:"schema_version"`
	ID            string `json:"id"`
	// Revision numbers the deliveries of the paper's content: 1 when first
	// delivered, one more each time the site changed it. Set when the
	// record is delivered (0, omitted, in a record not yet delivered).
	Revision int `json:"revision,omitempty"`
	// Changed names the fields that differ from the previous revision
	// (revision 2 and later): field names, "doi" for the DOI fields,
	// "journal" for the journal object, "ranking" for impact_factor, zone,
	// subject and the JCR fields, "id" when the paper got its site id, and
	// "content" when the change could not be told apart by field.
	Changed []string `json:"changed,omitempty"`
	// Replaces is the id the paper was delivered under before, when it
	// changed (a paper first delivered without its JSON, "doi:…", now with
	// its site id): that id's records are this paper's earlier revisions.
	Replaces string `json:"replaces,omitempty"`
	DOI      string `json:"doi,omitempty"`
	DOIURL   string `json:"doi_url,omitempty"`
	// SiteDOI is what the site gave as the paper's DOI when it is no DOI
	// (kept as given); doi and doi_url are then empty.
	SiteDOI       string   `json:"site_doi,omitempty"`
	ArxivID       string   `json:"arxiv_id,omitempty"`
	URL           string   `json:"url,omitempty"`
	Title         string   `json:"title,omitempty"`
	TitleCN       string   `json:"title_cn,omitempty"`
	Authors       []string `json:"authors,omitempty"`
	Abstract      string   `json:"abstract,omitempty"`
	AbstractCN    string   `json:"abstract_cn,omitempty"`
	Published     string   `json:"published,omitempty"`
	Journal       *Journal `json:"journal,omitempty"`
	ImpactFactor  float64  `json:"impact_factor,omitempty"`
	Zone          int      `json:"zone,omitempty"`
	Subject       string   `json:"subject,omitempty"`
	JCRQuartile   string   `json:"jcr_quartile,omitempty"`
	JCRCategory   string   `json:"jcr_category,omitempty"`
	Citations     *int     `json:"citations,omitempty"`
	OpenAccessPDF string   `json:"open_access_pdf,omitempty"`
	// PublicationType is the JSON publicationTypes value, e.g. "Journal Article".
	PublicationType string `json:"publication_type,omitempty"`
	Source          Source `json:"source"`
	// Warnings are short codes (see the Warn* constants) saying what the
	// parser had to guess or could not reconcile for this record.
	Warnings []string `json:"warnings,omitempty"`
}

// Journal identifies the listing the paper came from.
type Journal struct {
	ID     int64  `json:"id,omitempty"`
	Name   string `json:"name,omitempty"`
	Volume string `json:"volume,omitempty"`
	// Issue is the issue number, which the site runs together with the
	// volume ("8 1" is volume 8, issue 1).
	Issue string `json:"issue,omitempty"`
	Pages string `json:"pages,omitempty"`
}

// Source says where the record was read.
type Source struct {
	// URL of the listing page, when known.
	URL string `json:"url,omitempty"`
	// Page is the listing page number (1 for the first page), when known.
	Page int `json:"page,omitempty"`
	// Position is the 1-based position of the paper on the page.
	Position int `json:"position"`
	// Capture is the file path or URL the bytes were read from.
	Capture string `json:"capture,omitempty"`
	// FetchedAt is when the page was fetched (RFC 3339); omitted for files.
	FetchedAt string `json:"fetched_at,omitempty"`
	// RunID names the crawl run that fetched the page; omitted for files.
	RunID string `json:"run_id,omitempty"`
}

// Warning codes carried in Record.Warnings.
const (
	// WarnNoJSON: the block had no embedded JSON; fields come from visible lines.
	WarnNoJSON = "no-json"
	// WarnJSONTruncated: the block's JSON was cut off; complete fields were salvaged.
	WarnJSONTruncated = "json-truncated"
	// WarnJSONVisibleMismatch: the JSON and the visible lines disagree (DOI,
	// date, title or impact factor); the JSON value was kept.
	WarnJSONVisibleMismatch = "json-visible-mismatch"
	// WarnJSONOddTypes: some JSON fields had unexpected types and were ignored.
	WarnJSONOddTypes = "json-odd-types"
	// WarnNoTitle: no title could be found for the paper.
	WarnNoTitle = "no-title"
	// WarnTextTruncated: the page was cut off (an HTML page without its
	// closing tags, or a capture that ends inside a JSON object) in or
	// after this paper's block, the page's last: its visible text, such
	// as the abstract, may be incomplete.
	WarnTextTruncated = "text-truncated"
	// WarnDOIConflict: another paper of the page, with another title, gave
	// the same DOI (a proceedings' DOI, a publisher's error); the DOI was
	// left to that one (the one without JSON, whose identity it is, else
	// the first on the page) and taken off this record.
	WarnDOIConflict = "doi-conflict"
)

// AddWarning appends code unless the record already carries it.
func (r *Record) AddWarning(code string) {
	for _, w := range r.Warnings {
		if w == code {
			return
		}
	}
	r.Warnings = append(r.Warnings, code)
}

// DOIID is the record id of a paper known only by its DOI.
func DOIID(doi string) string { return "doi:" + DOIKey(doi) }

// TitleID is the record id of a paper with neither a site id nor a DOI:
// "title:" and the first 16 hex digits of sha256 over
// lower(collapse_whitespace(title)) + "|" + published.
func TitleID(title, published string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(CollapseSpace(title)) + "|" + published))
	return "title:" + hex.EncodeToString(sum[:8])
}

// CollapseSpace trims s and replaces every run of white space (Unicode
// spaces including U+00A0, and ASCII control characters) with one ASCII
// space.
func CollapseSpace(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		if r <= ' ' || unicode.IsSpace(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}
