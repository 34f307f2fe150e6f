package export

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/litcrawl/litcrawl/record"
)

// Key is a paper's citation key: its first author's family name, its
// year and the first word of its title that is not a little word, in
// ASCII lower case (the title's word first when the name has no Latin
// letters), then its site id ("lee2024adaptive-8801"; a paper
// known only by its DOI gets 8 hex digits of its id's hash instead). The
// same paper gets the same key in every export as long as those do not
// change (a revision that fixes the title's first word changes it), and
// two papers never get one key: their ids differ. A part with nothing to
// give is left out ("paper" when none gives anything).
func Key(r record.Record) string {
	var author, year, word string
	if len(r.Authors) > 0 {
		n := SplitName(r.Authors[0])
		author = fold(cmpOr(n.Family, n.Literal), 16)
	}
	if y, _, _, ok := dateParts(r.Published); ok {
		year = pad(y, 4)
	}
	for _, w := range strings.Fields(r.Title) {
		if f := fold(w, 16); f != "" && !littleWords[f] {
			word = f
			break
		}
	}
	var b strings.Builder
	if author == "" {
		author, word = word, "" // (a name in another script: the title's word leads)
	}
	b.WriteString(author + year + word)
	if b.Len() == 0 {
		b.WriteString("paper")
	}
	b.WriteByte('-')
	if isDigits(r.ID) && len(r.ID) <= 16 {
		b.WriteString(r.ID)
	} else {
		sum := sha256.Sum256([]byte(r.ID))
		b.WriteString("h" + hex.EncodeToString(sum[:4])) // ("h": never a site id's digits)
	}
	return b.String()
}

var littleWords = map[string]bool{"a": true, "an": true, "the": true, "on": true, "of": true, "for": true, "in": true, "to": true, "and": true, "with": true}

// fold is s's letters and digits in ASCII lower case (accents dropped:
// "Müller" is "muller"), at most max of them; other scripts give nothing.
func fold(s string, max int) string {
	var b strings.Builder
	for _, r := range norm.NFD.String(s) {
		if b.Len() == max {
			break
		}
		switch {
		case r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
