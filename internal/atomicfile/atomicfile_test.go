package atomicfile

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// A write that fails leaves the old file as it was and no temporary file;
// one that succeeds replaces it, readable by all.
func TestWriteIsAllOrNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	os.WriteFile(path, []byte("old"), 0o600)
	err := Write(path, func(w *bufio.Writer) error {
		io.WriteString(w, "half")
		return errors.New("cut")
	})
	if b, _ := os.ReadFile(path); err == nil || string(b) != "old" {
		t.Errorf("failed write: %v, file %q", err, b)
	}
	if err := Write(path, func(w *bufio.Writer) error { _, err := io.WriteString(w, "new"); return err }); err != nil {
		t.Fatal(err)
	}
	info, _ := os.Stat(path)
	if b, _ := os.ReadFile(path); string(b) != "new" || info.Mode().Perm() != 0o644 {
		t.Errorf("file %q mode %v", b, info.Mode())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files left in the directory", len(ents))
	}
}

// Replace puts a file built elsewhere (another directory too) in place;
// one that cannot be read leaves the old file as it was.
func TestReplace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	os.WriteFile(path, []byte("old"), 0o600)
	if err := Replace(filepath.Join(dir, "missing"), path); err == nil {
		t.Fatal("replacing with a missing file succeeded")
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Fatalf("a failed replace changed the file: %q", b)
	}
	other := t.TempDir()
	tmp := filepath.Join(other, "built")
	os.WriteFile(tmp, []byte("new"), 0o600)
	if err := Replace(tmp, path); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("file %q after replace", b)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the built file is still there: %v", err)
	}
}
