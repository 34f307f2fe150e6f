//go:build !unix

package atom

// lockDir is a no-op where flock is not: one writer per directory is the
// operator's to keep.
func lockDir(string) (func() error, error) { return func() error { return nil }, nil }
