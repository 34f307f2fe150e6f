package state

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/litcrawl/litcrawl/internal/atomicfile"
	"github.com/litcrawl/litcrawl/internal/ledger"
)

// Format is the version of the state file this binary writes. Format 1
// kept each paper id and DOI as a bbolt key with the first run's id as a
// string (about 250 bytes a paper); format 2 keeps packed 64-bit hashes
// with run numbers (see known.go), binary page statuses, and this number
// in the meta bucket; format 3 adds the papers' prints (see prints.go),
// and a format-2 file is upgraded to it in place when opened. Opening a
// format-1 file migrates it (see migrate); a file of a later format is
// refused.
const Format = 3

// FormatError means the state file is in a format this binary does not
// know: written by a newer version. Nothing is delivered from it.
type FormatError struct {
	Path  string
	Found int
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("state %s is in format %d, written by a newer version of crawl; this one reads formats 1 to %d. "+
		"Run the newer version (this one would not know which papers were delivered, and would deliver them again); the file is left as it is",
		e.Path, e.Found, Format)
}

// errReplaced means the open file is a format-1 file that another process
// migrated (and replaced) while this one waited for its lock: open the
// name again.
var errReplaced = errors.New("the state file was migrated by another process")

// keyMigrated is written into a format-1 file once its format-2 file has
// replaced it, for a process that opened it before and waits for its lock.
var keyMigrated = []byte("migrated_to")

// format reads the file's format: 0 for a new, empty file.
func (s *Store) format() (int, error) {
	n := 0
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		n, err = formatTx(tx, s.path)
		return err
	})
	return n, err
}

func formatTx(tx *bolt.Tx, path string) (int, error) {
	meta := tx.Bucket(bucketMeta)
	if meta != nil {
		if v := meta.Get(keyFormat); v != nil {
			n, err := strconv.Atoi(string(v))
			switch {
			case err != nil || n < 2:
				return 0, &DamagedError{Path: path, Cause: fmt.Sprintf("the format version %q is not one any version wrote", v)}
			case n > Format:
				return 0, &FormatError{Path: path, Found: n}
			}
			// Format 3 keeps its papers' primary keys in the prints'
			// buckets: without them, every paper would look new.
			for _, b := range [][]byte{bucketKnown, bucketRecent, bucketPrints, bucketRecentPrints} {
				if (n >= 3 || string(b) == string(bucketKnown) || string(b) == string(bucketRecent)) && tx.Bucket(b) == nil {
					return 0, &DamagedError{Path: path, Cause: fmt.Sprintf("the %s bucket is missing from a format-%d file", b, n)}
				}
			}
			return n, nil
		}
	}
	// Format 1 wrote no version. A file with format 2's buckets and no
	// version lost it: damage, never a format-1 file to migrate (which
	// would forget its papers).
	for _, b := range [][]byte{bucketKnown, bucketRunIDs, bucketRunNums, bucketRecent} {
		if tx.Bucket(b) != nil {
			return 0, &DamagedError{Path: path, Cause: "the format version is missing from a format-2 file"}
		}
	}
	if meta != nil && meta.Get(keyMigrated) != nil {
		return 0, errReplaced
	}
	// Format 1's files have its buckets.
	for _, b := range [][]byte{bucketMeta, bucketPapers, bucketDOIs, bucketPages, bucketRuns} {
		if tx.Bucket(b) != nil {
			return 1, nil
		}
	}
	return 0, nil
}

// initNewFile makes the buckets of a new file, in this format.
func initNewFile(tx *bolt.Tx) error {
	for _, b := range [][]byte{bucketPages, bucketMeta, bucketRuns, bucketRunIDs, bucketRunNums, bucketWalks, bucketRecent} {
		if _, err := tx.CreateBucketIfNotExists(b); err != nil {
			return err
		}
	}
	if err := initKnown(tx); err != nil {
		return err
	}
	if err := initPrints(tx); err != nil {
		return err
	}
	return tx.Bucket(bucketMeta).Put(keyFormat, []byte(strconv.Itoa(Format)))
}

