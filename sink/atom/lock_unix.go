//go:build unix

package atom

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes the directory's lock file, so that a second writer (two
// crawls given one directory) is refused rather than interleaved.
func lockDir(dir string) (unlock func() error, err error) {
	f, err := os.OpenFile(filepath.Join(dir, ".litcrawl-atom.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errors.New("another writer has these feeds open (one writer per directory: another crawl, or this one given the directory twice with other options)")
		}
		return nil, err
	}
	return f.Close, nil
}

// writable says why the sink could not write in dir and its state
// directory (when there is one), checked at open so that crawl sink check
// and a run's start say it, not the first write.
func writable(dir string) error {
	for _, d := range []string{dir, filepath.Join(dir, stateDir)} {
		if info, err := os.Stat(d); err == nil && !info.IsDir() {
			return fmt.Errorf("%s is not a directory", d)
		}
		err := syscall.Access(d, 0x2|0x1) // W_OK|X_OK: make and rename files in it
		if err != nil && !(d != dir && errors.Is(err, syscall.ENOENT)) {
			return &os.PathError{Op: "write", Path: d, Err: err}
		}
	}
	return nil
}
