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
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/litcrawl/litcrawl/internal/atomicfile"
	"github.com/litcrawl/litcrawl/internal/fskind"
	"github.com/litcrawl/litcrawl/internal/textsafe"

	bolt "go.etcd.io/bbolt"

	"github.com/litcrawl/litcrawl/internal/ledger"
)

var (
	bucketKnown   = []byte("known")             // slot start (8) → packed entries: see known.go
	bucketPages   = []byte("pages")             // journal(8) page(4) → page status (binary: see encodePage)
	bucketMeta    = []byte("meta")              // format, sink_token, writer, freelist, papers
	bucketRuns    = []byte("runs")              // run id → Run JSON
	bucketRunIDs  = []byte("run_ids")           // run id → run number (4)
	bucketRunNums = []byte("run_ids_by_number") // run number (4) → run id
	bucketWalks   = []byte("walks")             // journal(8) → the nightly walk's state (JSON: ledger.WalkState; an earlier version's, its marks as an array)
	keySinkToken  = []byte("sink_token")
	keyFreelist   = []byte("freelist") // "synced": written by a version that keeps the free-page list
	keyWriter     = []byte("writer")   // a random id of this state, made once: the sinks' writer name
	keyFormat     = []byte("format")   // the file's format version, in decimal
	keyPaperCount = []byte("papers")   // papers known (8 bytes, big-endian)

	// Format 1's buckets, read by the migration.
	bucketPapers = []byte("papers") // paper id → run id that first delivered it
	bucketDOIs   = []byte("dois")   // lower-cased DOI → paper id
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

	fileFormat int       // as opened (read-only: 1, 2 or 3)
	migrated   Migration // what Open migrated

	// logMu is held by whoever adds to the recent log or merges it (see
	// recent.go); memMu guards mem, the log's entries in memory. The
	// holder of logMu reads mem without memMu (no one else changes it).
	logMu    sync.Mutex
	mergeErr error // a merge's failure, for the next commit (under logMu)
	memMu    sync.RWMutex
	mem      recentIndex[entry]
	pmem     recentIndex[printEntry] // the prints' log (see prints.go)

	tune tuning // sizes of its batches (tests make them small)
}

// tuning are the sizes a store works in: defaultTuning, smaller in tests
// (export_test.go's OpenTuned) to reach a merge or a migration's batch
// with little data, and a hook a test uses to stop a process at a step.
type tuning struct {
	// releaseEvery is how many bytes of pages the store writes between
	// two releases of its memory map (see releaseMap): the map's resident
	// part stays within about this much plus the pages a transaction
	// reads.
	releaseEvery int64
	// migrateBatch is how many format-1 keys a migration copies per
	// transaction of the new file.
	migrateBatch int
	// mergeAt is how many entries the recent log holds before they are
	// merged (4 MB of memory at most); mergeChunk how many entries one
	// merge transaction writes into the slots: at most that many pages of
	// slots dirty at once.
	mergeAt, mergeChunk int
	// hook, when set, is called at each step of a migration ("batch" after
	// each transaction of the new file, "written" when it is complete and
	// synced, "renamed" when it has replaced the old one) and after each
	// merge transaction ("merge").
	hook func(step string)
}

var defaultTuning = tuning{releaseEvery: 4 << 20, migrateBatch: 50_000, mergeAt: 1 << 18, mergeChunk: 4096}

// step calls the tuning's hook, if any.
func (s *Store) step(name string) {
	if s.tune.hook != nil {
		s.tune.hook(name)
	}
}

// lockWait is how long Open waits for another process to let go.
const lockWait = 2 * time.Second

func filePath(dir string) string { return filepath.Join(dir, FileName) }