// damage turns an error of a known-set read (a value not as written) into
// a *DamagedError; other errors are returned as they are.
func (s *Store) damage(err error) error {
	var d *DamagedError
	if err == nil || errors.As(err, &d) {
		return err
	}
	if errors.Is(err, errSlot) || errors.Is(err, errRunNumber) {
		return &DamagedError{Path: s.path, Cause: err.Error()}
	}
	return err
}

// A page status is stored as
//
//	state (1: done, 2: failed) | attempts | papers | new papers | run number (uvarints) |
//	updated at (varint, Unix nanoseconds) | last error (the rest)
func encodePage(st PageStatus, run uint32) []byte {
	b := make([]byte, 0, 24+len(st.LastError))
	state := byte(1)
	if st.State == PageFailed {
		state = 2
	}
	b = append(b, state)
	b = binary.AppendUvarint(b, uint64(max(st.Attempts, 0)))
	b = binary.AppendUvarint(b, uint64(max(st.Papers, 0)))
	b = binary.AppendUvarint(b, uint64(max(st.NewPapers, 0)))
	b = binary.AppendUvarint(b, uint64(run))
	var at int64 // the zero time: 0
	if !st.UpdatedAt.IsZero() {
		at = st.UpdatedAt.UnixNano()
	}
	b = binary.AppendVarint(b, at)
	return append(b, st.LastError...)
}

func (s *Store) decodePage(v []byte) (st PageStatus, run uint32, err error) {
	bad := &DamagedError{Path: s.path, Cause: "a page status is not what was written"}
	if len(v) < 1 || v[0] < 1 || v[0] > 2 {
		return st, 0, bad
	}
	st.State = PageDone
	if v[0] == 2 {
		st.State = PageFailed
	}
	v = v[1:]
	var u [4]uint64
	for i := range u {
		n, k := binary.Uvarint(v)
		if k <= 0 || n > 1<<40 {
			return st, 0, bad
		}
		u[i], v = n, v[k:]
	}
	at, k := binary.Varint(v)
	if k <= 0 {
		return st, 0, bad
	}
	st.Attempts, st.Papers, st.NewPapers, run = int(u[0]), int(u[1]), int(u[2]), uint32(u[3])
	if at != 0 {
		st.UpdatedAt = time.Unix(0, at).UTC()
	}
	st.LastError = string(v[k:])
	return st, run, nil
}

// MigrateSuffix names the file a migration builds beside the state file
// before it replaces it.
const MigrateSuffix = ".migrate"

// format1Page is a page status as format 1 stored it.
type format1Page struct {
	State     string    `json:"state"`
	Attempts  int       `json:"attempts"`
	LastError string    `json:"last_error,omitempty"`
	Papers    int       `json:"papers"`
	NewPapers int       `json:"new_papers"`
	RunID     string    `json:"run_id"`
	UpdatedAt time.Time `json:"updated_at"`
}

