package layers

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestPackageDocsListTheirFiles: a package doc that lists its files
// ("Files:" in doc.go) lists each of them, and no file that is not there.
func TestPackageDocsListTheirFiles(t *testing.T) {
	docs, err := filepath.Glob("../../*/doc.go")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("../../*/*/doc.go")
	docs = append(docs, more...)
	named := regexp.MustCompile(`\b[a-z0-9_]+\.go\b`)
	checked := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		i := strings.Index(text, "Files")
		if i < 0 {
			continue
		}
		checked++
		end := strings.Index(text[i:], "\npackage ")
		listed := named.FindAllString(text[i:i+end], -1)
		var have []string
		files, _ := filepath.Glob(filepath.Join(filepath.Dir(doc), "*.go"))
		for _, f := range files {
			if name := filepath.Base(f); !strings.HasSuffix(name, "_test.go") && name != "doc.go" {
				have = append(have, name)
			}
		}
		for _, f := range listed {
			if !slices.Contains(have, f) {
				t.Errorf("%s lists %s, which is not in the package", doc, f)
			}
		}
		for _, f := range have {
			if !slices.Contains(listed, f) && !strings.Contains(f, "_linux.go") && !strings.Contains(f, "_other.go") {
				t.Errorf("%s does not list %s", doc, f)
			}
		}
	}
	if checked < 5 {
		t.Fatalf("%d package docs list their files: the glob missed them", checked)
	}
}
