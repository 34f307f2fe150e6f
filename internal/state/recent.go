package state

import (
	"cmp"
	"encoding/binary"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// Papers recorded since the last merge are not written into the slots at
// once: hashes are random, so a commit of a few hundred keys into a set of
// millions would dirty (and write, and fsync) a page of slots per key,
// about 4 KB a key. Instead each commit appends its new entries to the
// recent log, one value under the next sequence number (a page or two per
// commit, whatever the set's size), and the store keeps them in memory too
// (mem), where look-ups find them. When the log holds mergeAt entries they
// are merged into the slots in hash order, a range at a time: each page
// of slots is then written once for the many entries it takes. The log is
// emptied by the merge's last transaction.
//
// A crash at any point leaves the log and the slots consistent: the log is
// read back into memory when the store is opened, and an entry both in the
// log and in the slots (a merge cut short) is the same entry twice.
var bucketRecent = []byte("recent") // sequence (8) → the entries a commit added (11 bytes each)

type entry struct {
	h   uint64
	run uint32
}

func byHash[E slotEntry](a, b E) int { return cmp.Compare(a.hash(), b.hash()) }

func sameHash[E slotEntry](a, b E) bool { return a.hash() == b.hash() }

// recentIndex holds a log's entries in memory as sorted runs, each at
// least twice as long as the next (so at most log₂ n of them), newest
// last, found by a binary search of each run: 16 bytes a known paper's
// entry, 24 a print's. Of two entries with one hash, the older is kept
// (a known paper keeps the run that first recorded it), or with
// newerWins the newer (a print: the paper's latest revision).
//
// Most look-ups miss (a crawl's new papers, looked up by id and by DOI, in
// both indexes, when decided and again when committed), and a miss would
// search every run: a Bloom filter over the index's hashes (two bits a
// hash, at least 16 bits an entry: about 1.5 % false positives, 2 bytes an
// entry) answers most of them without reading a run.
type recentIndex[E slotEntry] struct {
	runs      [][]E
	n         int
	newerWins bool
	filter    []uint64 // a power of two words; nil while the index is empty
}

// filterBits are a hash's two bits in a filter of 64·words bits (a power
// of two): each from a multiplicative mix of the hash, so that hashes
// with few distinct bits (a test's small numbers) spread too.
func filterBits(h uint64, words int) (uint64, uint64) {
	mask := uint64(words)*64 - 1
	return (h * 0x9E3779B97F4A7C15 >> 20) & mask, ((h ^ h>>31) * 0xBF58476D1CE4E5B9 >> 20) & mask
}

func (r *recentIndex[E]) mayHold(h uint64) bool {
	if r.filter == nil {
		return false
	}
	a, b := filterBits(h, len(r.filter))
	return r.filter[a>>6]&(1<<(a&63)) != 0 && r.filter[b>>6]&(1<<(b&63)) != 0
}

func (r *recentIndex[E]) mark(run []E) {
	for _, e := range run {
		a, b := filterBits(e.hash(), len(r.filter))
		r.filter[a>>6] |= 1 << (a & 63)
		r.filter[b>>6] |= 1 << (b & 63)
	}
}

// refilter keeps the filter at 16 bits an entry or more, rebuilding it
// twice as large (from every run: amortized, a word an entry) when the
// index outgrows it; otherwise it marks the new run's hashes.
func (r *recentIndex[E]) refilter(run []E) {
	if len(r.filter)*64 >= 16*r.n {
		r.mark(run)
		return
	}
	words := 1
	for words*64 < 32*r.n {
		words *= 2
	}
	r.filter = make([]uint64, words)
	for _, run := range r.runs {
		r.mark(run)
	}
}

func (r *recentIndex[E]) get(h uint64) (E, bool) {
	if !r.mayHold(h) {
		var none E
		return none, false
	}
	for i := len(r.runs) - 1; i >= 0; i-- {
		// A binary search written out: every look-up of a crawl (two a
		// paper, in two indexes) misses in most runs, and
		// slices.BinarySearchFunc's closure cost a backfill 8 % of its CPU.
		run := r.runs[i]
		lo, hi := 0, len(run)
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if run[m].hash() < h {
				lo = m + 1
			} else {
				hi = m
			}
		}
		if lo < len(run) && run[lo].hash() == h {
			return run[lo], true
		}
	}
	var none E
	return none, false
}

