// Package parser turns the bytes of a saved or fetched listing page into
// paper records. It knows nothing of HTTP or of where records go.
//
// Parse reads HTML of any markup and plain-text captures, tolerates noise
// (headers, filters, pagers, footer ICP lines), cut-off text and missing
// parts, reads a block's lines in any order when the block carries its
// JSON and by what they look like when it does not, never yields one
// paper twice, and never panics. What it cannot read exactly it reports
// (Page.Findings), so that a run alarms rather than deliver a wrong
// field. Files:
//
//   - parse.go: Parse, Options, Page (records plus what the page looked like)
//   - decode.go: the one place bytes become UTF-8 text (charsets)
//   - flatten.go: DOM or token stream → visible lines and JSON candidates
//   - jsonscan.go: finding paper objects in text (and telling cut-off ones from prose)
//   - jsondecode.go: one-pass decoder of paper objects, held to encoding/json by a fuzz target
//   - paperjson.go: the site's paper object, lenient types, salvage of cut-off objects
//   - lines.go: line kinds (noise, heading, impact, meta, citation) and their
//     fields; the date/DOI labels, date forms and DOI forms read
//   - segment.go: grouping lines into paper blocks (by JSON, heads, citation
//     lines, or a title by content and the roles of the lines after it);
//     pairing detached JSON
//   - merge.go: putting back pieces of blocks whose lines came in another
//     order, and merging two records of one paper
//   - assemble.go: one record per block, JSON merged with visible lines;
//     blocks without JSON read by content (readByContent)
//   - plausible.go: whether each field looks like that field (Implausible,
//     Page.Findings, FurnitureIn): what the quality gate alarms on
//   - explain.go: Explain, each visible line and what it was taken for
//   - text.go: plain text, authors, CJK helpers
package parser
