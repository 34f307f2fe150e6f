// Package parser turns the bytes of a saved or fetched listing page into
// paper records. It knows nothing of HTTP or of where records go.
//
// Parse reads HTML of any markup and plain-text captures, tolerates noise
// (headers, filters, pagers, footer ICP lines), cut-off text and missing
// parts, reads a block's lines in any order when the block carries its
// JSON and by what they look like when it does not, never yields one
// paper twice, and never panics. What it cannot read exactly it reports
// (Page.Findings), so that a run alarms rather than deliver a wrong
// field.
//
// A page goes through stages with one direction, each a function of the
// previous one's output (parse.go runs them in order): bytes → text →
// raw lines → lines → blocks → records → findings. A stage calls the
// forms (forms.go, text.go: what a string looks like) and never a later
// stage. Files:
//
//   - parse.go: Parse, Options, Page; the stages in order; the parse budget
//   - decode.go: bytes → text, the one place bytes become UTF-8 (charsets)
//   - stream.go: text → raw lines, from HTML's token stream (no tree)
//   - lexer.go: the token stream of a page of the markup listing pages
//     use, read in place (else x/net/html's tokenizer)
//   - flatten.go: raw lines from goquery's DOM (markup the stream hands
//     over), the flattening rules both share, text captures' lines
//   - lines.go: raw lines → lines: the classifier; line kinds (noise,
//     heading, meta, citation) and the date/DOI labels, date and DOI forms
//   - ranking.go: the ranking line (impact factor, zone, subject, JCR)
//   - jsonscan.go: paper objects found in a line (and cut-off ones told from prose)
//   - jsondecode.go: one-pass decoder of paper objects, held to encoding/json by a fuzz target
//   - paperjson.go: the site's paper object, lenient types, salvage of cut-off objects
//   - segment.go: lines → blocks (by JSON, heads, citation lines, or a
//     title by content and the roles of the lines after it); pairing
//     detached JSON
//   - merge.go: blocks put back together (pieces of one block in another
//     order), and records of one paper merged
//   - cutend.go: where the capture ends: a block it cut, a next block cut
//   - assemble.go: blocks → records: visible lines read against the JSON
//     or by content, then one rule a field group (fromJSON, shownOnly,
//     fillFromLines, identify)
//   - plausible.go: records → findings: one rule a field (fieldRules)
//   - forms.go, text.go: the forms every stage reads with (names, title
//     lines, sentences, Chinese prose, plain text, CJK helpers)
//   - explain.go: Explain, each visible line and what it was taken for
package parser