// openError explains an error of bolt.Open: another process holds the
// file, or the file is not a sound state file.
func openError(path string, err error) error {
	switch {
	case errors.Is(err, bolt.ErrTimeout):
		return fmt.Errorf("state %s: %w%s", path, ErrLocked, holder(filepath.Dir(path)))
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

// holder says which crawl holds the state in dir, from the snapshot it
// wrote when it started: "" when that cannot be told (no snapshot, or its
// process has ended: another reader holds the file for a moment).
func holder(dir string) string {
	sn, err := ReadSnapshot(dir)
	if err != nil {
		return ""
	}
	// The lock is this machine's: a snapshot of another machine's run, or
	// of a process that has ended, does not name the holder.
	host, _ := os.Hostname()
	c := sn.Current
	if c.Host != host || !Alive(c.PID) {
		return ""
	}
	age := time.Since(c.Started)
	since := ""
	if age >= 0 && age < 366*24*time.Hour {
		since = fmt.Sprintf(", started %s ago", age.Round(time.Second))
	}
	return fmt.Sprintf(": the %s run %s holds it (pid %d%s); wait for it to end, or stop it (SIGINT lets its pages in flight finish)",
		textsafe.Cut(c.Kind, 20), textsafe.Cut(c.ID, 80), c.PID, since)
}

// Alive says whether process pid runs on this machine.
func Alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil || pid <= 0 {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Open opens (creating if needed) the store in dir. If another process
// holds it, Open fails with ErrLocked after a short wait.
//
// A file damaged where opening reads it (its meta pages, its free-page
// list) is a *DamagedError, never a panic; damage found later, by the
// reads a crawl makes, is one too (see guard).
func Open(dir string) (*Store, error) { return open(dir, defaultTuning) }

func open(dir string, tune tuning) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("state dir %s: %w", dir, err)
	}
	path := filePath(dir)
	removeLeftovers(path)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		if err := create(path); err != nil {
			return nil, fmt.Errorf("state %s: create: %w", path, err)
		}
	}
	if info, err := os.Stat(path); err == nil && !info.Mode().IsRegular() {
		return nil, fmt.Errorf("state %s: not a regular file (%s)", path, fskind.Of(info.Mode()))
	} else if err == nil && info.Size() == 0 {
		return nil, &DamagedError{Path: path, Cause: "the file is empty"}
	}
	if err := upgradeOnce(path); err != nil {
		return nil, err
	}
	s, format, err := openFormat2(path, tune)
	if err != nil {
		return nil, err
	}
	db := s.db
	err = s.update(func(tx *bolt.Tx) error {
		switch format {
		case 0:
			if err := initNewFile(tx); err != nil {
				return err
			}
		case 2: // upgraded in place: the prints' buckets added
			if err := initPrints(tx); err != nil {
				return err
			}
			if err := tx.Bucket(bucketMeta).Put(keyFormat, []byte(strconv.Itoa(Format))); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		if w := meta.Get(keyWriter); w != nil {
			s.writer = string(w)
		} else {
			s.writer = newWriterID()
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
	if err := s.loadRecent(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// create makes a new state file at path whole or not at all: made and
// synced under a name of its own, then linked to path (a kill while bbolt
// writes a new file's first pages would leave an empty file, which no run
// could tell from a state cut to nothing). Two first runs at once: the
// second's link finds the first's file, and both open that one. A file
// system without hard links gets a rename instead.
func create(path string) error {
	// The process id (a leftover of an ended process is removed) and a
	// random part (two first runs of one process do not share the file).
	var rnd [4]byte
	rand.Read(rnd[:])
	tmp := fmt.Sprintf("%s.new-%d-%s", path, os.Getpid(), hex.EncodeToString(rnd[:]))
	os.Remove(tmp)
	defer os.Remove(tmp)
	// A whole format-2 file, its free-page list kept: Open finds nothing
	// to migrate or upgrade.
	db, err := bolt.Open(tmp, 0o644, &bolt.Options{Timeout: lockWait, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if err := initNewFile(tx); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keyFreelist, []byte("synced"))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	err = os.Link(tmp, path)
	switch {
	case errors.Is(err, fs.ErrExist):
		return nil // another process made it first
	case err != nil:
		if _, serr := os.Lstat(path); serr == nil {
			return nil
		}
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
	}
	return atomicfile.SyncDir(filepath.Dir(path))
}

// removeLeftovers removes what runs killed in create left: a file of
// their own name (a second link to the state, when the kill came after
// the link), of this machine's ended processes.
func removeLeftovers(path string) {
	ents, _ := os.ReadDir(filepath.Dir(path)) // not a glob: the directory's name may hold [ or *
	prefix := filepath.Base(path) + ".new-"
	for _, de := range ents {
		rest, ok := strings.CutPrefix(de.Name(), prefix)
		rest, _, _ = strings.Cut(rest, "-") // the pid, then the random part
		if pid, err := strconv.Atoi(rest); ok && err == nil && pid != os.Getpid() && !Alive(pid) {
			os.Remove(filepath.Join(filepath.Dir(path), de.Name()))
		}
	}
}

// openFormat2 opens the file for a crawl and returns its format: 0 for a
// new file, else 2. A format-1 file is migrated first; a later one is
// refused (*FormatError).
func openFormat2(path string, tune tuning) (*Store, int, error) {
	return openFormat2Try(path, tune, 0)
}

func openFormat2Try(path string, tune tuning, try int) (*Store, int, error) {
	s, err := openWritable(path)
	if err != nil {
		return nil, 0, err
	}
	s.tune = tune
	format, err := s.format()
	if errors.Is(err, errReplaced) && try < 3 {
		// Another process migrated the file while this one waited for
		// it: the name is the new file's now.
		s.db.Close()
		return openFormat2Try(path, tune, try+1)
	}
	if err == nil && format == 1 {
		// Migrated in place: a new file beside it, renamed over it.
		start := time.Now()
		before, _ := os.Stat(path)
		err = s.migrate()
		s.db.Close()
		if err != nil {
			return nil, 0, err
		}
		s2, format, err := openFormat2Try(path, tune, try+1)
		if err == nil {
			s2.migrated = Migration{From: 1, Took: time.Since(start)}
			if after, serr := os.Stat(path); serr == nil && before != nil {
				s2.migrated.BytesBefore, s2.migrated.BytesAfter = before.Size(), after.Size()
			}
		}
		return s2, format, err
	}
	if err != nil {
		s.db.Close()
		return nil, 0, err
	}
	return s, format, nil
}

// Migration says what Open migrated: nothing (From 0), or a file of
// format From, how long it took and the file's size before and after.
type Migration struct {
	From                    int
	Took                    time.Duration
	BytesBefore, BytesAfter int64
}

// Migrated is what Open migrated.
func (s *Store) Migrated() Migration { return s.migrated }

// allocStep is how much the file grows by at a time once it is past
// allocStep (below that, bbolt's memory map doubles and the file with it):
// bbolt's default, 16 MB, would be 80 bytes a paper at 200,000 papers; 1
// MiB made a state of 20,000 papers a 2 MiB file, 105 bytes a paper.
const allocStep = 256 << 10

// openWritable opens the file for a crawl: under guard, exclusively, with
// its free-page list read rather than rebuilt (see Open).
func openWritable(path string) (*Store, error) {
	// The free-page list is written at every commit (bbolt's default), so
	// opening reads it rather than rebuilding it by scanning the whole
	// file in a goroutine of bbolt's own, where damage would be a panic no
	// one can catch. It is loaded here, under guard.
	s, err := openBolt(path, &bolt.Options{Timeout: lockWait, FreelistType: bolt.FreelistMapType, PreLoadFreelist: true})
	if err != nil {
		return nil, err
	}
	s.db.AllocSize = allocStep
	return s, nil
}

// openBolt opens the bbolt file at path under guard: damage found by
// opening is a *DamagedError, another process holding it ErrLocked.
func openBolt(path string, opts *bolt.Options) (*Store, error) {
	s := &Store{path: path, tune: defaultTuning}
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
		var run uint32
		st, run, err = s.decodePage(v)
		st.RunID = runIDOf(tx, run)
		return err
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
			st, _, err := s.decodePage(v)
			if err != nil {
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
	// Held across the transaction: a merge empties memory only once the
	// entries are in the slots this transaction reads.
	s.memMu.RLock()
	defer s.memMu.RUnlock()
	err := s.view(func(tx *bolt.Tx) error {
		this, err := runNumber(tx, runID, false)
		if err != nil {
			return s.damage(err)
		}
		ks := s.setsOf(tx)
		for i, p := range ps {
			run, ok, pr, byID, err := s.lookupTx(ks, p)
			switch {
			case err != nil:
				return s.damage(err)
			case !ok:
				out[i].Delivery = ledger.NeverDelivered
				continue
			case this != 0 && run == this:
				out[i].Delivery = ledger.DeliveredThisRun
			default:
				out[i].Delivery = ledger.DeliveredBefore
			}
			out[i].Print, out[i].ByID = pr, byID
		}
		return nil
	})
	return out, err
}

// FirstRun tells whether a paper is known, by its id or its DOI, and which
// run first delivered it (its id, "" when the run that recorded it was not
// kept, as in a file migrated from one that had lost it).
func (s *Store) FirstRun(ctx context.Context, p ledger.Paper) (runID string, known bool, err error) {
	if err := ctx.Err(); err != nil {
		return "", false, err
	}
	if s.fileFormat == 1 {
		err = s.view(func(tx *bolt.Tx) error {
			runID, known = firstRunFormat1(tx, p)
			return nil
		})
		return runID, known, err
	}
	s.memMu.RLock()
	defer s.memMu.RUnlock()
	err = s.view(func(tx *bolt.Tx) error {
		run, ok, _, _, err := s.lookupTx(s.setsOf(tx), p)
		if err != nil {
			return s.damage(err)
		}
		known, runID = ok, runIDOf(tx, run)
		return nil
	})
	return runID, known, err
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
	s.logMu.Lock()
	defer s.logMu.Unlock()
	if s.mergeErr != nil {
		if s.mergeErr = s.maybeMerge(); s.mergeErr != nil {
			return nil, fmt.Errorf("state %s: merging the recent papers: %w", s.path, s.mergeErr)
		}
	}
	var w *paperWriter
	err = s.update(func(tx *bolt.Tx) error {
		w = s.newWriter(tx)
		for i, c := range g.Pages {
			n, err := s.commitTx(tx, w, c)
			if err != nil {
				return err
			}
			newPapers[i] = n
		}
		if err := w.flush(); err != nil {
			return err
		}
		for j, ws := range g.Walks {
			if err := setWalkTx(tx, j, ws); err != nil {
				return err
			}
		}
		if g.SinkToken != nil {
			return tx.Bucket(bucketMeta).Put(keySinkToken, g.SinkToken)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.absorb(w.fresh, w.freshPrints)
	s.maybeReleaseMap()
	// The group is committed whatever a merge does: its error is the
	// next commit's (the store is then damaged, or the disk full).
	s.mergeErr = s.maybeMerge()
	return newPapers, nil
}

// maybeReleaseMap releases the memory map when tune.releaseEvery bytes of pages
// were written since the last release. (Pages that look-ups read stay
// mapped: each key's look-up reads a page of slots at random, and faulting
// them in again after every release costs more CPU than the clean page
// cache they hold; the kernel reclaims them when it needs the memory.)
func (s *Store) maybeReleaseMap() {
	stats := s.db.Stats()
	mark := stats.TxStats.GetPageAlloc()
	last := s.released.Load()
	if mark-last >= s.tune.releaseEvery && s.released.CompareAndSwap(last, mark) {
		releaseMap(s.db)
	}
}

// paperWriter records papers within one write transaction: the known and
// print slots, the run numbers it has looked up, the count of papers it
// added, and the entries it added (to the recent logs, or straight into
// the slots when it belongs to no store: a migration).
type paperWriter struct {
	tx          *bolt.Tx
	sets        sets
	runs        map[string]uint32
	added       uint64
	s           *Store
	fresh       []entry
	freshPrints []printEntry
	pending     map[uint64]found // keys this writer added, as findKey finds them
}

// newWriter makes a writer that adds to the recent logs; the caller holds
// s.logMu.
func (s *Store) newWriter(tx *bolt.Tx) *paperWriter {
	w := newWriter(tx)
	w.s = s
	return w
}

// newWriter makes a writer that adds straight into the slots (merged in
// hash order when it is flushed).
func newWriter(tx *bolt.Tx) *paperWriter {
	ks := sets{known: newKnownSet(tx.Bucket(bucketKnown)), runs: runsNumbered(tx)}
	if b := tx.Bucket(bucketPrints); b != nil {
		ks.prints = newPrintSet(b)
	}
	return &paperWriter{tx: tx, sets: ks, runs: map[string]uint32{}, pending: map[uint64]found{}}
}

func (w *paperWriter) run(id string) (uint32, error) {
	if n, ok := w.runs[id]; ok {
		return n, nil
	}
	n, err := runNumber(w.tx, id, true)
	if err == nil {
		w.runs[id] = n
		w.sets.runs = max(w.sets.runs, n)
	}
	return n, err
}

// find is what the writer knows of key h: what it added, else what the
// store has.
func (w *paperWriter) find(h uint64) (found, error) {
	if f, ok := w.pending[h]; ok {
		return f, nil
	}
	if w.s != nil {
		return w.s.findKey(w.sets, h)
	}
	if w.sets.prints.b != nil {
		e, ok, err := w.sets.prints.getPrint(h)
		if err != nil || ok {
			return found{run: e.run, ok: ok, hasPrint: ok, print: e.p}, err
		}
	}
	r, ok, err := w.sets.known.get(h)
	return found{run: r, ok: ok}, err
}

// add records a paper as known, first delivered by run unless it was
// known already by its id or its DOI; isNew says it was not. A key of it
// not yet recorded (its DOI, first seen now) is recorded either way. A
// paper with a print has it recorded under its primary key (a new entry,
// or in place of the print it had, keeping the key's first run), and
// under its DOI's when that had a print (its id changed).
func (w *paperWriter) add(p ledger.Paper, run uint32) (isNew bool, err error) {
	hs, n := paperHashes(p)
	if n == 0 {
		return false, nil
	}
	var fs [2]found
	isNew = true
	for i, h := range hs[:n] {
		if fs[i], err = w.find(h); err != nil {
			return false, err
		}
		isNew = isNew && !fs[i].ok
	}
	for i, h := range hs[:n] {
		keyRun := run
		if fs[i].ok {
			keyRun = fs[i].run
		}
		switch {
		case w.sets.prints.b != nil && !p.Print.IsZero() && (i == 0 || fs[i].hasPrint):
			w.freshPrints = append(w.freshPrints, printEntry{h, keyRun, p.Print})
			w.pending[h] = found{run: keyRun, ok: true, hasPrint: true, print: p.Print}
		case !fs[i].ok:
			w.fresh = append(w.fresh, entry{h, keyRun})
			w.pending[h] = found{run: keyRun, ok: true}
		}
	}
	if isNew {
		w.added++
	}
	return isNew, nil
}

// flush adds the papers added to the file's count, and the new entries to
// the recent log (or into the slots).
func (w *paperWriter) flush() error {
	if w.s == nil {
		slices.SortFunc(w.fresh, byHash[entry])
		if err := w.sets.known.merge(w.fresh); err != nil {
			return err
		}
		if len(w.freshPrints) > 0 {
			slices.Reverse(w.freshPrints) // the last print of a hash is kept
			slices.SortStableFunc(w.freshPrints, byHash[printEntry])
			if err := mergeSlots(w.sets.prints, slices.CompactFunc(w.freshPrints, sameHash[printEntry]), true); err != nil {
				return err
			}
		}
	} else if err := appendRecent(w.tx, w.fresh); err != nil {
		return err
	} else if err := appendRecentPrints(w.tx, w.freshPrints); err != nil {
		return err
	}
	if w.added == 0 {
		return nil
	}
	meta := w.tx.Bucket(bucketMeta)
	var n uint64
	if v := meta.Get(keyPaperCount); len(v) == 8 {
		n = binary.BigEndian.Uint64(v)
	}
	w.added, n = 0, n+w.added
	return meta.Put(keyPaperCount, binary.BigEndian.AppendUint64(nil, n))
}

func (s *Store) commitTx(tx *bolt.Tx, w *paperWriter, c ledger.Page) (newPapers int, err error) {
	run, err := w.run(c.RunID)
	if err != nil {
		return 0, err
	}
	for _, p := range c.Papers {
		isNew, err := w.add(p, run)
		if err != nil {
			return 0, s.damage(err)
		}
		if isNew {
			newPapers++
		}
	}
	if c.PapersOnly {
		return newPapers, nil
	}
	if err := addTally(tx, run, c.Key.Journal, Tally{PagesDone: 1, PapersNew: int64(newPapers), PapersKnown: int64(max(c.OnPage-newPapers, 0)), PapersUpdated: int64(c.Updated)}); err != nil {
		return 0, err
	}
	st := PageStatus{State: PageDone, Papers: c.OnPage, NewPapers: newPapers, UpdatedAt: c.At.UTC()}
	pages := tx.Bucket(bucketPages)
	pages.FillPercent = pagesFill
	key := pageKeyBytes(c.Key)
	if prev := pages.Get(key); prev != nil {
		if old, _, err := s.decodePage(prev); err == nil {
			st.Attempts = old.Attempts
		}
	}
	st.Attempts++
	return newPapers, pages.Put(key, encodePage(st, run))
}

// pagesFill is the pages bucket's fill percent: pages are committed in
// about the order of their keys, so pages are filled almost full rather
// than split half way (which would leave them half empty).
const pagesFill = 0.95

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
	s.logMu.Lock()
	defer s.logMu.Unlock()
	var w *paperWriter
	err = s.update(func(tx *bolt.Tx) error {
		newPapers = 0
		w = s.newWriter(tx)
		for _, p := range papers {
			run, err := w.run(p.RunID)
			if err != nil {
				return err
			}
			isNew, err := w.add(p.Paper, run)
			if err != nil {
				return s.damage(err)
			}
			if isNew {
				newPapers++
			}
		}
		return w.flush()
	})
	if err != nil {
		return 0, err
	}
	s.absorb(w.fresh, w.freshPrints)
	return newPapers, s.maybeMerge()
}

// FailPage records a failed attempt at a page; a later run retries it.
func (s *Store) FailPage(ctx context.Context, k PageKey, runID string, cause error, at time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketPages)
		b.FillPercent = pagesFill
		var st PageStatus
		var prevRun uint32
		if prev := b.Get(pageKeyBytes(k)); prev != nil {
			var err error
			if st, prevRun, err = s.decodePage(prev); err != nil {
				return err
			}
		}
		run, err := runNumber(tx, runID, true)
		if err != nil {
			return err
		}
		if st.State != PageFailed || prevRun != run { // a page fails once a run, however many tries
			if err := addTally(tx, run, k.Journal, Tally{PagesFailed: 1}); err != nil {
				return err
			}
		}
		st.State, st.Attempts, st.UpdatedAt = PageFailed, st.Attempts+1, at.UTC()
		if cause != nil {
			st.LastError = cause.Error()
		}
		return b.Put(pageKeyBytes(k), encodePage(st, run))
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

// newWriterID is a random (version 4) UUID naming a state as a sink's
// writer. It is made here, not with the uuid package, whose process-wide
// random pool a WARC recorder in the same process switches on.
func newWriterID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
