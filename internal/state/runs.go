package state

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/litcrawl/litcrawl/internal/fskind"

	bolt "go.etcd.io/bbolt"

	"github.com/litcrawl/litcrawl/internal/atomicfile"
	"github.com/litcrawl/litcrawl/internal/ledger"
)

var (
	_ ledger.WalkStates = (*Store)(nil)
	_ ledger.Emptiness  = (*Store)(nil)
)

// Run is one entry of the run history. A run is recorded when it starts
// and again when it ends; one without Finished was killed before its end
// (or, in a snapshot, is the run under way).
type Run struct {
	ID       string          `json:"id"`
	Kind     string          `json:"kind"` // backfill, nightly, rebuild
	Started  time.Time       `json:"started"`
	Finished time.Time       `json:"finished,omitzero"`
	Journals []int64         `json:"journals,omitempty"`
	PID      int             `json:"pid,omitempty"`  // the process that ran it
	Host     string          `json:"host,omitempty"` // the machine it ran on
	Summary  json.RawMessage `json:"summary,omitempty"`
}

// PutRun records or updates a run.
func (s *Store) PutRun(r Run) error {
	v, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return s.update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketRuns).Put([]byte(r.ID), v)
	})
}

// Runs lists the run history in id order (ids sort by start time).
func (s *Store) Runs() ([]Run, error) {
	var out []Run
	err := s.view(func(tx *bolt.Tx) error {
		if s.fileFormat != 1 {
			// A format-2 file has had every bucket since it was made: one
			// missing is a damaged branch page, not an empty history.
			for _, name := range [][]byte{bucketPages, bucketMeta, bucketRuns, bucketRunIDs, bucketRunNums, bucketWalks, bucketRecent} {
				if tx.Bucket(name) == nil {
					return &DamagedError{Path: s.path, Cause: fmt.Sprintf("the %s bucket is missing", name)}
				}
			}
		}
		b := tx.Bucket(bucketRuns)
		if b == nil {
			return nil
		}
		return b.ForEach(func(_, v []byte) error {
			var r Run
			if err := s.decode(v, &r); err != nil {
				return err
			}
			out = append(out, r)
			return nil
		})
	})
	return out, err
}

// ErrNoState means the state directory holds no state file.
var ErrNoState = errors.New("no state here")

// Stat checks, without opening it, that dir holds a state file that can be
// read: there (else ErrNoState), a regular file (a FIFO would block the
// reader for ever), and not empty (a *DamagedError).
func Stat(dir string) error {
	path := filePath(dir)
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("state %s: %w (no crawl has run with this state directory)", path, ErrNoState)
	case err != nil:
		return fmt.Errorf("state %s: %w", path, err)
	case !info.Mode().IsRegular():
		return fmt.Errorf("state %s: not a regular file (%s)", path, fskind.Of(info.Mode()))
	case info.Size() == 0:
		return &DamagedError{Path: path, Cause: "the file is empty"}
	}
	return nil
}