// add adds entries not in the index (a commit's, or a log record's).
func (r *recentIndex[E]) add(ents []E) {
	if len(ents) == 0 {
		return
	}
	run := slices.Clone(ents)
	if r.newerWins {
		slices.Reverse(run) // the last of one hash is the one kept
	}
	slices.SortStableFunc(run, byHash[E])
	run = slices.CompactFunc(run, sameHash[E])
	r.runs = append(r.runs, run)
	r.n += len(run)
	r.refilter(run)
	for k := len(r.runs); k >= 2 && len(r.runs[k-2]) <= 2*len(r.runs[k-1]); k = len(r.runs) {
		a, b := r.runs[k-2], r.runs[k-1]
		m := make([]E, 0, len(a)+len(b))
		i, j := 0, 0
		for i < len(a) && j < len(b) {
			switch {
			case a[i].hash() < b[j].hash():
				m = append(m, a[i])
				i++
			case a[i].hash() > b[j].hash():
				m = append(m, b[j])
				j++
			default: // a holds the older entry
				if r.newerWins {
					m = append(m, b[j])
				} else {
					m = append(m, a[i])
				}
				i, j = i+1, j+1
				r.n--
			}
		}
		m = append(append(m, a[i:]...), b[j:]...)
		r.runs = append(r.runs[:k-2], m)
	}
}

// sorted is every entry, in hash order, one a hash.
func (r *recentIndex[E]) sorted() []E {
	out := make([]E, 0, r.n)
	if r.newerWins {
		for i := len(r.runs) - 1; i >= 0; i-- {
			out = append(out, r.runs[i]...)
		}
	} else {
		for _, run := range r.runs {
			out = append(out, run...)
		}
	}
	slices.SortStableFunc(out, byHash[E])
	return slices.CompactFunc(out, sameHash[E])
}

// loadRecent reads the logs into memory (Open).
func (s *Store) loadRecent() error {
	s.mem = recentIndex[entry]{}
	s.pmem = recentIndex[printEntry]{newerWins: true}
	return s.view(func(tx *bolt.Tx) error {
		runs := runsNumbered(tx)
		decodeEntry := func(v []byte, i int) entry { return entry{binary.BigEndian.Uint64(v[i*entrySize:]), entryRun(v, i)} }
		if err := loadLog(s.path, tx.Bucket(bucketRecentPrints), "prints", printEntrySize, runs, decodePrintEntry, s.pmem.add); err != nil {
			return err
		}
		return loadLog(s.path, tx.Bucket(bucketRecent), "papers", entrySize, runs, decodeEntry, s.mem.add)
	})
}

// runEntry is a log's entry: a known paper's or a print's, each naming
// the run that first recorded its key.
type runEntry interface {
	slotEntry
	firstRun() uint32
}

func (e entry) firstRun() uint32      { return e.run }
func (e printEntry) firstRun() uint32 { return e.run }

// loadLog reads a log of entries of size bytes (none: no bucket) into
// memory (add); a record not as written, or an entry naming a run the
// file never numbered, is damage.
func loadLog[E runEntry](path string, b *bolt.Bucket, name string, size int, runs uint32, decode func(v []byte, i int) E, add func([]E)) error {
	if b == nil {
		return nil
	}
	seq := b.Sequence()
	var ents []E
	return b.ForEach(func(k, v []byte) error {
		if len(k) != 8 || binary.BigEndian.Uint64(k) == 0 || binary.BigEndian.Uint64(k) > seq || len(v)%size != 0 {
			return &DamagedError{Path: path, Cause: "a record of the recent " + name + " is not what was written"}
		}
		ents = ents[:0]
		for i := 0; i < len(v)/size; i++ {
			e := decode(v, i)
			if r := e.firstRun(); r == 0 || r > runs {
				return &DamagedError{Path: path, Cause: "a record of the recent " + name + " names a run this file never numbered"}
			}
			ents = append(ents, e)
		}
		add(ents)
		return nil
	})
}

