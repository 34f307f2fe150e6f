package state

import bolt "go.etcd.io/bbolt"

// SetReleaseEvery sets how many page bytes are written between releases of
// the memory map, for a test; it returns the old value's restore.
func SetReleaseEvery(n int64) (restore func()) {
	old := releaseEvery
	releaseEvery = n
	return func() { releaseEvery = old }
}

// SetMigrateHook calls fn at each step of a migration ("batch", "written",
// "renamed"), and copies batch keys per transaction; it returns the
// restore.
func SetMigrateHook(fn func(step string), batch int) (restore func()) {
	oldHook, oldBatch := migrateHook, migrateBatch
	migrateHook, migrateBatch = fn, batch
	return func() { migrateHook, migrateBatch = oldHook, oldBatch }
}

// SetMerge merges the recent log at at entries, chunk entries a
// transaction; it returns the restore.
func SetMerge(at, chunk int) (restore func()) {
	oldAt, oldChunk := mergeAt, mergeChunk
	mergeAt, mergeChunk = at, chunk
	return func() { mergeAt, mergeChunk = oldAt, oldChunk }
}

// PutRawTally stores v as a run tally under key k, as damage would.
func (s *Store) PutRawTally(k, v []byte) error {
	return s.update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketTally)
		if err != nil {
			return err
		}
		return b.Put(k, v)
	})
}