// OpenReadOnly opens the store in dir to read it, next to other readers.
// It never creates anything. If a crawl holds the store, it fails with
// ErrLocked after a short wait (see ReadSnapshot for what can be shown
// then); if there is no store, with ErrNoState.
func OpenReadOnly(dir string) (*Store, error) {
	path := filePath(dir)
	if err := Stat(dir); err != nil {
		return nil, err
	}
	// A crawl holds its lock for its whole life: a reader need not wait
	// long to know (and then reads the snapshot).
	s, err := openBolt(path, &bolt.Options{Timeout: readLockWait, ReadOnly: true})
	if err != nil {
		return nil, err
	}
	// A format-1 file reads as it is (its runs are kept the same way); a
	// later format is refused.
	if s.fileFormat, err = s.format(); err != nil {
		s.Close()
		return nil, err
	}
	if s.fileFormat >= 2 {
		if err := s.loadRecent(); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// readLockWait is how long a reader waits for a crawl to let go.
const readLockWait = 300 * time.Millisecond

// SnapshotName is the file in the state directory that a crawl writes when
// it starts: the run history as it was then, with the run under way, for
// readers while the crawl holds the store.
const SnapshotName = "runs.json"

// Snapshot is the run history a crawl wrote when it started.
type Snapshot struct {
	// Current is the run that wrote it (under way, unless it has ended
	// since: then the store is free and holds its end).
	Current Run   `json:"current"`
	Runs    []Run `json:"runs"` // the history, Current included
	// Tallies are the counts committed by the runs that ended without a
	// summary (killed), by run id and journal (see Store.Tallies).
	Tallies map[string]map[int64]Tally `json:"tallies,omitempty"`
}

// SnapshotRuns bounds the runs a snapshot holds: the newest ones, so that
// writing it stays cheap however long the history.
const SnapshotRuns = 1000

// MaxSnapshotBytes bounds a snapshot read back.
const MaxSnapshotBytes = 64 << 20

// WriteSnapshot writes the history (its newest SnapshotRuns runs) with
// current under way to the state directory (atomically: a temporary file
// renamed over the last one).
func (s *Store) WriteSnapshot(current Run) error {
	runs, err := s.Runs()
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(runs, func(r Run) bool { return r.ID == current.ID }) {
		runs = append(runs, current) // the run under way, recorded after its snapshot
	}
	if len(runs) > SnapshotRuns {
		runs = runs[len(runs)-SnapshotRuns:]
	}
	sn := Snapshot{Current: current, Runs: runs}
	if sn.Tallies, err = s.killedTallies(runs); err != nil {
		return err
	}
	data, err := json.Marshal(sn)
	if err != nil {
		return err
	}
	err = atomicfile.Write(filepath.Join(filepath.Dir(s.path), SnapshotName), func(w *bufio.Writer) error {
		_, err := w.Write(data)
		return err
	})
	if err != nil {
		return fmt.Errorf("run history snapshot: %w", err)
	}
	return nil
}

// killedTallies are the tallies of the runs that have no summary.
func (s *Store) killedTallies(runs []Run) (map[string]map[int64]Tally, error) {
	all, err := s.Tallies()
	if err != nil {
		return nil, err
	}
	out := map[string]map[int64]Tally{}
	for _, r := range runs {
		if len(r.Summary) == 0 && all[r.ID] != nil {
			out[r.ID] = all[r.ID]
		}
	}
	return out, nil
}

// ReadSnapshot reads the snapshot the last crawl wrote in dir when it
// started.
func ReadSnapshot(dir string) (Snapshot, error) {
	var sn Snapshot
	path := filepath.Join(dir, SnapshotName)
	// Only the regular file a crawl wrote: not a FIFO (it would block),
	// a device or a link to one, nor a file too large to be one.
	info, err := os.Lstat(path)
	switch {
	case err != nil:
		return sn, err
	case !info.Mode().IsRegular():
		return sn, fmt.Errorf("%s: not a regular file (%s)", path, fskind.Of(info.Mode()))
	case info.Size() > MaxSnapshotBytes:
		return sn, fmt.Errorf("%s: %d bytes, more than a snapshot holds", path, info.Size())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return sn, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSnapshotBytes+1))
	if err != nil {
		return sn, err
	}
	if len(data) > MaxSnapshotBytes {
		return sn, fmt.Errorf("%s: more than a snapshot holds", path)
	}
	if err := json.Unmarshal(data, &sn); err != nil {
		// The tallies are counts only: a snapshot whose tallies do not
		// read is read without them.
		var without struct {
			Snapshot
			Tallies json.RawMessage `json:"tallies"`
		}
		if json.Unmarshal(data, &without) != nil {
			return sn, fmt.Errorf("%s: %w", path, err)
		}
		sn = without.Snapshot
		sn.Tallies = nil
	}
	if sn.Current.ID == "" || sn.Current.PID <= 0 {
		return sn, fmt.Errorf("%s: it names no run and process", path)
	}
	return sn, nil
}

func journalKey(j int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(j)) }

// WalkState is the journal's nightly walk state (see
// ledger.WalkStates); a value written by an earlier version (its marks
// alone) is read as a state with those marks.
func (s *Store) WalkState(ctx context.Context, journal int64) (ledger.WalkState, error) {
	if err := ctx.Err(); err != nil {
		return ledger.WalkState{}, err
	}
	var ws ledger.WalkState
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketWalks)
		if b == nil {
			return nil
		}
		if v := b.Get(journalKey(journal)); v != nil {
			var err error
			if ws, err = ledger.DecodeWalkState(v); err == nil {
				err = ledger.CheckWalkState("walk state", ws)
			}
			if err != nil {
				return &DamagedError{Path: s.path, Cause: fmt.Sprintf("journal %d: a stored value is not what was written: %v", journal, err)}
			}
		}
		return nil
	})
	return ws, err
}

// SetWalkState stores the journal's walk state; the zero state clears
// it.
func (s *Store) SetWalkState(ctx context.Context, journal int64, ws ledger.WalkState) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.update(func(tx *bolt.Tx) error { return setWalkTx(tx, journal, ws) })
}

// setWalkTx sets the journal's walk state in tx (SetWalkState, and
// Commit's Group.Walks).
func setWalkTx(tx *bolt.Tx, journal int64, ws ledger.WalkState) error {
	b, err := tx.CreateBucketIfNotExists(bucketWalks)
	if err != nil {
		return err
	}
	if ws.IsZero() {
		return b.Delete(journalKey(journal))
	}
	v, err := ledger.EncodeWalkState(ws)
	if err != nil {
		return err
	}
	return b.Put(journalKey(journal), v)
}

// Empty says whether the state holds nothing yet: no paper known, no page
// done (ledger.Emptiness).
func (s *Store) Empty(ctx context.Context) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	empty := true
	err := s.view(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(keyPaperCount); len(v) == 8 && binary.BigEndian.Uint64(v) > 0 {
			empty = false
			return nil
		}
		if b := tx.Bucket(bucketPages); b != nil {
			if k, _ := b.Cursor().First(); k != nil {
				empty = false
			}
		}
		return nil
	})
	return empty, err
}
