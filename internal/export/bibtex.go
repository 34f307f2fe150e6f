package export

import (
	"bufio"
	"io"
	"strings"
	"unicode"

	"github.com/litcrawl/litcrawl/record"
)

// WriteBibTeX writes the records as BibTeX @article entries (UTF-8, as
// biber, pandoc and the reference managers read it): title (each word
// with a capital letter in braces, so that no style lowers it), the
// Chinese title as origtitle (no BibTeX field is for a title's
// translation; biblatex's alternative title is the one readers keep,
// and pandoc maps it to CSL's original-title), authors (family, given;
// a name that does not tell them apart, a Chinese one, in braces, whole),
// journal, volume, number, pages, year and date, doi, url and abstract.
// The characters TeX reserves are escaped; other Unicode stays as it is.
func WriteBibTeX(w io.Writer, recs []record.Record) error {
	bw := bufio.NewWriter(w)
	for i, key := range Keys(recs) {
		r := recs[i]
		if i > 0 {
			bw.WriteString("\n")
		}
		bw.WriteString("@article{" + key + ",\n")
		field := func(name, value string) {
			if value != "" {
				bw.WriteString("  " + name + " = {" + value + "},\n")
			}
		}
		field("title", protectCapitals(r.Title))
		field("origtitle", texEscape(r.TitleCN))
		field("author", bibNames(r.Authors))
		if j := r.Journal; j != nil {
			field("journal", texEscape(j.Name))
			field("volume", texEscape(j.Volume))
			field("number", texEscape(j.Issue))
			field("pages", texEscape(strings.ReplaceAll(j.Pages, "-", "--")))
		}
		if y, m, d, ok := dateParts(r.Published); ok {
			field("year", pad(y, 4))
			date := pad(y, 4)
			if m > 0 {
				date += "-" + pad(m, 2)
				if d > 0 {
					date += "-" + pad(d, 2)
				}
			}
			field("date", date)
		}
		field("doi", verbatim(r.DOI))
		field("url", verbatim(cmpOr(r.DOIURL, r.URL)))
		field("abstract", texEscape(cmpOr(r.Abstract, r.AbstractCN)))
		bw.WriteString("}\n")
	}
	return bw.Flush()
}

// texEscape is s as BibTeX field text: one line; the characters TeX
// reserves (\ { } $ & % # _ ~ ^) escaped. BibTeX, biber, JabRef and
// bibtexparser count a field's braces whatever stands before them, so a
// field's braces are written \{ and \} (which every reader, pandoc
// included, reads as braces) only when they pair up; otherwise (a cut
// abstract's lone "{") as \textbraceleft{} and \textbraceright{}, which
// keep the field's braces balanced (pandoc 2.17 reads them as nothing).
func texEscape(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return texEscapeBraces(s, paired(s))
}

// paired says whether s's braces pair up, in order.
func paired(s string) bool {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			if depth--; depth < 0 {
				return false
			}
		}
	}
	return depth == 0
}

// texEscapeBraces is texEscape with the field's choice of braces made.
func texEscapeBraces(s string, pairs bool) string {
	if !strings.ContainsAny(s, `\{}$&%#_~^`) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\textbackslash{}`)
		case r == '~':
			b.WriteString(`\textasciitilde{}`)
		case r == '^':
			b.WriteString(`\textasciicircum{}`)
		case r == '{' && !pairs:
			b.WriteString(`\textbraceleft{}`)
		case r == '}' && !pairs:
			b.WriteString(`\textbraceright{}`)
		case strings.ContainsRune("{}$&%#_", r):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// protectCapitals is a title as BibTeX text, each word holding a capital
// letter in braces ("{Adaptive} {ViFi}: {Handoff} for {Vehicular}
// {Networks}"): styles lower a title's letters outside braces, and the
// site's titles are as the papers give them. (A word holding a brace of
// a pair that spans words is not put in braces of its own: the title's
// braces pair up as a whole, not the word's.)
func protectCapitals(title string) string {
	words := strings.Fields(title)
	pairs := paired(title)
	for i, w := range words {
		e := texEscapeBraces(w, pairs)
		if strings.ContainsFunc(w, unicode.IsUpper) && (!pairs || paired(w)) {
			if strings.HasPrefix(e, `\`) {
				e = "{" + e + "}" // ({\… is a special character to BibTeX)
			}
			e = "{" + e + "}"
		}
		words[i] = e
	}
	return strings.Join(words, " ")
}

// verbatim is an identifier (a DOI, a URL) as a field biblatex reads
// verbatim: as it is (a URL's escapes too), but that braces, a backslash
// and spaces, which would end or break the field, are percent-encoded.
func verbatim(s string) string {
	if !strings.ContainsAny(s, "{}\\ ") {
		return s
	}
	return strings.NewReplacer("{", "%7B", "}", "%7D", `\`, "%5C", " ", "%20").Replace(s)
}

// bibNames is an author list as BibTeX reads one: names joined by "and",
// each "Family, Given" ("Family, Jr., Given"), or in braces, whole.
func bibNames(authors []string) string {
	var out []string
	for _, a := range authors {
		n := SplitName(a)
		switch {
		case n.Literal != "":
			out = append(out, "{"+texEscape(n.Literal)+"}")
		case n.Family != "":
			s := texEscape(n.Family) + ", "
			if n.Suffix != "" {
				s += texEscape(n.Suffix) + ", "
			}
			out = append(out, s+texEscape(n.Given))
		}
	}
	return strings.Join(out, " and ")
}
