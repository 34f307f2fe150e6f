package state

import (
	"errors"
	"testing"
	"time"
)

// A page status read back from the file is what was written, and bytes
// that are not one are damage, never a panic.
func FuzzDecodePage(f *testing.F) {
	s := &Store{path: "crawl.db"}
	f.Add(encodePage(PageStatus{State: PageDone, Attempts: 1, Papers: 20, NewPapers: 3, UpdatedAt: time.Unix(1764734400, 5)}, 7))
	f.Add(encodePage(PageStatus{State: PageFailed, Attempts: 4, LastError: "HTTP 503"}, 1<<24-1))
	f.Add([]byte{1})
	f.Add([]byte{3, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, v []byte) {
		st, run, err := s.decodePage(v)
		if err != nil {
			var d *DamagedError
			if !errors.As(err, &d) {
				t.Fatalf("not damage: %v", err)
			}
			return
		}
		again, run2, err := s.decodePage(encodePage(st, run))
		if err != nil || again != st || run2 != run {
			t.Fatalf("%+v (run %d) read back as %+v (run %d), %v", st, run, again, run2, err)
		}
	})
}
