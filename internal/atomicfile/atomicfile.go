// Package atomicfile writes a file whole or not at all: through a
// temporary file next to it, renamed over it once written and closed, so
// that a reader never sees half a file and a crash leaves the old one.
package atomicfile

import (
	"bufio"
	"os"
	"path/filepath"
)

// Write writes the file at path (mode 0644) with what fill writes to w
// (buffered: fill need not buffer).
func Write(path string, fill func(w *bufio.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	w := bufio.NewWriterSize(tmp, 64<<10)
	err = fill(w)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = tmp.Chmod(0o644) // as os.WriteFile would make it, not CreateTemp's 0600
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	return err
}
