//go:build unix

package quarantine

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on f (flock): every process that writes
// the quarantine takes it, so appends and rewrites never interleave.
func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}