// migrate rewrites the format-1 file s (open, and held exclusively) in
// format 2: a new file is built beside it (MigrateSuffix), synced, and
// renamed over it. A crash before the rename leaves the old file as it
// was (the next open migrates again); after it, the new one. It needs
// free disk for the new file, about 64 bytes a known paper.
//
// Everything is kept: each paper by its id and its DOI with the run that
// first delivered it (runs are numbered in the order of their ids, which
// is their start order), the pages, the sinks' token, the writer id, the
// run history and the walk marks.
func (s *Store) migrate() error {
	// A link to the file: the file it names is migrated, beside it.
	target, err := filepath.EvalSymlinks(s.path)
	if err != nil {
		return fmt.Errorf("state %s: migrating to format %d: %w", s.path, Format, err)
	}
	info, err := os.Stat(target)
	if err != nil {
		return fmt.Errorf("state %s: migrating to format %d: %w", s.path, Format, err)
	}
	tmp := target + MigrateSuffix
	if fi, err := os.Lstat(tmp); err == nil && fi.IsDir() {
		return fmt.Errorf("state %s: migrating to format %d: %s is a directory, where the migration builds its file: move it away", s.path, Format, tmp)
	}
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("state %s: migrating to format %d: %w", s.path, Format, err)
	}
	err = s.view(func(src *bolt.Tx) error {
		// Syncing each transaction of a file not yet in use buys nothing:
		// it is synced once, complete, before it replaces the old one.
		dst, err := bolt.Open(tmp, info.Mode().Perm(), &bolt.Options{FreelistType: bolt.FreelistMapType, NoSync: true, Timeout: lockWait})
		if err != nil {
			return err
		}
		// The new file keeps the old one's owner and mode.
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			os.Chown(tmp, int(st.Uid), int(st.Gid))
		}
		os.Chmod(tmp, info.Mode().Perm())
		dst.AllocSize = allocStep
		err = copyFormat1(src, dst, s.path, s.tune.migrateBatch, s.step)
		if err == nil {
			err = dst.Sync()
		}
		if cerr := dst.Close(); err == nil {
			err = cerr
		}
		return err
	})
	if err != nil {
		os.Remove(tmp)
		var d *DamagedError
		if errors.As(err, &d) {
			return d
		}
		return fmt.Errorf("state %s: migrating to format %d (the file is left as it was): %w", s.path, Format, err)
	}
	s.step("written")
	if err := atomicfile.Replace(tmp, target); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("state %s: migrating to format %d: %w", s.path, Format, err)
	}
	s.step("renamed")
	// Marked in the old file, which no name reaches any more: a process
	// that opened it and waits for its lock opens the name again.
	return s.update(func(tx *bolt.Tx) error {
		m, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		return m.Put(keyMigrated, []byte(strconv.Itoa(Format)))
	})
}

// copyFormat1 copies a format-1 file's content into dst, a new file, in
// format 2: first what is not papers (copyFormat1Rest), then the DOIs with
// the run of the paper each names, then the ids (a paper known by a DOI is
// not counted again), a batch a transaction; the format is written last,
// by the final transaction: a file cut short has no version, and is never
// renamed.
func copyFormat1(src *bolt.Tx, dst *bolt.DB, srcPath string, batch int, hook func(string)) error {
	if err := dst.Update(func(tx *bolt.Tx) error { return copyFormat1Rest(src, tx, srcPath) }); err != nil {
		return err
	}
	c := format1Copy{dst: dst, papers: src.Bucket(bucketPapers), batch: batch, hook: hook}
	err := c.keys(src.Bucket(bucketDOIs), c.addDOI)
	if err == nil {
		// An id copied here that the DOIs did not name is a paper known
		// by its id alone (or, rarely, a second id of a paper known by
		// its DOI: the count of papers is then one too high).
		err = c.keys(c.papers, c.addID)
	}
	if err != nil {
		return err
	}
	return dst.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if err := meta.Put(keyPaperCount, binary.BigEndian.AppendUint64(nil, c.added)); err != nil {
			return err
		}
		return meta.Put(keyFormat, []byte(strconv.Itoa(Format)))
	})
}

