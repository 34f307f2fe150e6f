//go:build !unix

package atom

// lockDir is a no-op where flock is not: one writer per directory is the
// operator's to keep.
func lockDir(string) (func() error, error) { return func() error { return nil }, nil }

// writable is left to the first write where access(2) is not.
func writable(string) error { return nil }
