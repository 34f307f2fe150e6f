package state

import (
	"encoding/binary"

	bolt "go.etcd.io/bbolt"
)

// The tally counts, per run and journal, what each run committed, in the
// same transaction as the pages it counts: pages done and failed, papers
// recorded for the first time, papers known, and papers delivered again as
// their next revision (format 3: a value of an earlier file has none). A run ends by writing its
// summary into the history; a run killed before its end (kill -9, power
// loss) has none, and its counts are read back from here ("recovered").
//
//	run number (4) | journal (8) → done | failed | new | known | updated (8 each, big-endian)
//
// The bucket is made by the first commit that needs it: files written
// before it have none, and their killed runs stay without counts.
var bucketTally = []byte("run_tally")

// tallySize is a value's size; tallySize2 a format-2 file's (no updated).
const (
	tallySize  = 40
	tallySize2 = 32
)

// Tally is what one run committed for one journal.
type Tally struct {
	PagesDone   int64 `json:"pages_done"`
	PagesFailed int64 `json:"pages_failed"`
	PapersNew   int64 `json:"papers_new"`
	PapersKnown int64 `json:"papers_known"`
	// PapersUpdated are known papers delivered as their next revision.
	PapersUpdated int64 `json:"papers_updated,omitempty"`
}

func tallyKey(run uint32, journal int64) []byte {
	k := binary.BigEndian.AppendUint32(make([]byte, 0, 12), run)
	return binary.BigEndian.AppendUint64(k, uint64(journal))
}

// addTally adds d to the run's tally for the journal.
func addTally(tx *bolt.Tx, run uint32, journal int64, d Tally) error {
	if run == 0 {
		return nil
	}
	b, err := tx.CreateBucketIfNotExists(bucketTally)
	if err != nil {
		return err
	}
	k := tallyKey(run, journal)
	var t Tally
	if v := b.Get(k); len(v) == tallySize || len(v) == tallySize2 {
		t = decodeTally(v)
	}
	t.PagesDone += d.PagesDone
	t.PagesFailed = max(t.PagesFailed+d.PagesFailed, 0)
	t.PapersNew += d.PapersNew
	t.PapersKnown += d.PapersKnown
	t.PapersUpdated += d.PapersUpdated
	v := make([]byte, 0, tallySize)
	for _, n := range []int64{t.PagesDone, t.PagesFailed, t.PapersNew, t.PapersKnown, t.PapersUpdated} {
		v = binary.BigEndian.AppendUint64(v, uint64(n))
	}
	return b.Put(k, v)
}

func decodeTally(v []byte) Tally {
	n := func(i int) int64 { return int64(binary.BigEndian.Uint64(v[8*i:])) }
	t := Tally{PagesDone: n(0), PagesFailed: n(1), PapersNew: n(2), PapersKnown: n(3)}
	if len(v) >= tallySize {
		t.PapersUpdated = n(4)
	}
	return t
}

// Tallies are the counts each run committed, by run id and journal. A
// file written before tallies were kept has none; an entry not as
// written (damage) is left out.
func (s *Store) Tallies() (map[string]map[int64]Tally, error) {
	out := map[string]map[int64]Tally{}
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTally)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			if len(k) != 12 || len(v) != tallySize && len(v) != tallySize2 {
				return nil // counts only, for killed runs: one not as written is left out, never a reason to stop
			}
			id := runIDOf(tx, binary.BigEndian.Uint32(k))
			if id == "" {
				return nil // a run no longer numbered: nothing to show it by
			}
			if out[id] == nil {
				out[id] = map[int64]Tally{}
			}
			out[id][int64(binary.BigEndian.Uint64(k[4:]))] = decodeTally(v)
			return nil
		})
	})
	return out, err
}
