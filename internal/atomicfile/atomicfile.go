// Package atomicfile writes a file whole or not at all, durably: through a
// temporary file next to it, fsynced, renamed over it, and the directory
// fsynced, so that a reader never sees half a file and a crash or a power
// loss leaves either the old file or the new one.
package atomicfile

import (
	"bufio"
	"os"
	"path/filepath"
)

// Write writes the file at path (mode 0644) with what fill writes to w
// (buffered: fill need not buffer). When it returns nil the new file is on
// disk.
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
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err == nil {
		err = SyncDir(filepath.Dir(path))
	}
	return err
}

// SyncDir fsyncs a directory, so that a file created, renamed or removed
// in it stays so after a power loss.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
