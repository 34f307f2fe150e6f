// Package fspath holds the one rule for naming a file place the same way
// however it is spelled: absolute, with its symbolic links resolved.
package fspath

import "path/filepath"

// Real is p made absolute with its symbolic links resolved; when p does
// not exist (or cannot be resolved) it is its longest part that does,
// resolved, and the rest as given; when even that fails, p as given.
func Real(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	// Not all of it exists yet: its longest part that does, with its
	// links resolved, and the rest as given (a link to the state
	// directory, then directories still to be made, is still in it).
	for dir, rest := filepath.Dir(abs), filepath.Base(abs); dir != filepath.Dir(dir); dir, rest = filepath.Dir(dir), filepath.Join(filepath.Base(dir), rest) {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest)
		}
	}
	return abs
}

// File is the place of a file that may not exist yet: its directory
// Real, its name as given, and the whole resolved when it is a link that
// exists. Two spellings of one file path are one File.
func File(p string) string {
	path := filepath.Join(Real(filepath.Dir(p)), filepath.Base(p))
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return path
}
