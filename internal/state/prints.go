package state

import (
	"encoding/binary"

	bolt "go.etcd.io/bbolt"

	"github.com/litcrawl/litcrawl/internal/ledger"
)

// The prints (format 3). A paper delivered by this format is known by its
// primary key, the hash of its id (of its DOI for a paper known only by
// it, id "doi:…"), in the prints' slots, with its print (ledger.Print, 13
// bytes: its revision and what a later read compares): entries of 24
// bytes,
//
//	hash (8 bytes, big-endian) | run number (3 bytes) | print (13 bytes)
//
// and by its DOI's hash, when it has another, in the known slots (11
// bytes, see known.go). So a paper costs 35 bytes of entries, 13 more than
// in format 2. A paper whose id changed (seen first without its JSON, then
// with its site id) has a print entry under both keys, so that either read
// finds its latest revision. A new revision replaces the entry, keeping
// its run: its log (recent_prints) and memory keep the newest of a hash,
// and a merge writes it over the slot's.
//
// A format-2 file (no prints) is upgraded in place when opened: the two
// buckets are added and the format set to 3. Its papers stay in the known
// slots, without a print, until a read records one (an entry in the
// prints' slots, beside the known one).
var (
	bucketPrints       = []byte("prints")        // slot start (8) → packed print entries
	bucketRecentPrints = []byte("recent_prints") // sequence (8) → the print entries a commit wrote
)

const printEntrySize = entrySize + ledger.PrintSize

type printEntry struct {
	h   uint64
	run uint32
	p   ledger.Print
}

func (e printEntry) hash() uint64 { return e.h }

func (e printEntry) appendTo(b []byte) []byte {
	b = entry{e.h, e.run}.appendTo(b)
	return append(b, e.p[:]...)
}

func decodePrintEntry(v []byte, i int) printEntry {
	e := printEntry{h: binary.BigEndian.Uint64(v[i*printEntrySize:]), run: entryRunAt(v, i, printEntrySize)}
	copy(e.p[:], v[i*printEntrySize+entrySize:(i+1)*printEntrySize])
	return e
}

func newPrintSet(b *bolt.Bucket) knownSet { return newSlotSet(b, printEntrySize) }

// getPrint is the print entry of h (ok false: none) in the slots.
func (k knownSet) getPrint(h uint64) (e printEntry, ok bool, err error) {
	_, val, err := k.slot(h)
	if err != nil {
		return e, false, err
	}
	i, found := search(val, h, printEntrySize)
	if !found {
		return e, false, nil
	}
	return decodePrintEntry(val, i), true, nil
}

// initPrints adds the prints' buckets (a new file, or a format-2 file's
// upgrade).
func initPrints(tx *bolt.Tx) error {
	if _, err := tx.CreateBucketIfNotExists(bucketRecentPrints); err != nil {
		return err
	}
	if tx.Bucket(bucketPrints) != nil {
		return nil
	}
	b, err := tx.CreateBucket(bucketPrints)
	if err != nil {
		return err
	}
	return b.Put(firstSlot, []byte{})
}

// sets are a transaction's known and print slots, and the number of runs
// the file has numbered (an entry naming a later one is damage).
type sets struct {
	known, prints knownSet
	runs          uint32
}

func (s *Store) setsOf(tx *bolt.Tx) sets {
	out := sets{known: newKnownSet(tx.Bucket(bucketKnown)), runs: runsNumbered(tx)}
	if b := tx.Bucket(bucketPrints); b != nil {
		out.prints = newPrintSet(b)
	}
	return out
}

// runsNumbered is how many run numbers the file has given.
func runsNumbered(tx *bolt.Tx) uint32 {
	if b := tx.Bucket(bucketRunNums); b != nil {
		return uint32(min(b.Sequence(), MaxRuns))
	}
	return 0
}

// found is what the store knows of one key: the run that first recorded
// it, and its print entry when it has one.
type found struct {
	run      uint32
	ok       bool
	hasPrint bool
	print    ledger.Print
}

// findKey looks a key up in memory (the logs), then in the slots. The
// caller holds s.memMu (or s.logMu).
func (s *Store) findKey(ks sets, h uint64) (found, error) {
	if e, ok := s.pmem.get(h); ok {
		return found{run: e.run, ok: true, hasPrint: true, print: e.p}, nil
	}
	if ks.prints.b != nil {
		e, ok, err := ks.prints.getPrint(h)
		if err == nil && ok && (e.run == 0 || e.run > ks.runs) {
			err = errRunNumber
		}
		if err != nil || ok {
			return found{run: e.run, ok: ok, hasPrint: ok, print: e.p}, err
		}
	}
	if e, ok := s.mem.get(h); ok {
		return found{run: e.run, ok: true}, nil
	}
	r, ok, err := ks.known.get(h)
	if err == nil && ok && (r == 0 || r > ks.runs) {
		err = errRunNumber
	}
	return found{run: r, ok: ok}, err
}

// lookupTx finds a paper by its id and by its DOI: the run number that
// first recorded it (the earlier of its keys'), its print (its id's, else
// its DOI's), and whether its first key (its id's, or its DOI's for an id
// "doi:…") was found. The caller holds s.memMu (or s.logMu).
func (s *Store) lookupTx(ks sets, p ledger.Paper) (run uint32, ok bool, pr ledger.Print, byID bool, err error) {
	hs, n := paperHashes(p)
	printed := false
	for i, h := range hs[:n] {
		f, err := s.findKey(ks, h)
		if err != nil {
			return 0, false, pr, false, err
		}
		byID = byID || i == 0 && f.ok
		// Known by both (a paper seen first without its JSON, then with
		// it): the earlier run first delivered it.
		if f.ok && (!ok || f.run < run) {
			run, ok = f.run, true
		}
		if f.hasPrint && !printed {
			pr, printed = f.print, true
		}
	}
	return run, ok, pr, byID, nil
}

// appendRecentPrints writes a commit's print entries to their log (in its
// transaction).
func appendRecentPrints(tx *bolt.Tx, fresh []printEntry) error {
	return appendLog(tx.Bucket(bucketRecentPrints), fresh, printEntrySize)
}
