package state

import bolt "go.etcd.io/bbolt"

// Tuning are the sizes a store works in, for a test: DefaultTuning with
// some made small (see tuning).
type Tuning struct {
	ReleaseEvery        int64
	MigrateBatch        int
	MergeAt, MergeChunk int
	Hook                func(step string)
}

// DefaultTuning is what Open uses.
func DefaultTuning() Tuning {
	t := defaultTuning
	return Tuning{ReleaseEvery: t.releaseEvery, MigrateBatch: t.migrateBatch, MergeAt: t.mergeAt, MergeChunk: t.mergeChunk}
}

// OpenTuned is Open with the sizes of t.
func OpenTuned(dir string, t Tuning) (*Store, error) {
	return open(dir, tuning{releaseEvery: t.ReleaseEvery, migrateBatch: t.MigrateBatch, mergeAt: t.MergeAt, mergeChunk: t.MergeChunk, hook: t.Hook})
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
