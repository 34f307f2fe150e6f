package state

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"

	"github.com/litcrawl/litcrawl/internal/atomicfile"
)

// ErrDamaged means the state file cannot be read safely: bbolt found (or
// tripped over) a damaged page. The crawl stops rather than guess what was
// delivered.
var ErrDamaged = errors.New("the state file is damaged")

// DamagedError says which state file is damaged, what was seen, and how to
// go on.
type DamagedError struct {
	Path  string
	Cause string
}

func (e *DamagedError) Error() string {
	dir := filepath.Dir(e.Path)
	return fmt.Sprintf("state %s is damaged (%s). Nothing was delivered from it. "+
		"See what is wrong with: crawl state check --state-dir %s; "+
		"rebuild the known papers from what was delivered with: crawl state rebuild --state-dir %s.new --from jsonl:FILE…, "+
		"then crawl with --state-dir %s.new (or move the file aside to start over, delivering every paper again)", e.Path, e.Cause, dir, dir, dir)
}

func (e *DamagedError) Unwrap() error { return ErrDamaged }

// guard runs fn, turning a panic inside bbolt (a damaged page: a slice out
// of range, a nil bucket) into a *DamagedError. It is not a full check on
// every open, which would read the whole file: only what a crawl touches
// is caught, when it touches it. Once damaged, a Store refuses every call.
func (s *Store) guard(fn func() error) (err error) {
	if d := s.damaged.Load(); d != nil {
		return d
	}
	// A damaged page can point outside the memory map: a fault there is a
	// panic of this goroutine (not the end of the process) while fn runs.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			d := &DamagedError{Path: s.path, Cause: fmt.Sprint(p)}
			s.damaged.Store(d)
			err = d
		}
	}()
	return fn()
}

// decode reads a stored JSON value; one that is not JSON is damage.
func (s *Store) decode(v []byte, into any) error {
	if err := json.Unmarshal(v, into); err != nil {
		return &DamagedError{Path: s.path, Cause: "a stored value is not what was written: " + err.Error()}
	}
	return nil
}

func (s *Store) view(fn func(tx *bolt.Tx) error) error {
	return s.guard(func() error { return s.db.View(fn) })
}

func (s *Store) update(fn func(tx *bolt.Tx) error) error {
	return s.guard(func() error { return s.db.Update(fn) })
}

// upgradeOnce makes a file written by an older version safe to open.
// Such a file keeps no free-page list, so bbolt would rebuild the list by
// scanning the whole file in a goroutine of its own, where a damaged page
// is a panic no one can catch. Instead, once, the file is opened
// read-only and copied key by key (bbolt's Compact, in this goroutine,
// under guard) into a new file that keeps its list, which then replaces it
// atomically (a crash leaves the old file as it was; it needs free disk
// for one copy). Later opens read the kept list.
func upgradeOnce(path string) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil // a new file
	}
	tmp := path + ".upgrade"
	probe := &Store{path: path}
	upgraded := false
	err := probe.guard(func() error {
		src, err := bolt.Open(path, 0o644, &bolt.Options{ReadOnly: true, Timeout: lockWait})
		if err != nil {
			return openError(path, err)
		}
		defer src.Close()
		kept := false
		if err := src.View(func(tx *bolt.Tx) error {
			m := tx.Bucket(bucketMeta)
			kept = m != nil && m.Get(keyFreelist) != nil
			return nil
		}); err != nil || kept {
			return err
		}
		os.Remove(tmp)
		dst, err := bolt.Open(tmp, 0o644, &bolt.Options{FreelistType: bolt.FreelistMapType})
		if err != nil {
			return fmt.Errorf("state %s: upgrade: %w", path, err)
		}
		err = bolt.Compact(dst, src, 16<<20)
		if err == nil {
			err = dst.Update(func(tx *bolt.Tx) error {
				m, err := tx.CreateBucketIfNotExists(bucketMeta)
				if err != nil {
					return err
				}
				return m.Put(keyFreelist, []byte("synced"))
			})
		}
		if cerr := dst.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("state %s: upgrade: %w", path, err)
		}
		upgraded = true
		return nil
	})
	if err != nil || !upgraded {
		os.Remove(tmp)
		return err
	}
	if err := atomicfile.Replace(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("state %s: upgrade: %w", path, err)
	}
	return nil
}

