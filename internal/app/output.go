package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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

// SamePath says whether two paths name one file (samePath).
func SamePath(a, b string) bool { return samePath(a, b) }

// NotASinksFile refuses path as an output file (a report, the metrics,
// a profile, an export) when it is a sink's: the file of a jsonl: sink,
// or a file in an atom: sink's directory (its feeds, their state). A
// rename over it would destroy records the state marks delivered.
func NotASinksFile(path string, sinks []string) error {
	for _, u := range sinks {
		if p, ok := strings.CutPrefix(u, "jsonl:"); ok && (samePath(p, path) || datedFile(p, path)) {
			return fmt.Errorf("is the records' JSONL file (sink %s): give it a file of its own", u)
		}
		if d, ok := strings.CutPrefix(u, "atom:"); ok {
			if i := strings.IndexByte(d, '?'); i >= 0 {
				d = d[:i]
			}
			if inside(path, d) {
				return fmt.Errorf("is in the feeds' directory %s (sink atom:%s): give it a place of its own", d, d)
			}
		}
	}
	if slices.Contains(strings.Split(filepath.ToSlash(filepath.Clean(path)), "/"), ".litcrawl-atom") {
		return fmt.Errorf("is in a feeds' state directory (.litcrawl-atom): give it a place of its own")
	}
	return nil
}

// datedFile says whether path is a file a JSONL sink's dated template
// ("papers-{date}.jsonl": one file a day) names, on any day.
func datedFile(template, path string) bool {
	if !strings.Contains(template, "{date}") {
		return false
	}
	dir, name := filepath.Split(template)
	if strings.Contains(dir, "{date}") || fspath.Real(filepath.Dir(template)) != fspath.Real(filepath.Dir(path)) {
		return false
	}
	pattern := "^" + strings.ReplaceAll(regexp.QuoteMeta(name), regexp.QuoteMeta("{date}"), `\d{4}-\d{2}-\d{2}`) + "$"
	ok, _ := regexp.MatchString(pattern, filepath.Base(path))
	return ok
}

// InCrawlState says whether path lies in a directory that holds a crawl
// state (its crawl.db), whichever directory the command was given.
func InCrawlState(path string) bool {
	for dir := filepath.Dir(fspath.File(path)); ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "crawl.db")); err == nil {
			return true
		}
		if dir == filepath.Dir(dir) {
			return false
		}
	}
}
