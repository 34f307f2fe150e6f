package engine

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/record"
)

// The revision rule. A delivered paper's content is remembered as a print
// (ledger.Print, 13 bytes):
//
//	bytes 0–1   revision (14 bits), cut (bit 14: the read was of a cut
//	            capture), site id (bit 15: the paper's id is the site's)
//	bytes 2–5   a 32-bit hash of every field below but the citations
//	bytes 6–12  a 4-bit hash of each field (0: the record has none), in
//	            the order of fieldNames
//
// A later read of the paper is compared with it (judge): the same content
// delivers nothing; more, or other, content delivers the paper again as
// its next revision, naming the fields that changed; a read that lacks a
// field the delivered revision has (a cut capture, the JSON missing today)
// delivers nothing, for the update would make the record poorer.

// Field names, in the order of the print's 4-bit hashes: what a record's
// changed list names. "doi" covers doi, doi_url, site_doi and arxiv_id;
// "journal" the journal object; "ranking" impact_factor, zone, subject,
// jcr_quartile and jcr_category.
var fieldNames = [...]string{"title", "title_cn", "authors", "abstract", "abstract_cn", "published", "doi", "url",
	"journal", "ranking", "open_access_pdf", "publication_type", "citations"}

const (
	fieldCitations = 12
	numFields      = len(fieldNames)
	maxRevision    = 1<<14 - 1
	flagCut        = 1 << 14
	flagSiteID     = 1 << 15
)

// fieldMask is a set of fields: bit i is fieldNames[i].
type fieldMask uint16

func (m fieldMask) names() []string {
	var out []string
	for i := range numFields {
		if m&(1<<i) != 0 {
			out = append(out, fieldNames[i])
		}
	}
	return out
}

type fprint ledger.Print

func (p fprint) word() uint16     { return binary.BigEndian.Uint16(p[0:]) }
func (p fprint) revision() int    { return int(p.word() & maxRevision) }
func (p fprint) cut() bool        { return p.word()&flagCut != 0 }
func (p fprint) siteID() bool     { return p.word()&flagSiteID != 0 }
func (p fprint) sum() uint32      { return binary.BigEndian.Uint32(p[2:]) }
func (p fprint) field(i int) byte { return p[6+i/2] >> (4 * (i % 2)) & 0xf }

// has is the set of fields the print's record has.
func (p fprint) has() fieldMask {
	var m fieldMask
	for i := range numFields {
		if p.field(i) != 0 {
			m |= 1 << i
		}
	}
	return m
}

// withRevision is p numbered rev.
func (p fprint) withRevision(rev int) ledger.Print {
	w := p.word()&^maxRevision | uint16(min(rev, maxRevision))
	binary.BigEndian.PutUint16(p[0:], w)
	return ledger.Print(p)
}

// Revision is the revision a ledger's print of a paper records: the one
// last delivered (0: no print, a paper delivered before prints were
// kept).
func Revision(p ledger.Print) int { return fprint(p).revision() }

// fingerprint is the print of r's content, revision 0.
func fingerprint(r *record.Record) fprint {
	var p fprint
	var w uint16
	for _, code := range r.Warnings {
		if code == record.WarnTextTruncated || code == record.WarnJSONTruncated {
			w |= flagCut
		}
	}
	if hasSiteID(r.ID) {
		w |= flagSiteID
	}
	binary.BigEndian.PutUint16(p[0:], w)
	var d xxhash.Digest
	var all xxhash.Digest
	all.Reset()
	var buf [9]byte
	for i := range numFields {
		d.Reset()
		if !writeField(&d, r, i) {
			continue
		}
		h := d.Sum64()
		nib := byte(h%15 + 1)
		if i == fieldCitations {
			nib = byte(*r.Citations%15 + 1)
		} else {
			buf[0] = byte(i)
			binary.BigEndian.PutUint64(buf[1:], h)
			all.Write(buf[:])
		}
		p[6+i/2] |= nib << (4 * (i % 2))
	}
	binary.BigEndian.PutUint32(p[2:], uint32(all.Sum64()))
	return p
}

// hasSiteID tells an id the site gave from one made of a DOI or a title.
func hasSiteID(id string) bool {
	return id != "" && !strings.HasPrefix(id, "doi:") && !strings.HasPrefix(id, "title:")
}

// writeField writes field i of r to d; false when r has none.
func writeField(d *xxhash.Digest, r *record.Record, i int) bool {
	s := func(vs ...string) bool {
		any := false
		for _, v := range vs {
			d.WriteString(v)
			d.Write([]byte{0x1f})
			any = any || v != ""
		}
		return any
	}
	switch i {
	case 0:
		return s(r.Title)
	case 1:
		return s(r.TitleCN)
	case 2:
		return len(r.Authors) > 0 && s(r.Authors...)
	case 3:
		return s(r.Abstract)
	case 4:
		return s(r.AbstractCN)
	case 5:
		return s(r.Published)
	case 6:
		return s(r.DOI, r.SiteDOI, r.ArxivID)
	case 7:
		return s(r.URL)
	case 8:
		j := r.Journal
		if j == nil {
			return false
		}
		id := ""
		if j.ID != 0 {
			id = strconv.FormatInt(j.ID, 10)
		}
		return s(id, j.Name, j.Volume, j.Issue, j.Pages)
	case 9:
		f := ""
		if r.ImpactFactor != 0 && !math.IsNaN(r.ImpactFactor) {
			f = strconv.FormatFloat(r.ImpactFactor, 'g', -1, 64)
		}
		z := ""
		if r.Zone != 0 {
			z = strconv.Itoa(r.Zone)
		}
		return s(f, z, r.Subject, r.JCRQuartile, r.JCRCategory)
	case 10:
		return s(r.OpenAccessPDF)
	case 11:
		return s(r.PublicationType)
	case fieldCitations:
		return r.Citations != nil && *r.Citations >= 0
	}
	return false
}

// verdict is what a read of a known paper does.
type verdict uint8

const (
	same     verdict = iota // the content delivered: nothing to do
	revise                  // new content: deliver the next revision
	poorer                  // other content, but the read lacks what was delivered: nothing now
	baseline                // no print to compare with (delivered before prints were kept): record this read's
)

// judge compares a known paper's print (old, zero when none) with a read
// of it (fresh): what to do, and the fields that changed. Citation counts
// count only with citations.
func judge(old ledger.Print, fresh fprint, citations bool) (verdict, fieldMask) {
	if old.IsZero() {
		return baseline, 0
	}
	o := fprint(old)
	content := fieldMask(1<<numFields - 1)
	if !citations {
		content &^= 1 << fieldCitations
	}
	oh, nh := o.has()&content, fresh.has()&content
	changed := nh &^ oh // fields that appeared
	for i := range numFields {
		if oh&nh&(1<<i) != 0 && o.field(i) != fresh.field(i) {
			changed |= 1 << i
		}
	}
	idAppeared := fresh.siteID() && !o.siteID()
	if changed == 0 && o.sum() == fresh.sum() && oh == nh && !idAppeared {
		return same, 0
	}
	switch {
	case oh&^nh != 0, // a field the delivered revision has is missing
		fresh.cut() && !o.cut(),       // a cut capture of a whole one
		fresh.cut() && o.cut(),        // two cut captures: neither is known whole
		o.siteID() && !fresh.siteID(): // a read without the JSON cannot carry the paper's id
		return poorer, changed
	case o.revision() >= maxRevision:
		return poorer, changed // no revision number left
	}
	return revise, changed
}
