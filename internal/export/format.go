package export

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/litcrawl/litcrawl/record"
)

// Formats are the formats by name, as --format takes them.
var Formats = map[string]func(io.Writer, []record.Record) error{
	"bibtex":   WriteBibTeX,
	"ris":      WriteRIS,
	"csl-json": WriteCSLJSON,
}

// FormatNames lists the formats for messages.
const FormatNames = "bibtex, ris or csl-json"

// Keys are the records' citation keys (Key), one for each: should two
// papers' keys ever be one (their ids' hashes alike), the later gets
// "-2", "-3"….
func Keys(recs []record.Record) []string {
	keys := make([]string, len(recs))
	seen := map[string]int{}
	for i, r := range recs {
		k := Key(r)
		if n := seen[k]; n > 0 {
			seen[k] = n + 1
			k += "-" + strconv.Itoa(n+1)
		} else {
			seen[k] = 1
		}
		keys[i] = k
	}
	return keys
}

// Write writes recs in the named format.
func Write(w io.Writer, format string, recs []record.Record) error {
	f, ok := Formats[format]
	if !ok {
		return fmt.Errorf("format %q: expected %s", format, FormatNames)
	}
	return f(w, recs)
}

// firstKey finds the first entry's citation key of a file of each format.
var firstKey = map[string]*regexp.Regexp{
	"bibtex":   regexp.MustCompile(`(?m)^@article\{([^,\s]+),`),
	"ris":      regexp.MustCompile(`(?m)^ID  - (\S+)\r?$`),
	"csl-json": regexp.MustCompile(`"id": "([^"]+)"`),
}

// ourKey is a citation key as Key makes them (Keys' "-2" too).
var ourKey = regexp.MustCompile(`^[a-z0-9]+-(\d+|h[0-9a-f]{8})(-\d+)?$`)

// Replaceable says whether -o may replace path: a file that does not
// exist, is empty, or is an earlier export of the format (its first
// entry's citation key one Key makes). Anything else (a library of the
// user's own, the records' JSONL, a crawl state, a feed) would be lost.
func Replaceable(path, format string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, 64<<10)
	n, _ := io.ReadFull(f, head)
	text := strings.TrimSpace(string(head[:n]))
	if text == "" || text == "[]" {
		return nil
	}
	if m := firstKey[format].FindStringSubmatch(text); m != nil && ourKey.MatchString(m[1]) {
		return nil
	}
	return fmt.Errorf("exists and is not an earlier %s export of crawl export: remove it first, or write to another file", format)
}
