package export

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/litcrawl/litcrawl/internal/textsafe"
	"github.com/litcrawl/litcrawl/record"
)

// MaxLine is the longest line read, as the sinks bound what they write
// (sink.MaxLine).
const MaxLine = 16 << 20

// maxIDBytes bounds a paper's id, as the feeds do.
const maxIDBytes = 512

// MaxPapers bounds the papers one export holds (each paper's last
// revision is kept in memory until they are written: about 1 to 2 KB a
// paper, so at most a few GB); a larger input is refused, naming the
// filters that split it.
var MaxPapers = 1_000_000

// Read adds the records of a JSONL stream (name is for errors: a file,
// or "standard input") to ps. A blank line is skipped; a line that is not
// a record, or longer than MaxLine, is an error naming the line.
func Read(r io.Reader, name string, ps *Papers) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine+1)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if strings.TrimSpace(string(line)) == "" {
			continue
		}
		var rec record.Record
		if err := json.Unmarshal(line, &rec); err != nil {
			return fmt.Errorf("%s:%d: not a record (a line of JSON, as the jsonl sink writes): %v", name, n, err)
		}
		if err := Check(&rec); err != nil {
			return fmt.Errorf("%s:%d: %v", name, n, err)
		}
		ps.Add(rec)
		if ps.Len() > MaxPapers {
			return fmt.Errorf("%s:%d: more than %d papers in one export: export a part at a time (--journal, --since, --until)", name, n, MaxPapers)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("%s:%d: a line over %d bytes: not a record a sink wrote", name, n+1, MaxLine)
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// Check makes a record read from outside (a file anyone may have edited)
// safe to export: its id must be one (1 to 512 bytes of UTF-8, not only
// spaces); control characters leave every field; a link that is not an
// absolute http or https URL without user information is dropped (a
// javascript: URL never reaches a reference manager), and so is a DOI
// that is none.
func Check(r *record.Record) error {
	if strings.TrimSpace(r.ID) == "" || len(r.ID) > maxIDBytes || !utf8.ValidString(r.ID) {
		return fmt.Errorf("a record without a valid id (1 to %d bytes of UTF-8)", maxIDBytes)
	}
	for _, f := range []*string{&r.Title, &r.TitleCN, &r.Abstract, &r.AbstractCN, &r.Subject} {
		*f = spaced(*f)
	}
	for i := range r.Authors {
		r.Authors[i] = spaced(r.Authors[i])
	}
	if r.Journal != nil {
		r.Journal.Name = spaced(r.Journal.Name)
	}
	r.CleanControl()
	if r.DOI != "" && !record.IsDOI(r.DOI) {
		r.DOI = ""
	}
	r.DOIURL = record.DOIURL(r.DOI)
	r.URL = record.WebLink(r.URL)
	r.OpenAccessPDF = record.WebLink(r.OpenAccessPDF)
	return nil
}

// spaced is a text with its control characters (line breaks, tabs) as
// spaces, so that words they parted stay apart, and without the marks
// that reorder text or show as nothing (a bidirectional override would
// reorder a reference list).
func spaced(s string) string {
	if !strings.ContainsFunc(s, textsafe.Unsafe) {
		return s
	}
	return strings.Map(func(r rune) rune {
		switch {
		case textsafe.Control(r):
			return ' '
		case textsafe.Unsafe(r):
			return -1
		}
		return r
	}, s)
}
