package export

import (
	"encoding/json"
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

// ourKey is a citation key as Key makes them (Keys' "-2" too): a site
// id of four digits or more, or "h" and 8 hex digits.
var ourKey = regexp.MustCompile(`^[a-z0-9]+-(\d{4,}|h[0-9a-f]{8})(-\d+)?$`)

var (
	bibEntry = regexp.MustCompile(`(?m)^@([A-Za-z]+)\s*\{\s*([^,\s]*)`)
	bibAt    = regexp.MustCompile(`(?m)^\s*@`)
	risStart = regexp.MustCompile(`(?m)^TY  - `)
	risID    = regexp.MustCompile(`(?m)^ID  - (\S+)\r?$`)
)

// maxReplaceable bounds the file Replaceable reads whole.
const maxReplaceable = 1 << 30

// Replaceable says whether -o may replace path: a file that does not
// exist, is empty, or is wholly an earlier export of the format: every
// entry one crawl export writes (an @article, or an item, under a key
// Key makes). Anything else (a library of the user's own, one entry of
// it added to an export, the records' JSONL, a crawl state, a feed)
// would be lost.
func Replaceable(path, format string) error {
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if info.Size() > maxReplaceable {
		return fmt.Errorf("exists, and is too large (%d bytes) to check that it is an earlier export: remove it first, or write to another file", info.Size())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	text := strings.TrimSpace(string(data))
	if text == "" || text == "[]" || ours(text, format) {
		return nil
	}
	return fmt.Errorf("exists and is not wholly an earlier %s export of crawl export (a library of your own?): remove it first, or write to another file", format)
}

// ours says whether text is wholly entries crawl export writes.
func ours(text, format string) bool {
	switch format {
	case "bibtex":
		es := bibEntry.FindAllStringSubmatch(text, -1)
		if len(es) == 0 || len(es) != len(bibAt.FindAllStringIndex(text, -1)) {
			return false
		}
		for _, e := range es {
			if e[1] != "article" || !ourKey.MatchString(e[2]) {
				return false
			}
		}
		return true
	case "ris":
		ids := risID.FindAllStringSubmatch(text, -1)
		if len(ids) == 0 || len(ids) != len(risStart.FindAllStringIndex(text, -1)) {
			return false
		}
		for _, id := range ids {
			if !ourKey.MatchString(id[1]) {
				return false
			}
		}
		return true
	case "csl-json":
		var items []map[string]any
		if json.Unmarshal([]byte(text), &items) != nil || len(items) == 0 {
			return false
		}
		for _, it := range items {
			id, _ := it["id"].(string)
			if !ourKey.MatchString(id) || it["citation-key"] != id || it["type"] != "article-journal" {
				return false
			}
		}
		return true
	}
	return false
}
