// Package state is the crawl's durable memory on one machine: an embedded
// bbolt file in the state directory holding the papers already delivered
// (by id and by DOI), the status of every listing page, the sinks' commit
// token and the run history. Everything lives on disk, so memory does not
// grow with the crawl.
//
// Store implements the engine's ledger port (ledger.Ledger, with the
// PageBook and TokenStore abilities), atomically: the sinks acknowledge a
// group of pages' records, then Commit marks the pages done, adds their
// papers and stores the sinks' new token in one transaction. After a crash
// the token rolls the sinks back to the last commit, so nothing is
// delivered twice.
package state

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"

	"github.com/litcrawl/litcrawl/ledger"
)

var (
	bucketPapers = []byte("papers") // paper id → run id that first delivered it
	bucketDOIs   = []byte("dois")   // lower-cased DOI → paper id
	bucketPages  = []byte("pages")  // journal(8) page(4) → PageStatus JSON
	bucketMeta   = []byte("meta")   // sink_token, schema
	bucketRuns   = []byte("runs")   // run id → Run JSON
	bucketWalks  = []byte("walks")  // journal(8) → the nightly walk's marks (JSON array)
	keySinkToken = []byte("sink_token")
	keyFreelist  = []byte("freelist") // "synced": written by a version that keeps the free-page list
	keyWriter    = []byte("writer")   // a random id of this state, made once: the sinks' writer name
)

// FileName is the store's file in the state directory.
const FileName = "crawl.db"

// ErrLocked means another process has the store open.
var ErrLocked = errors.New("the state store is in use by another process")

var (
	_ ledger.Ledger     = (*Store)(nil)
	_ ledger.PageBook   = (*Store)(nil)
	_ ledger.TokenStore = (*Store)(nil)
)

// Store is an open state file. It is safe for concurrent use.
type Store struct {
	db       *bolt.DB
	path     string
	writer   string
	released atomic.Int64                 // page bytes written at the last releaseMap
	damaged  atomic.Pointer[DamagedError] // set once a read tripped over damage
}

// lockWait is how long Open waits for another process to let go.
const lockWait = 2 * time.Second

func filePath(dir string) string { return filepath.Join(dir, FileName) }

// openError explains an error of bolt.Open: another process holds the
// file, or the file is not a sound state file.
func openError(path string, err error) error {
	switch {
	case errors.Is(err, bolt.ErrTimeout):
		return fmt.Errorf("state %s: %w", path, ErrLocked)
	case errors.Is(err, bolt.ErrInvalid), errors.Is(err, bolt.ErrVersionMismatch), errors.Is(err, bolt.ErrChecksum),
		errors.Is(err, bolt.ErrInvalidMapping):
		return &DamagedError{Path: path, Cause: err.Error()}
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		// Not the file system refusing (permissions, a full disk): bbolt
		// could not make sense of the file (too small, bad page size, …).
		return &DamagedError{Path: path, Cause: err.Error()}
	}
	return fmt.Errorf("state %s: %w", path, err)
}

// Open opens (creating if needed) the store in dir. If another process
// holds it, Open fails with ErrLocked after a short wait.
//
// A file damaged where opening reads it (its meta pages, its free-page
// list) is a *DamagedError, never a panic; damage found later, by the
// reads a crawl makes, is one too (see guard).
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("state dir %s: %w", dir, err)
	}
	path := filePath(dir)
	if info, err := os.Stat(path); err == nil && !info.Mode().IsRegular() {
		return nil, fmt.Errorf("state %s: not a regular file (%s)", path, info.Mode().Type())
	} else if err == nil && info.Size() == 0 {
		return nil, &DamagedError{Path: path, Cause: "the file is empty"}
	}
	if err := upgradeOnce(path); err != nil {
		return nil, err
	}
	// The free-page list is written at every commit (bbolt's default), so
	// opening reads it rather than rebuilding it by scanning the whole
	// file in a goroutine of bbolt's own, where damage would be a panic no
	// one can catch. It is loaded here, under guard.
	s, err := openBolt(path, &bolt.Options{Timeout: lockWait, FreelistType: bolt.FreelistMapType, PreLoadFreelist: true})
	if err != nil {
		return nil, err
	}
	db := s.db
	err = s.update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketPapers, bucketDOIs, bucketPages, bucketMeta, bucketRuns, bucketWalks} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		if w := meta.Get(keyWriter); w != nil {
			s.writer = string(w)
		} else {
			s.writer = uuid.NewString()
			if err := meta.Put(keyWriter, []byte(s.writer)); err != nil {
				return err
			}
		}
		if meta.Get(keyFreelist) == nil {
			return meta.Put(keyFreelist, []byte("synced"))
		}
		return nil
	})
	if err != nil {
		db.Close()
		var d *DamagedError
		if errors.As(err, &d) {
			return nil, d
		}
		return nil, fmt.Errorf("state %s: %w", path, err)
	}
	return s, nil
}

