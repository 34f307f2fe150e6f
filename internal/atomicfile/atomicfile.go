// Package atomicfile is the one durable replace of a file that the project
// writes whole (the state's migration, upgrade and rebuild, runs.json, the
// reports, the metrics textfile, the quarantine): through a temporary file
// next to it, fsynced, renamed over it, and the directory fsynced, so that a
// reader never sees half a file and a crash or a power loss leaves either
// the old file or the new one. Write writes the file; Replace puts one
// built by another writer (bbolt) in place.
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
		err = rename(tmp.Name(), path)
	}
	return err
}

// Replace makes the file tmp, which the caller wrote and closed (a bbolt
// file built beside the old one), the file at path, durably: it fsyncs
// tmp, renames it over path and fsyncs the directories. When it returns
// nil the new file is on disk; on an error before the rename, path is as
// it was and tmp is left to the caller.
func Replace(tmp, path string) error {
	if err := syncPath(tmp); err != nil {
		return err
	}
	return rename(tmp, path)
}

// rename renames a synced file and fsyncs the directories involved.
func rename(tmp, path string) error {
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if from := filepath.Dir(tmp); from != filepath.Dir(path) {
		if err := SyncDir(from); err != nil {
			return err
		}
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir fsyncs a directory, so that a file created, renamed or removed
// in it stays so after a power loss.
func SyncDir(dir string) error { return syncPath(dir) }

// syncPath fsyncs the file or directory at path.
func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
