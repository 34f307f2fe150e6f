package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/internal/exitcode"
)

// crawl parse --explain prints a page's text: control characters (C1
// ones, such as the one that sets a terminal's title, included) and marks
// that reorder what follows never reach the terminal.
func TestExplainPrintsNoControlFromThePage(t *testing.T) {
	page, err := os.ReadFile(filepath.Join(repoRoot, "fixtures", "seeds", "000_92928c0d02c94ff5.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// A line of its own after the heading, and the same in a title.
	evil := "evil \u009d0;pwned\u009c here \u202eright\u202c \u0085next \u2066iso\u2069 \u200fmark"
	i := bytes.Index(page, []byte("\n\n"))
	if i < 0 {
		t.Fatal("the seed page has no paragraphs")
	}
	page = bytes.Replace(page, []byte("Vortex:"), []byte("Vortex "+evil+":"), 1)
	i += 2
	path := filepath.Join(t.TempDir(), "evil\u202e.htm")
	if err := os.WriteFile(path, append(append(append([]byte{}, page[:i]...), evil+"\n\n"...), page[i:]...), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := crawl(t, "parse", "--explain", path)
	if code != exitcode.OK || !strings.Contains(out, "evil") {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	for _, r := range []rune{0x9d, 0x9c, 0x202e, 0x202c, 0x85, 0x2066, 0x2069, 0x200f, 0x1b, 0x07} {
		if strings.ContainsRune(out, r) {
			t.Errorf("--explain printed U+%04X from the page", r)
		}
	}
}

// Messages quote outside text too (a file name found in a directory): no
// control character or reordering mark of it reaches the terminal.
func TestMessagesPrintNoControlFromAFileName(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ev\u202eil\u009bx\u2066.htm"), []byte("<html><body><p>nothing here</p></body></html>"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, errs := crawl(t, "parse", dir)
	if !strings.Contains(errs, "no records") {
		t.Fatalf("stderr %q", errs)
	}
	for _, r := range []rune{0x202e, 0x9b, 0x2066} {
		if strings.ContainsRune(errs, r) {
			t.Errorf("a message printed U+%04X from a file name: %q", r, errs)
		}
	}
}