// copyFormat1Rest copies what a format-1 file holds besides its papers:
// the meta keys, the runs (numbered in id order, which is start order),
// the walk states and the page statuses.
func copyFormat1Rest(src, tx *bolt.Tx, srcPath string) error {
	if err := initNewFile(tx); err != nil {
		return err
	}
	if err := tx.Bucket(bucketMeta).Delete(keyFormat); err != nil {
		return err
	}
	if m := src.Bucket(bucketMeta); m != nil {
		for _, k := range [][]byte{keySinkToken, keyWriter, keyFreelist} {
			if v := m.Get(k); v != nil {
				if err := tx.Bucket(bucketMeta).Put(k, v); err != nil {
					return err
				}
			}
		}
	}
	for _, name := range [][]byte{bucketRuns, bucketWalks} {
		if b := src.Bucket(name); b != nil {
			if err := b.ForEach(func(k, v []byte) error { return tx.Bucket(name).Put(k, v) }); err != nil {
				return err
			}
		}
	}
	if b := src.Bucket(bucketRuns); b != nil {
		if err := b.ForEach(func(k, _ []byte) error {
			_, err := runNumber(tx, string(k), true)
			return err
		}); err != nil {
			return err
		}
	}
	b := src.Bucket(bucketPages)
	if b == nil {
		return nil
	}
	pages := tx.Bucket(bucketPages)
	pages.FillPercent = pagesFill
	return b.ForEach(func(k, v []byte) error {
		var old format1Page
		if err := json.Unmarshal(v, &old); err != nil {
			return &DamagedError{Path: srcPath, Cause: fmt.Sprintf("the status of page %x is not what was written: %v", k, err)}
		}
		run, err := runNumber(tx, old.RunID, true)
		if err != nil {
			return err
		}
		st := PageStatus{State: old.State, Attempts: old.Attempts, LastError: old.LastError, Papers: old.Papers, NewPapers: old.NewPapers, UpdatedAt: old.UpdatedAt}
		return pages.Put(k, encodePage(st, run))
	})
}

// format1Copy copies a format-1 file's papers into the new file.
type format1Copy struct {
	dst    *bolt.DB
	papers *bolt.Bucket // the format-1 file's papers (id → run id)
	batch  int          // keys a transaction
	hook   func(string) // called after each transaction ("batch")
	added  uint64       // papers added
}

// keys copies a format-1 bucket's keys, c.batch a transaction.
func (c *format1Copy) keys(b *bolt.Bucket, add func(w *paperWriter, k, v []byte) error) error {
	if b == nil {
		return nil
	}
	cur := b.Cursor()
	k, v := cur.First()
	for k != nil {
		err := c.dst.Update(func(tx *bolt.Tx) error {
			w := newWriter(tx)
			for i := 0; k != nil && i < c.batch; i++ {
				if err := add(w, k, v); err != nil {
					return err
				}
				k, v = cur.Next()
			}
			c.added += w.added
			w.added = 0 // counted here, not in meta
			return w.flush()
		})
		if err != nil {
			return err
		}
		c.hook("batch")
	}
	return nil
}

// addDOI adds the paper a DOI names, with its first run.
func (c *format1Copy) addDOI(w *paperWriter, doi, id []byte) error {
	runID := ""
	if c.papers != nil {
		runID = string(c.papers.Get(id))
	}
	run, err := w.run(runID)
	if err != nil {
		return err
	}
	// Seen first without its JSON ("doi:<doi>"), by an earlier run.
	if c.papers != nil && !isDOIID(string(id)) {
		if v := c.papers.Get(append([]byte("doi:"), doi...)); v != nil {
			if r, err := w.run(string(v)); err == nil && r < run {
				run = r
			}
		}
	}
	_, err = w.add(ledger.Paper{ID: string(id), DOI: string(doi)}, run)
	return err
}

// addID adds a paper by its id.
func (c *format1Copy) addID(w *paperWriter, id, runID []byte) error {
	run, err := w.run(string(runID))
	if err != nil {
		return err
	}
	_, err = w.add(ledger.Paper{ID: string(id)}, run)
	return err
}

// firstRunFormat1 looks a paper up in a format-1 file (read-only: a file
// not migrated yet) as format 1 did: its id, its DOI, then "doi:<DOI>".
func firstRunFormat1(tx *bolt.Tx, p ledger.Paper) (runID string, known bool) {
	papers, dois := tx.Bucket(bucketPapers), tx.Bucket(bucketDOIs)
	if papers == nil {
		return "", false
	}
	if p.ID != "" {
		if v := papers.Get([]byte(p.ID)); v != nil {
			return string(v), true
		}
	}
	if doi := p.DOIKey(); doi != "" {
		if dois != nil {
			if id := dois.Get([]byte(doi)); id != nil {
				return string(papers.Get(id)), true
			}
		}
		if v := papers.Get([]byte("doi:" + doi)); v != nil {
			return string(v), true
		}
	}
	return "", false
}
