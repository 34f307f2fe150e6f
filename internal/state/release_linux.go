package state

import (
	"syscall"

	bolt "go.etcd.io/bbolt"
)

// releaseMap drops the store file's pages from this process's memory map
// (madvise MADV_DONTNEED). The map is a read-only shared map of the file, so
// nothing is lost: the pages stay in the kernel's page cache and the next
// read maps them again. Without this, every page a commit writes and the
// next transaction reads stays resident until bbolt remaps the file, and
// the process's RSS grows with the state file rather than with the work at
// hand. It is best effort; an error changes nothing but memory.
func releaseMap(db *bolt.DB) {
	db.View(func(tx *bolt.Tx) error {
		// While a read transaction is open bbolt cannot remap the file, so
		// the address and the size (the pages in use, which the map always
		// covers) stay valid until the call returns.
		syscall.Syscall(syscall.SYS_MADVISE, db.Info().Data, uintptr(tx.Size()), syscall.MADV_DONTNEED)
		return nil
	})
}
