package export

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzExport: whatever a JSONL file holds, reading it never panics, and
// what is written of its records is well formed: BibTeX braces balanced
// in every entry (as BibTeX counts them: escaped ones too), RIS one tag
// a line, CSL-JSON JSON.
func FuzzExport(f *testing.F) {
	f.Add(`{"id":"1","title":"A {b} \\ c $ % & # _ ~ ^","authors":["Ann Lee","王磊","x and y"],"published":"2024-06-03","doi":"10.1/x"}`)
	f.Add(`{"id":"doi:10.1/a","title":"}{","abstract":"\n\r}","journal":{"name":"J}"}}`)
	f.Add("{}\n[]\nnull")
	f.Fuzz(func(t *testing.T, in string) {
		var ps Papers
		if Read(strings.NewReader(in), "fuzz", &ps) != nil {
			return
		}
		recs := ps.Latest(Filter{})
		var b bytes.Buffer
		if err := WriteBibTeX(&b, recs); err != nil {
			t.Fatal(err)
		}
		for _, entry := range strings.Split(b.String(), "\n@") {
			depth := 0
			// (every brace counts, escaped or not, as BibTeX counts them)
			for i := 0; i < len(entry); i++ {
				switch entry[i] {
				case '{':
					depth++
				case '}':
					depth--
				}
				if depth < 0 {
					t.Fatalf("a brace closes what is not open:\n%s", entry)
				}
			}
			if depth != 0 {
				t.Fatalf("braces not balanced:\n%s", entry)
			}
		}
		b.Reset()
		if err := WriteRIS(&b, recs); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\r\n"), "\r\n") {
			if line != "" && (len(line) < 6 || line[2:6] != "  - " || strings.ContainsAny(line, "\r\n")) {
				t.Fatalf("not a RIS line: %q", line)
			}
		}
		b.Reset()
		if err := WriteCSLJSON(&b, recs); err != nil {
			t.Fatal(err)
		}
		var items []map[string]any
		if err := json.Unmarshal(b.Bytes(), &items); err != nil || len(items) != len(recs) || !utf8.Valid(b.Bytes()) {
			t.Fatalf("CSL-JSON: %v, %d items for %d records", err, len(items), len(recs))
		}
	})
}
