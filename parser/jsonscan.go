package parser

import (
	"html"
	"strings"
)

// jsonHit is one paper object found in a piece of text.
type jsonHit struct {
	start, end int // byte offsets of the object in the scanned text
	paper      *paperJSON
}

// scanBudgetFactor bounds the work of extractPapers to this many bytes
// scanned per input byte (plus a constant), so hostile input with thousands
// of unbalanced braces cannot make extraction quadratic.
const scanBudgetFactor = 16

// extractPapers finds every embedded paper object in s, in order. It
// understands JSON strings and escapes (braces inside abstracts, \", \u0000,
// <\/), objects embedded in other text, and HTML-escaped JSON ({&quot;…).
// Objects that are valid JSON but not paper metadata are skipped, and the
// scan continues inside them, so papers wrapped in an outer object or array
// are found. A paper object cut off by the end of s is returned with
// paper.truncated set and the fields that were complete.
//
// It never panics and its work is linear in len(s).
//
// exhausted is true when the scan stopped early because of its work bound.
func extractPapers(s string) (hits []jsonHit, exhausted bool) {
	hits, exhausted = scanPapers(s)
	if len(hits) == 0 && strings.Contains(s, "{&quot;") {
		// The whole object is HTML-escaped (e.g. copied from an attribute):
		// unescape and scan again. Offsets then refer to the unescaped text;
		// callers only use them to cut surrounding text, so report the whole
		// line.
		var ex bool
		hits, ex = scanPapers(html.UnescapeString(s))
		exhausted = exhausted || ex
		for i := range hits {
			hits[i].start, hits[i].end = 0, len(s)
		}
	}
	return hits, exhausted
}

func scanPapers(s string) (hits []jsonHit, exhausted bool) {
	budget := scanBudgetFactor*len(s) + 4096
	for i := 0; i < len(s); {
		j := strings.IndexByte(s[i:], '{')
		if j < 0 {
			break
		}
		start := i + j
		if !looksLikeObjectStart(s, start) {
			i = start + 1
			continue
		}
		// Decode in place: the decoder finds the object's end as it goes.
		p, end, ok := decodePaperAt(s, start)
		budget -= end - start
		if ok && p.isPaper() {
			hits = append(hits, jsonHit{start: start, end: end, paper: p})
			i = end
			continue
		}
		if budget < 0 {
			return hits, true
		}
		if ok {
			i = start + 1 // not a paper: papers may be nested inside
			continue
		}
		// Not valid JSON: cut off by the end of the text, or just braces in
		// prose? The balanced scan tells.
		_, state := matchObject(s, start, &budget)
		if budget < 0 {
			return hits, true
		}
		if state != objTruncated {
			i = start + 1
			continue
		}
		// Cut off before its closing brace: a paper only if its first keys
		// say so.
		if looksLikePaperPrefix(s[start:]) {
			p := salvagePaper([]byte(s[start:]))
			if strings.TrimSpace(p.Title) != "" || p.DOI != "" || p.PaperID != "" {
				hits = append(hits, jsonHit{start: start, end: len(s), paper: p})
				break
			}
		}
		i = start + 1
	}
	return hits, false
}

// looksLikeObjectStart: '{' followed (after white space) by '"' or '}'.
func looksLikeObjectStart(s string, i int) bool {
	for k := i + 1; k < len(s); k++ {
		switch s[k] {
		case ' ', '\t', '\n', '\r':
			continue
		case '"', '}':
			return true
		default:
			return false
		}
	}
	return false
}

// looksLikePaperPrefix reports whether a cut-off object begins like the
// site's paper objects: a "title" key among its first keys together with
// paper keys, or a paperid/doi key.
func looksLikePaperPrefix(s string) bool {
	head := s
	if len(head) > 4096 {
		head = head[:4096]
	}
	hasTitle := strings.Contains(head, `"title"`)
	return hasTitle && (strings.Contains(head, `"authors"`) || strings.Contains(head, `"doi"`)) ||
		strings.Contains(head, `"paperid"`)
}

const (
	objComplete  = iota // balanced; end is just past the closing brace
	objTruncated        // the text ended inside the object
	objMalformed        // brackets do not match: not JSON
)

// matchObject scans from the '{' at s[start] to its matching '}', honouring
// JSON strings and escapes, and returns where the object ends and whether it
// is complete, truncated or malformed. Each byte scanned is charged to budget.
func matchObject(s string, start int, budget *int) (end, state int) {
	depth := 0
	inString := false
	for k := start; k < len(s); k++ {
		*budget--
		if *budget < 0 {
			return len(s), objTruncated
		}
		c := s[k]
		if inString {
			switch c {
			case '\\':
				k++ // skip the escaped byte; \uXXXX digits are harmless
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				if c != '}' {
					return k + 1, objMalformed
				}
				return k + 1, objComplete
			}
			if depth < 0 {
				return k + 1, objMalformed
			}
		}
	}
	return len(s), objTruncated
}