// openBolt opens the bbolt file at path under guard: damage found by
// opening is a *DamagedError, another process holding it ErrLocked.
func openBolt(path string, opts *bolt.Options) (*Store, error) {
	s := &Store{path: path}
	err := s.guard(func() error {
		db, err := bolt.Open(path, 0o644, opts)
		if err != nil {
			return openError(path, err)
		}
		s.db = db
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// WriterID names this state to the sinks it commits tokens with (a random
// id made when the state was first opened, kept for its life): a table
// that several crawls write keeps each one's commit count under it.
func (s *Store) WriterID() string { return s.writer }

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

// PageKey names one listing page.
type PageKey = ledger.PageKey

func pageKeyBytes(k PageKey) []byte {
	b := make([]byte, 12)
	binary.BigEndian.PutUint64(b, uint64(k.Journal))
	binary.BigEndian.PutUint32(b[8:], uint32(k.Page))
	return b
}

func pageKeyFrom(b []byte) PageKey {
	return PageKey{Journal: int64(binary.BigEndian.Uint64(b)), Page: int(binary.BigEndian.Uint32(b[8:]))}
}

// Page states.
const (
	PageDone   = "done"
	PageFailed = "failed"
)

// PageStatus is what the store knows of a page.
type PageStatus struct {
	State     string    `json:"state"`
	Attempts  int       `json:"attempts"`
	LastError string    `json:"last_error,omitempty"`
	Papers    int       `json:"papers"`     // records on the page when done
	NewPapers int       `json:"new_papers"` // of which delivered for the first time
	RunID     string    `json:"run_id"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Page returns a page's status; ok is false for a page never seen.
func (s *Store) Page(k PageKey) (st PageStatus, ok bool, err error) {
	err = s.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketPages).Get(pageKeyBytes(k))
		if v == nil {
			return nil
		}
		ok = true
		return s.decode(v, &st)
	})
	return st, ok, err
}

// PageDone reports whether a page was committed (and not failed since).
func (s *Store) PageDone(ctx context.Context, k PageKey) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	st, ok, err := s.Page(k)
	return ok && st.State == PageDone, err
}

// FailedPages lists the pages whose last attempt failed.
func (s *Store) FailedPages() ([]PageKey, error) {
	var out []PageKey
	err := s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketPages).ForEach(func(k, v []byte) error {
			var st PageStatus
			if err := s.decode(v, &st); err != nil {
				return err
			}
			if st.State == PageFailed {
				out = append(out, pageKeyFrom(k))
			}
			return nil
		})
	})
	return out, err
}

// Lookup tells, for each paper, whether it was delivered before, by id or
// by DOI, and whether by runID or an earlier run, in one read transaction.
// A paper seen once without its JSON (id "doi:…") and later with it is the
// same paper.
func (s *Store) Lookup(ctx context.Context, ps []ledger.Paper, runID string) ([]ledger.Seen, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]ledger.Seen, len(ps))
	err := s.view(func(tx *bolt.Tx) error {
		b := buckets(tx)
		for i, p := range ps {
			switch known, by := knownTx(b, p.ID, p.DOI); {
			case !known:
				out[i] = ledger.Unknown
			case string(by) == runID: // compared without a copy
				out[i] = ledger.SeenThisRun
			default:
				out[i] = ledger.SeenBefore
			}
		}
		return nil
	})
	return out, err
}

// paperBuckets are the two buckets a lookup reads, opened once per
// transaction.
type paperBuckets struct{ papers, dois *bolt.Bucket }

func buckets(tx *bolt.Tx) paperBuckets {
	return paperBuckets{tx.Bucket(bucketPapers), tx.Bucket(bucketDOIs)}
}

// knownTx looks a paper up by id, then by DOI, then as "doi:<doi>"; runID
// is the value in the store, valid only during the transaction.
func knownTx(b paperBuckets, id, doi string) (known bool, runID []byte) {
	if v := b.papers.Get([]byte(id)); v != nil {
		return true, v
	}
	if doi = ledger.DOIKey(doi); doi != "" {
		if pid := b.dois.Get([]byte(doi)); pid != nil {
			return true, b.papers.Get(pid)
		}
		// A paper known by "doi:<doi>" alone.
		if v := b.papers.Get([]byte("doi:" + doi)); v != nil {
			return true, v
		}
	}
	return false, nil
}

// Commit marks a group's pages done, records their papers as known and
// stores the sinks' token, in one transaction (a group commit): either all
// of it is durable, or none. It returns how many papers of each page were
// new.
func (s *Store) Commit(ctx context.Context, g ledger.Group) (newPapers []int, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	newPapers = make([]int, len(g.Pages))
	err = s.update(func(tx *bolt.Tx) error {
		for i, c := range g.Pages {
			n, err := commitTx(tx, c)
			if err != nil {
				return err
			}
			newPapers[i] = n
		}
		if g.SinkToken != nil {
			return tx.Bucket(bucketMeta).Put(keySinkToken, g.SinkToken)
		}
		return nil
	})
	if err == nil {
		s.maybeReleaseMap()
	}
	return newPapers, err
}

// releaseEvery is how many bytes of pages the store writes between two
// releases of its memory map (see releaseMap): the map's resident part
// stays within about this much plus the pages a transaction reads.
var releaseEvery int64 = 4 << 20

// maybeReleaseMap releases the memory map when releaseEvery bytes of pages
// were written since the last release.
func (s *Store) maybeReleaseMap() {
	stats := s.db.Stats()
	written := stats.TxStats.GetPageAlloc()
	last := s.released.Load()
	if written-last >= releaseEvery && s.released.CompareAndSwap(last, written) {
		releaseMap(s.db)
	}
}

func commitTx(tx *bolt.Tx, c ledger.Page) (newPapers int, err error) {
	b := buckets(tx)
	for _, p := range c.Papers {
		isNew, err := addPaperTx(b, p, c.RunID)
		if err != nil {
			return 0, err
		}
		if isNew {
			newPapers++
		}
	}
	st := PageStatus{State: PageDone, Papers: c.OnPage, NewPapers: newPapers, RunID: c.RunID, UpdatedAt: c.At.UTC()}
	if prev := tx.Bucket(bucketPages).Get(pageKeyBytes(c.Key)); prev != nil {
		var old PageStatus
		if json.Unmarshal(prev, &old) == nil {
			st.Attempts = old.Attempts
		}
	}
	st.Attempts++
	v, err := json.Marshal(st)
	if err != nil {
		return 0, err
	}
	return newPapers, tx.Bucket(bucketPages).Put(pageKeyBytes(c.Key), v)
}

// addPaperTx records a paper as known, first delivered by runID unless it
// was known already; isNew says it was not.
func addPaperTx(b paperBuckets, p ledger.Paper, runID string) (isNew bool, err error) {
	// Each key is read once: the id, then the DOI, then "doi:<doi>" only
	// when neither is known (as knownTx does).
	id, doi := []byte(p.ID), ledger.DOIKey(p.DOI)
	idKnown := b.papers.Get(id) != nil
	doiKnown := doi != "" && b.dois.Get([]byte(doi)) != nil
	isNew = !idKnown && !doiKnown && (doi == "" || b.papers.Get([]byte("doi:"+doi)) == nil)
	if !idKnown {
		if err := b.papers.Put(id, []byte(runID)); err != nil {
			return false, err
		}
	}
	if doi != "" && !doiKnown {
		if err := b.dois.Put([]byte(doi), id); err != nil {
			return false, err
		}
	}
	return isNew, nil
}

// KnownPaper is a paper to record as known, with the run that first
// delivered it.
type KnownPaper struct {
	ledger.Paper
	RunID string
}

// AddKnown records papers as known in one transaction, each first
// delivered by its run unless it is known already (crawl state rebuild).
// No page is marked done: a later backfill fetches the pages again and
// delivers only what is not known. It returns how many were new.
func (s *Store) AddKnown(ctx context.Context, papers []KnownPaper) (newPapers int, err error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	err = s.update(func(tx *bolt.Tx) error {
		b := buckets(tx)
		for _, p := range papers {
			isNew, err := addPaperTx(b, p.Paper, p.RunID)
			if err != nil {
				return err
			}
			if isNew {
				newPapers++
			}
		}
		return nil
	})
	return newPapers, err
}

// FailPage records a failed attempt at a page; a later run retries it.
func (s *Store) FailPage(ctx context.Context, k PageKey, runID string, cause error, at time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketPages)
		var st PageStatus
		if prev := b.Get(pageKeyBytes(k)); prev != nil {
			if err := s.decode(prev, &st); err != nil {
				return err
			}
		}
		st.State, st.Attempts, st.RunID, st.UpdatedAt = PageFailed, st.Attempts+1, runID, at.UTC()
		if cause != nil {
			st.LastError = cause.Error()
		}
		v, err := json.Marshal(st)
		if err != nil {
			return err
		}
		return b.Put(pageKeyBytes(k), v)
	})
}

// SinkToken is the token stored by the last Commit that had one, or nil.
func (s *Store) SinkToken(ctx context.Context) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var tok []byte
	err := s.view(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(keySinkToken); v != nil {
			tok = append([]byte(nil), v...)
		}
		return nil
	})
	return tok, err
}
