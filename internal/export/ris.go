package export

import (
	"bufio"
	"io"
	"strings"

	"github.com/litcrawl/litcrawl/record"
)

// WriteRIS writes the records as RIS (TY JOUR), lines ending CR LF as
// the format's readers expect: TI the title, OP the Chinese title (the
// title of another version, which citation-js and Zotero read as the
// original title; TT would make it the title shown), AU each author ("Family, Given", or the name
// whole), T2 and JO the journal, VL, IS, SP and EP, PY and DA the date
// (YYYY/MM/DD/), DO, UR, AB and ID the citation key.
func WriteRIS(w io.Writer, recs []record.Record) error {
	bw := bufio.NewWriter(w)
	for i, key := range Keys(recs) {
		r := recs[i]
		tag := func(t, value string) {
			if value = oneLine(value); value != "" {
				bw.WriteString(t + "  - " + value + "\r\n")
			}
		}
		tag("TY", "JOUR")
		tag("ID", key)
		tag("TI", r.Title)
		tag("OP", r.TitleCN)
		for _, a := range r.Authors {
			n := SplitName(a)
			switch {
			case n.Literal != "":
				tag("AU", n.Literal)
			case n.Family != "":
				s := n.Family + ", " + n.Given
				if n.Suffix != "" {
					s += ", " + n.Suffix
				}
				tag("AU", s)
			}
		}
		if j := r.Journal; j != nil {
			tag("T2", j.Name)
			tag("JO", j.Name)
			tag("VL", j.Volume)
			tag("IS", j.Issue)
			first, last, _ := strings.Cut(j.Pages, "-")
			tag("SP", first)
			tag("EP", last)
		}
		if y, m, d, ok := dateParts(r.Published); ok {
			date := pad(y, 4) + "/"
			if m > 0 {
				date += pad(m, 2)
			}
			date += "/"
			if d > 0 {
				date += pad(d, 2)
			}
			tag("PY", date+"/")
			tag("DA", date+"/")
		}
		tag("DO", r.DOI)
		tag("UR", cmpOr(r.DOIURL, r.URL))
		tag("AB", cmpOr(r.Abstract, r.AbstractCN))
		bw.WriteString("ER  - \r\n\r\n")
	}
	return bw.Flush()
}

// oneLine is s on one line, its white space runs single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
