package fspath

import (
	"os"
	"path/filepath"
	"testing"
)

// Two spellings of one directory, one through a link, are one place; a
// path that does not exist yet is still absolute.
func TestReal(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "feeds")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if Real(link) != Real(target) || Real(target+"/.") != Real(target) {
		t.Errorf("Real(%q) = %q, Real(%q) = %q: want one place", link, Real(link), target, Real(target))
	}
	// A path below a link, not made yet: through the link.
	if got, want := Real(filepath.Join(link, "sub", "deeper")), filepath.Join(Real(target), "sub", "deeper"); got != want {
		t.Errorf("Real of a path not made yet below a link = %q, want %q", got, want)
	}
	t.Chdir(dir)
	if got := Real("later"); !filepath.IsAbs(got) || filepath.Base(got) != "later" {
		t.Errorf("Real of a path not made yet = %q, want it absolute", got)
	}
}
