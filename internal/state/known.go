package state

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/cespare/xxhash/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/litcrawl/litcrawl/internal/ledger"
)

// The known papers (format 2) are a set of 64-bit key hashes, each with
// the number of the run that first recorded it: one hash for a paper's id
// and one for its DOI, so a paper is found by either. Storing each hash as
// a bbolt key of its own would cost a 16-byte element header per key and
// leave pages a third empty (random keys split pages in half), about 75
// bytes a paper; instead the hashes are packed into slots.
//
// A slot is one bbolt value holding up to slotMax entries sorted by hash,
// under the 8-byte big-endian hash where its range begins: the slot for a
// hash h is the one with the greatest key ≤ h (a cursor Seek, and a Prev
// when it lands past h). The first slot begins at 0. Entries are added by
// merges (see recent.go), in hash order: a slot that would grow past
// slotMax entries is split evenly into as many slots as it needs, so slots
// stay between half full and full whatever the crawl's length. An entry is
//
//	hash (8 bytes, big-endian) | run number (3 bytes, big-endian)
//
// Hash collisions: two keys with one hash are one key to the store. A
// paper whose id or DOI hashes like a known key's is taken as known and
// not delivered. With n keys the chance of any collision is about
// n²/2⁶⁵: 2·10⁸ keys (100 million papers) give 0.1 %.
const (
	entrySize = 11
	hashSize  = 8
	// MaxRuns is the most runs one state file numbers (3 bytes).
	MaxRuns = 1<<24 - 1
)

// knownFill is the known bucket's fill percent: slots are written by
// merges, in key order, so pages are filled almost full rather than split
// half way.
const knownFill = 0.95

// slotMax is the most known papers' entries a slot holds before it
// splits: slots of about 1 KB, three or four to a 4 KB page.
const slotMax = 96

// slotBytes is the most bytes of entries a slot holds (a print's slot
// splits at as many bytes as a known paper's: bbolt packs whole values
// into its pages, and two slots of 2 KB would leave each page half
// empty).
const slotBytes = slotMax * entrySize

var firstSlot = make([]byte, hashSize)

// keyHash is the hash of a paper id (kind 'i') or DOI key (kind 'd').
func keyHash(kind byte, key string) uint64 {
	var d xxhash.Digest
	d.Reset()
	d.Write([]byte{kind})
	d.WriteString(key)
	return d.Sum64()
}

// paperHashes are the hashes a paper is known by: its id's (unless the id
// is only its DOI, "doi:…") and its DOI's.
func paperHashes(p ledger.Paper) (hs [2]uint64, n int) {
	if isDOIID(p.ID) {
		// Known by the DOI its id names (and by its DOI, should the
		// record give another).
		if d := ledger.DOIKey(p.ID[4:]); d != "" {
			hs[n] = keyHash('d', d)
			n++
		}
	} else if p.ID != "" {
		hs[n] = keyHash('i', p.ID)
		n++
	}
	if doi := ledger.DOIKey(p.DOI); doi != "" && (n == 0 || keyHash('d', doi) != hs[0]) {
		hs[n] = keyHash('d', doi)
		n++
	}
	return hs, n
}

func isDOIID(id string) bool { return len(id) > 4 && id[:4] == "doi:" }

// knownSet is a bucket of slots within one transaction: the known
// papers' (entries of entrySize bytes) or their prints' (printEntrySize:
// see prints.go).
type knownSet struct {
	b    *bolt.Bucket
	c    *bolt.Cursor
	size int // bytes an entry
}

func newKnownSet(b *bolt.Bucket) knownSet { return newSlotSet(b, entrySize) }

func newSlotSet(b *bolt.Bucket, size int) knownSet {
	b.FillPercent = knownFill
	return knownSet{b: b, c: b.Cursor(), size: size}
}

// slot finds the slot holding h's range: its key and value (valid during
// the transaction).
func (k knownSet) slot(h uint64) (key, val []byte, err error) {
	var hb [hashSize]byte
	binary.BigEndian.PutUint64(hb[:], h)
	key, val = k.c.Seek(hb[:])
	if key == nil || !bytes.Equal(key, hb[:]) {
		if key == nil {
			key, val = k.c.Last()
		} else {
			key, val = k.c.Prev()
		}
	}
	if key == nil || len(key) != hashSize || len(val)%k.size != 0 {
		return nil, nil, errSlot
	}
	return key, val, nil
}

var (
	errSlot      = errors.New("a slot of the known papers is not what was written")
	errRunNumber = errors.New("a run number is not what was written")
)

// search finds h in a slot's entries of size bytes: its index, and
// whether it is there.
func search(val []byte, h uint64, size int) (int, bool) {
	lo, hi := 0, len(val)/size
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if binary.BigEndian.Uint64(val[m*size:]) < h {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(val)/size && binary.BigEndian.Uint64(val[lo*size:]) == h
}

func (e entry) hash() uint64 { return e.h }

func (e entry) appendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, e.h)
	return append(b, byte(e.run>>16), byte(e.run>>8), byte(e.run))
}

func appendEntry(b []byte, e entry) []byte { return e.appendTo(b) }

func entryRun(val []byte, i int) uint32 { return entryRunAt(val, i, entrySize) }