// walkTx reads every key and value of every bucket: every page a scan of
// the file would touch.
func walkTx(tx *bolt.Tx) error {
	var walk func(b *bolt.Bucket) error
	walk = func(b *bolt.Bucket) error {
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if v == nil {
				if nb := b.Bucket(k); nb != nil {
					if err := walk(nb); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	return tx.ForEach(func(_ []byte, b *bolt.Bucket) error { return walk(b) })
}

// Check runs bbolt's full consistency check of the file in dir (every
// page, read-only) and returns what it found; nil means sound. It also
// counts what the file holds. bbolt checks in a goroutine of its own, where
// a badly damaged page can crash the process: run it in a process of its
// own (crawl state check does).
func Check(dir string) (Counts, []error, error) {
	var c Counts
	var problems []error
	path := filePath(dir)
	if err := Stat(dir); err != nil {
		return c, nil, err
	}
	err := func() (err error) {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() {
			if p := recover(); p != nil {
				problems = append(problems, fmt.Errorf("reading the file: %v", p))
			}
		}()
		db, err := bolt.Open(path, 0o644, &bolt.Options{ReadOnly: true, Timeout: lockWait})
		if err != nil {
			return openError(path, err)
		}
		defer db.Close()
		return db.View(func(tx *bolt.Tx) error {
			// Every page read here first, under guard: bbolt's check runs
			// in a goroutine of its own, where a damaged page would be an
			// unrecoverable panic.
			if err := walkTx(tx); err != nil {
				return err
			}
			for e := range tx.Check() {
				problems = append(problems, e)
			}
			if len(problems) > 0 {
				return nil
			}
			if _, err := formatTx(tx, path); err != nil {
				var fe *FormatError
				if errors.As(err, &fe) {
					return err // not damage: a newer version's file
				}
				var d *DamagedError
				if errors.As(err, &d) {
					err = errors.New(d.Cause)
				}
				problems = append(problems, err)
				return nil
			}
			problems = append(problems, checkKnown(tx)...)
			c = countTx(tx)
			return nil
		})
	}()
	return c, problems, err
}

// checkKnown checks what bbolt cannot: that every slot, of the known
// papers and of the prints, holds whole entries in increasing order within
// its range, and that the recent logs hold whole entries under their
// sequence numbers.
func checkKnown(tx *bolt.Tx) []error {
	out := checkSlots(tx, bucketKnown, bucketRecent, entrySize, "known papers", "recent papers")
	return append(out, checkSlots(tx, bucketPrints, bucketRecentPrints, printEntrySize, "prints", "recent prints")...)
}

// checkSlots checks one set of slots and its log.
func checkSlots(tx *bolt.Tx, slots, log []byte, entrySize int, name, logName string) []error {
	var out []error
	var runs uint64 // run numbers given
	if b := tx.Bucket(bucketRunNums); b != nil {
		runs = b.Sequence()
	}
	entryRun := func(v []byte, i int) uint32 { return entryRunAt(v, i, entrySize) }
	badRun := func(v []byte, i int) bool { r := entryRun(v, i); return r == 0 || uint64(r) > runs }
	if b := tx.Bucket(slots); b != nil {
		if k, _ := b.Cursor().First(); k == nil {
			out = append(out, fmt.Errorf("%s: no slot: the first one, at 0, is gone", name))
		}
		c := b.Cursor()
		var prevEnd uint64
		first := true
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if len(k) != hashSize || len(v)%entrySize != 0 {
				out = append(out, fmt.Errorf("%s: the slot %x holds %d bytes, not whole entries", name, k, len(v)))
				first = false
				continue
			}
			start := binary.BigEndian.Uint64(k)
			if first && start != 0 {
				out = append(out, fmt.Errorf("%s: the first slot begins at %x, not 0", name, k))
			}
			if !first && start < prevEnd {
				out = append(out, fmt.Errorf("%s: the slot %x overlaps the one before it", name, k))
			}
			first = false
			last := start
			for i := 0; i < len(v)/entrySize; i++ {
				h := binary.BigEndian.Uint64(v[i*entrySize:])
				if h < last || (i > 0 && h == last) {
					out = append(out, fmt.Errorf("%s: the slot %x is out of order at entry %d", name, k, i))
					break
				}
				if badRun(v, i) {
					out = append(out, fmt.Errorf("%s: entry %d of the slot %x names run number %d, which this file never gave", name, i, k, entryRun(v, i)))
					break
				}
				last = h
			}
			prevEnd = last
			if n, _ := c.Next(); n != nil {
				if len(n) == hashSize && len(v) > 0 && binary.BigEndian.Uint64(n) <= last {
					out = append(out, fmt.Errorf("%s: the slot %x holds entries of the next slot's range", name, k))
				}
				c.Prev()
			}
			if len(out) >= 100 {
				return append(out, fmt.Errorf("%s: more problems not listed", name))
			}
		}
	}
	if b := tx.Bucket(log); b != nil {
		seq := b.Sequence()
		b.ForEach(func(k, v []byte) error {
			if len(k) != 8 || binary.BigEndian.Uint64(k) == 0 || binary.BigEndian.Uint64(k) > seq || len(v)%entrySize != 0 {
				out = append(out, fmt.Errorf("%s: the record %x is not what was written", logName, k))
				return nil
			}
			for i := 0; i < len(v)/entrySize; i++ {
				if badRun(v, i) {
					out = append(out, fmt.Errorf("%s: entry %d of the record %x names run number %d, which this file never gave", logName, i, k, entryRun(v, i)))
					break
				}
			}
			return nil
		})
	}
	return out
}

// newPrintsLogged counts the keys of the prints' log that the slots do
// not have yet (a later revision of a key in the slots is no new key).
func newPrintsLogged(tx *bolt.Tx, slots knownSet) int {
	b := tx.Bucket(bucketRecentPrints)
	if b == nil {
		return 0
	}
	seen := map[uint64]bool{}
	b.ForEach(func(_, v []byte) error {
		for i := 0; i < len(v)/printEntrySize; i++ {
			h := binary.BigEndian.Uint64(v[i*printEntrySize:])
			if _, ok, err := slots.getPrint(h); !ok && err == nil {
				seen[h] = true
			}
		}
		return nil
	})
	return len(seen)
}

// Counts is what a state file holds.
type Counts struct {
	Format int `json:"format"`
	// Papers known. A file migrated from format 1 may count a paper seen
	// first without its JSON and later with it twice.
	Papers int `json:"papers"`
	// Keys are the ids and DOIs papers are known by (format 2).
	Keys int `json:"keys,omitempty"`
	// DOIs known (format 1).
	DOIs      int  `json:"dois,omitempty"`
	Pages     int  `json:"pages"`
	Runs      int  `json:"runs"`
	SinkToken bool `json:"sink_token"`
}

func countTx(tx *bolt.Tx) Counts {
	n := func(name []byte) int {
		if b := tx.Bucket(name); b != nil {
			return b.Stats().KeyN
		}
		return 0
	}
	c := Counts{Pages: n(bucketPages), Runs: n(bucketRuns)}
	c.Format, _ = formatTx(tx, "")
	if c.Format == 1 {
		c.Papers, c.DOIs = n(bucketPapers), n(bucketDOIs)
	} else if b := tx.Bucket(bucketKnown); b != nil {
		c.Keys = knownSet{b: b, c: b.Cursor(), size: entrySize}.count() + recentCount(tx, bucketRecent, entrySize)
		if pb := tx.Bucket(bucketPrints); pb != nil {
			c.Keys += knownSet{b: pb, c: pb.Cursor(), size: printEntrySize}.count() + newPrintsLogged(tx, newPrintSet(pb))
		}
	}
	if b := tx.Bucket(bucketMeta); b != nil {
		c.SinkToken = b.Get(keySinkToken) != nil
		if v := b.Get(keyPaperCount); len(v) == 8 && c.Format != 1 {
			c.Papers = int(binary.BigEndian.Uint64(v))
		}
	}
	return c
}
