package state

// SetReleaseEvery sets how many page bytes are written between releases of
// the memory map, for a test; it returns the old value's restore.
func SetReleaseEvery(n int64) (restore func()) {
	old := releaseEvery
	releaseEvery = n
	return func() { releaseEvery = old }
}