// entryRunAt is the run number of entry i of a slot of entries of size
// bytes (a known paper's, or a print's: both begin hash, run).
func entryRunAt(val []byte, i, size int) uint32 {
	e := val[i*size+hashSize:]
	return uint32(e[0])<<16 | uint32(e[1])<<8 | uint32(e[2])
}

// get returns the run number that first recorded h; ok is false for a
// hash never recorded.
func (k knownSet) get(h uint64) (run uint32, ok bool, err error) {
	_, val, err := k.slot(h)
	if err != nil {
		return 0, false, err
	}
	i, found := search(val, h, entrySize)
	if !found {
		return 0, false, nil
	}
	return entryRun(val, i), true, nil
}

// merge adds entries sorted by hash (a merge of the recent log), each
// unless its hash is there already: each slot it touches is rewritten once,
// split into as many slots of at most slotMax entries as it needs.
func (k knownSet) merge(ents []entry) error { return mergeSlots(k, ents, false) }

// slotEntry is an entry of a set of slots: a known paper's key (entry) or
// a print (printEntry).
type slotEntry interface {
	hash() uint64
	appendTo(b []byte) []byte
}

// mergeSlots adds entries sorted by hash to the set: an entry whose hash
// is there already keeps what is there, or with replace takes the new
// one's place. Each slot it touches is rewritten once, split into as many
// slots of at most slotMax entries as it needs.
func mergeSlots[E slotEntry](k knownSet, ents []E, replace bool) error {
	size := k.size
	for len(ents) > 0 {
		key, val, err := k.slot(ents[0].hash())
		if err != nil {
			return err
		}
		// The entries of this slot: those below the next slot's start.
		n := len(ents)
		if next, _ := k.c.Next(); next != nil {
			if len(next) != hashSize {
				return errSlot
			}
			end := binary.BigEndian.Uint64(next)
			n, _ = slices.BinarySearchFunc(ents, end, func(e E, h uint64) int { return cmp.Compare(e.hash(), h) })
		}
		batch := ents[:n]
		ents = ents[n:]
		merged := make([]byte, 0, len(val)+len(batch)*size)
		i, changed := 0, false
		for _, e := range batch {
			for ; i < len(val)/size && binary.BigEndian.Uint64(val[i*size:]) < e.hash(); i++ {
				merged = append(merged, val[i*size:(i+1)*size]...)
			}
			if i < len(val)/size && binary.BigEndian.Uint64(val[i*size:]) == e.hash() {
				if !replace {
					continue // known already: keeps its first run
				}
				i++ // replaced by e
			}
			merged, changed = e.appendTo(merged), true
		}
		merged = append(merged, val[i*size:]...)
		if !changed {
			continue
		}
		// Split evenly into slots of at most slotMax entries; the first
		// keeps the slot's key.
		total := len(merged) / size
		most := slotBytes / size
		pieces := (total + most - 1) / most
		key = bytes.Clone(key)
		for p := range pieces {
			from, to := p*total/pieces*size, (p+1)*total/pieces*size
			pk := key
			if p > 0 {
				pk = merged[from : from+hashSize : from+hashSize]
			}
			if err := k.b.Put(pk, merged[from:to:to]); err != nil {
				return err
			}
		}
	}
	return nil
}

// count is how many hashes the set holds (reads every slot).
func (k knownSet) count() int {
	n := 0
	for key, val := k.c.First(); key != nil; key, val = k.c.Next() {
		n += len(val) / k.size
	}
	return n
}

// initKnown makes the known bucket with its first slot.
func initKnown(tx *bolt.Tx) error {
	b, err := tx.CreateBucket(bucketKnown)
	if err != nil {
		return err
	}
	return b.Put(firstSlot, []byte{})
}

// runNumber is the number of a run in this file: 0 when it has none and
// create is false; with create, a run without one gets the next.
func runNumber(tx *bolt.Tx, runID string, create bool) (uint32, error) {
	ids := tx.Bucket(bucketRunIDs)
	if v := ids.Get(runKey(runID)); len(v) == 4 {
		return binary.BigEndian.Uint32(v), nil
	} else if v != nil {
		return 0, errRunNumber
	}
	if !create {
		return 0, nil
	}
	nums := tx.Bucket(bucketRunNums)
	seq, err := nums.NextSequence()
	if err != nil {
		return 0, err
	}
	if seq > MaxRuns {
		return 0, fmt.Errorf("this state file has numbered %d runs, the most it can", MaxRuns)
	}
	n := binary.BigEndian.AppendUint32(nil, uint32(seq))
	if err := ids.Put(runKey(runID), n); err != nil {
		return 0, err
	}
	return uint32(seq), nums.Put(n, []byte(runID))
}

// runKey is a run id as a key: "" (a run format 1 recorded without an
// id) is a zero byte, which no run id is.
func runKey(runID string) []byte {
	if runID == "" {
		return []byte{0}
	}
	return []byte(runID)
}

// runID is the id of run number n ("" for none).
func runIDOf(tx *bolt.Tx, n uint32) string {
	if n == 0 {
		return ""
	}
	return string(tx.Bucket(bucketRunNums).Get(binary.BigEndian.AppendUint32(nil, n)))
}
