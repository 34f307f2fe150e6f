// Package export turns delivered records into the formats reference
// managers import: BibTeX, RIS and CSL-JSON (crawl export).
//
// Records are read from JSONL files as the sinks wrote them, each line
// checked as a record (read.go); of every paper the last revision is
// kept, and a paper whose id a later record replaces is that record
// (papers.go). Each format is a writer over the kept records:
//
//   - read.go: JSONL lines to records, bounded and checked
//   - papers.go: the last revision of each paper, and the filters
//   - dates.go: a paper's date in parts, and a filter's day
//   - names.go: an author's name as family and given names, or a literal
//   - keys.go: citation keys (stable: the same paper, the same key)
//   - format.go: the formats by name, and the keys of an export
//   - bibtex.go, ris.go, csljson.go: the formats
package export