// appendRecent writes a commit's new entries to the log (in its
// transaction).
func appendRecent(tx *bolt.Tx, fresh []entry) error {
	return appendLog(tx.Bucket(bucketRecent), fresh, entrySize)
}

// logChunk bounds the bytes of one value of a log: a commit's entries go
// in values of at most this size. bbolt packs small values appended in
// key order into nearly full pages (values of 100 to 200 bytes: 87 to 91 %
// of a page used), but leaves pages half empty for values of 600 to
// 1,000 bytes, the size of a commit's entries: 200 bytes is 24 bytes of
// key and header to 176 of entries, and a log of a quarter less.
const logChunk = 200

// appendLog appends entries of size bytes to a log bucket, in values of
// at most logChunk bytes under the next sequence numbers.
func appendLog[E slotEntry](b *bolt.Bucket, fresh []E, size int) error {
	b.FillPercent = 1 // appended in key order: pages filled full
	per := max(logChunk/size, 1)
	for len(fresh) > 0 {
		chunk := fresh[:min(per, len(fresh))]
		fresh = fresh[len(chunk):]
		seq, err := b.NextSequence()
		if err != nil {
			return err
		}
		v := make([]byte, 0, len(chunk)*size)
		for _, e := range chunk {
			v = e.appendTo(v)
		}
		if err := b.Put(binary.BigEndian.AppendUint64(nil, seq), v); err != nil {
			return err
		}
	}
	return nil
}

// absorb adds a committed transaction's new entries to memory. The caller
// holds s.logMu.
func (s *Store) absorb(fresh []entry, prints []printEntry) {
	if len(fresh) == 0 && len(prints) == 0 {
		return
	}
	s.memMu.Lock()
	s.mem.add(fresh)
	s.pmem.add(prints)
	s.memMu.Unlock()
}

// maybeMerge merges the logs into the slots when they hold as many bytes
// as mergeAt known papers' entries (a print's entry counts for two and a
// bit: the logs stay the size they were before prints were kept, and so
// does the file's slack after a merge).
// The caller holds s.logMu, so no commit adds to the log meanwhile.
func (s *Store) maybeMerge() error {
	if s.mem.n*entrySize+s.pmem.n*printEntrySize < s.tune.mergeAt*entrySize {
		return nil
	}
	return s.merge()
}

// merge writes every entry of the log into the slots, in hash order,
// mergeChunk entries a transaction, then empties the log and memory.
// Look-ups go on meanwhile: an entry is in memory until the log is gone.
func (s *Store) merge() error {
	ents := s.mem.sorted()
	for len(ents) > 0 {
		chunk := ents[:min(s.tune.mergeChunk, len(ents))]
		ents = ents[len(chunk):]
		err := s.update(func(tx *bolt.Tx) error {
			// An entry already there (a merge cut short) keeps its run.
			return s.damage(newKnownSet(tx.Bucket(bucketKnown)).merge(chunk))
		})
		if err != nil {
			return err
		}
		// A merge reads every page of slots: released after each chunk,
		// they do not all stay mapped at once.
		releaseMap(s.db)
		s.step("merge")
	}
	prints := s.pmem.sorted()
	for len(prints) > 0 {
		chunk := prints[:min(s.tune.mergeChunk, len(prints))]
		prints = prints[len(chunk):]
		err := s.update(func(tx *bolt.Tx) error {
			// A print already there is an earlier revision's (or this
			// one's, a merge cut short): replaced.
			return s.damage(mergeSlots(newPrintSet(tx.Bucket(bucketPrints)), chunk, true))
		})
		if err != nil {
			return err
		}
		releaseMap(s.db)
		s.step("merge")
	}
	err := s.update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketRecent, bucketRecentPrints} {
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
			if _, err := tx.CreateBucket(name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.memMu.Lock()
	s.mem = recentIndex[entry]{}
	s.pmem = recentIndex[printEntry]{newerWins: true}
	s.memMu.Unlock()
	return nil
}

// recentCount is how many entries of size bytes a log holds (Check).
func recentCount(tx *bolt.Tx, log []byte, size int) int {
	b := tx.Bucket(log)
	if b == nil {
		return 0
	}
	n := 0
	b.ForEach(func(_, v []byte) error {
		n += len(v) / size
		return nil
	})
	return n
}
