package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/litcrawl/litcrawl/internal/fskind"
	"github.com/litcrawl/litcrawl/internal/fspath"
)

// PrepareOutputFile makes ready a file the command will write by renaming
// a temporary file over it (the HTML report, --report, --metrics-file,
// --cpuprofile, crawl export -o): its directory is made when missing (as
// the file sinks make theirs), and the path must be new or a regular
// file. A directory, a device (/dev/null), a FIFO or a socket would be
// replaced by the rename, and a symbolic link too (not written through):
// they are refused, as is a file inside stateDir (when given), which
// holds the crawl state (checked before any directory is made).
func PrepareOutputFile(path, stateDir string) error {
	if stateDir != "" && inside(path, stateDir) {
		return fmt.Errorf("is inside the state directory %s: write it elsewhere", stateDir)
	}
	dir := filepath.Dir(path)
	if info, err := os.Stat(dir); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("its directory %s cannot be made: %w", dir, err)
		}
	} else if !info.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	info, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	case info.IsDir():
		return fmt.Errorf("is a directory: expected a file name")
	case info.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("is a symbolic link: give the file itself (the file is replaced, not written through the link)")
	case !info.Mode().IsRegular():
		return fmt.Errorf("is not a regular file (%s): expected a file name", fskind.Of(info.Mode()))
	}
	return nil
}

// inside says whether path lies in dir (after making both absolute and
// resolving dir's links).
func inside(path, dir string) bool {
	d := fspath.Real(dir)
	rel, err := filepath.Rel(d, fspath.File(path))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// samePath says whether two paths name the same file (one place:
// fspath.File; or, when both exist, the same file on disk).
func samePath(a, b string) bool {
	if ia, err := os.Stat(a); err == nil {
		if ib, err := os.Stat(b); err == nil {
			return os.SameFile(ia, ib)
		}
	}
	return fspath.File(a) == fspath.File(b)
}
