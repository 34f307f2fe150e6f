//go:build !unix

package quarantine

import "os"

// lockFile is a no-op where flock is not available: processes sharing a
// quarantine there must not write it at once.
func lockFile(*os.File) error { return nil }
