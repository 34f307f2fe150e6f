package parser

import (
	"bytes"
	"encoding/json"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/site"
)

var update = flag.Bool("update", false, "rewrite the golden JSONL files under fixtures/golden")

const fixturesDir = "../fixtures"

// fixturePages lists every page under fixtures/ (not the goldens), as paths
// relative to the repository root: "fixtures/seeds/000_….txt".
func fixturePages(t testing.TB) []string {
	t.Helper()
	var pages []string
	err := filepath.WalkDir(fixturesDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "golden" {
			return filepath.SkipDir
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".htm", ".html", ".txt":
			rel, _ := filepath.Rel("..", p)
			pages = append(pages, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatal("no fixture pages found")
	}
	return pages
}

// parseFixture parses a fixture page as `crawl parse` does.
func parseFixture(t testing.TB, rel string) *Page {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	journal, pageNo, _ := site.Default.ParseFile(rel)
	page, err := Parse(data, Options{Capture: rel, Journal: journal, Page: pageNo})
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return page
}

func encodeJSONL(t testing.TB, recs []record.Record) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i := range recs {
		if err := enc.Encode(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func goldenPath(rel string) string {
	return filepath.Join(fixturesDir, "golden", strings.TrimPrefix(filepath.FromSlash(rel), "fixtures"+string(filepath.Separator))+".jsonl")
}

// TestGolden parses every fixture page and compares the JSONL with its golden
// file. Run `go test ./parser -update` to rewrite the goldens, then read the
// diff before committing it.
func TestGolden(t *testing.T) {
	for _, rel := range fixturePages(t) {
		t.Run(rel, func(t *testing.T) {
			recs := parseFixture(t, rel).Records
			for i, r := range recs {
				if f, v := FurnitureIn(r); f != "" {
					t.Errorf("record %d: page furniture in %s: %q", i+1, f, v)
				}
				if err := validRecord(t, r); err != nil {
					t.Errorf("record %d does not validate against the schema: %v", i+1, err)
				}
			}
			got := encodeJSONL(t, recs)
			gp := goldenPath(rel)
			if *update {
				if err := os.MkdirAll(filepath.Dir(gp), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(gp, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(gp)
			if err != nil {
				t.Fatalf("no golden for %s (run go test ./parser -update): %v", rel, err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from %s\n%s", rel, gp, lineDiff(want, got))
			}
		})
	}
}

// lineDiff names the first differing line of two JSONL texts.
func lineDiff(want, got []byte) string {
	i, w, g, ok := firstDiff(strings.Split(string(want), "\n"), strings.Split(string(got), "\n"))
	if !ok {
		return "(identical lines; trailing bytes differ)"
	}
	return "line " + strconv.Itoa(i+1) + ":\n want: " + w + "\n  got: " + g
}

// firstDiff finds the first index where want and got differ (a missing
// element counts as the zero value).
func firstDiff[T comparable](want, got []T) (i int, w, g T, differ bool) {
	for i = range max(len(want), len(got)) {
		var w, g T
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			return i, w, g, true
		}
	}
	return 0, w, g, false
}
