package atom

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/litcrawl/litcrawl/internal/atomicfile"
)

// stateDir is the directory in the feed directory that holds, per feed, a
// file of what the feed shows (the feed is made from it) and the undo
// records of its last writes: a write rewrites the files of the feeds it
// changes only.
const stateDir = ".litcrawl-atom"

// maxStateBytes bounds a feed's state file, written and read back: a
// write that would make it larger is refused (its records are
// quarantined), so the sink never writes a state it will not read.
const maxStateBytes int64 = 512 << 20

// maxUndo is how many writes of a feed after a commit can be taken back
// (one in a crawl: a page's write, then its commit; a batch that a record
// of it made the sink refuse is written in parts).
const maxUndo = 32

// errStateTooBig: a feed's state would pass maxStateBytes.
var errStateTooBig = errors.New("the feed's state would pass its bound")

// feed is one journal's feed: its name, its entries newest first, and
// the undo records of its last writes, oldest first.
type feed struct {
	Name string `json:"name,omitempty"`
	// Gen is the write that last changed the feed (writes are counted
	// across the directory's feeds: the sink's token names the count).
	Gen uint64 `json:"gen"`
	// Epoch counts the crawls that brought the feed papers from the first
	// page of the listing: the papers of one date are newest first by
	// it. EpochAt is when the epoch began: the time of its undated papers.
	Epoch   int      `json:"epoch"`
	EpochAt string   `json:"epoch_at,omitempty"`
	Entries []*entry `json:"entries"`
	Undo    []undo   `json:"undo,omitempty"`
}

// undo takes write Gen of a feed back: the feed as it was before (its
// name, epoch and last write), the ids the write added and the entries it
// replaced or pushed out. Writer names the crawl state the write was for:
// a crawl takes back its own writes only.
type undo struct {
	Gen     uint64   `json:"gen"`
	Writer  string   `json:"writer,omitempty"`
	New     bool     `json:"new,omitempty"` // the write made the feed
	PrevGen uint64   `json:"prev_gen,omitempty"`
	Name    string   `json:"name,omitempty"`
	Epoch   int      `json:"epoch,omitempty"`
	EpochAt string   `json:"epoch_at,omitempty"`
	Added   []string `json:"added,omitempty"`
	Removed []*entry `json:"removed,omitempty"`
}

// statePath is the state file of feed k in dir.
func statePath(dir, k string) string { return filepath.Join(dir, stateDir, k+".json") }

// journalKey reports whether k names a journal's feed: a positive
// decimal id, as written.
func journalKey(k string) bool {
	j, err := strconv.ParseInt(k, 10, 64)
	return err == nil && j > 0 && strconv.FormatInt(j, 10) == k
}

// loadFeeds reads the feeds' state in dir; a directory without one has no
// feed. A file that is not a feed's state is an error that says what to do.
func loadFeeds(dir string) (map[string]*feed, error) {
	feeds := map[string]*feed{}
	sd := filepath.Join(dir, stateDir)
	ents, err := os.ReadDir(sd)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return feeds, nil
	case err != nil:
		return nil, err
	}
	for _, de := range ents {
		name := de.Name()
		k, ok := strings.CutSuffix(name, ".json")
		if !ok || !journalKey(k) {
			continue // a temporary file left by a crash, or not ours
		}
		f, err := loadFeed(filepath.Join(sd, name), k)
		if err != nil {
			return nil, err
		}
		feeds[k] = f
	}
	return feeds, nil
}

func loadFeed(path, k string) (*feed, error) {
	info, err := os.Lstat(path)
	switch {
	case err != nil:
		return nil, err
	case !info.Mode().IsRegular():
		return nil, fmt.Errorf("%s: not a regular file", path)
	case info.Size() > maxStateBytes:
		return nil, fmt.Errorf("%s: %d bytes, more than a feed's state holds (%d)", path, info.Size(), maxStateBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f struct {
		Version int    `json:"version"`
		Journal string `json:"journal"`
		feed
	}
	if err := json.Unmarshal(data, &f); err != nil || f.Journal != k {
		return nil, fmt.Errorf("%s: not journal %s's feed state (%v): move it away to start that feed anew", path, k, err)
	}
	if f.Version != 2 {
		return nil, fmt.Errorf("%s: version %d, written by another version of crawl", path, f.Version)
	}
	fd := &f.feed
	fd.Name = clean(fd.Name, true, maxLineRunes) // (as a record's journal name is)
	fd.Entries = validEntries(fd.Entries)
	for i := range fd.Undo {
		fd.Undo[i].Name = clean(fd.Undo[i].Name, true, maxLineRunes)
		fd.Undo[i].Removed = validEntries(fd.Undo[i].Removed)
	}
	if _, err := time.Parse(time.RFC3339, fd.EpochAt); err != nil {
		fd.EpochAt = ""
	}
	return fd, nil
}

// validEntries are es without the entries a feed cannot show (no id, a
// time that is not RFC 3339) and without a second entry of one paper,
// their texts and links checked as a record's are (checkTexts): a state
// file edited by hand or damaged never makes an invalid or unsafe feed.
func validEntries(es []*entry) []*entry {
	seen := map[string]bool{}
	return slices.DeleteFunc(es, func(e *entry) bool {
		if e == nil || !validID(e.ID) || seen[e.ID] {
			return true
		}
		seen[e.ID] = true
		if _, err := time.Parse(time.RFC3339, e.Updated); err != nil {
			return true
		}
		if _, err := time.Parse(time.RFC3339, e.Published); e.Published != "" && err != nil {
			e.Published = ""
		}
		if _, err := time.Parse(time.RFC3339, e.Revised); e.Revised != "" && err != nil {
			e.Revised = ""
		}
		e.checkTexts()
		return false
	})
}

// save writes feed k's state durably (a temporary file renamed over the
// last one). Entries' lines are rendered once and reused. A state larger
// than max bytes (maxStateBytes, a test's less) is not written:
// errStateTooBig.
func (f *feed) save(dir, k string, max int64) error {
	if err := os.MkdirAll(filepath.Join(dir, stateDir), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(statePath(dir, k), func(bw *bufio.Writer) error {
		w := &boundedWriter{w: bw, left: max}
		name, _ := json.Marshal(f.Name)
		epochAt, _ := json.Marshal(f.EpochAt)
		fmt.Fprintf(w, `{"version":2,"journal":%q,"gen":%d,"name":%s,"epoch":%d,"epoch_at":%s,"entries":[`, k, f.Gen, name, f.Epoch, epochAt)
		writeLines(w, f.Entries)
		w.WriteString("],\n\"undo\":[")
		for i, u := range f.Undo {
			if i > 0 {
				w.WriteString(",")
			}
			head, err := json.Marshal(undo{Gen: u.Gen, Writer: u.Writer, New: u.New, PrevGen: u.PrevGen, Name: u.Name,
				Epoch: u.Epoch, EpochAt: u.EpochAt, Added: u.Added})
			if err != nil {
				return err
			}
			// The head's fields, then the removed entries' lines.
			fmt.Fprintf(w, "\n%s,\"removed\":[", head[:len(head)-1])
			writeLines(w, u.Removed)
			w.WriteString("]}")
		}
		w.WriteString("]}\n")
		return w.err
	})
}

func writeLines(w *boundedWriter, es []*entry) {
	for i, e := range es {
		e.render()
		if i > 0 {
			w.WriteString(",")
		}
		w.WriteString("\n")
		w.Write(e.line)
	}
}

// boundedWriter writes to w until left bytes are written; past them it
// fails with errStateTooBig, and keeps the first error.
type boundedWriter struct {
	w    *bufio.Writer
	left int64
	err  error
}

func (b *boundedWriter) Write(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if int64(len(p)) > b.left {
		b.err = errStateTooBig
		return 0, b.err
	}
	b.left -= int64(len(p))
	n, err := b.w.Write(p)
	if err != nil {
		b.err = err
	}
	return n, err
}

func (b *boundedWriter) WriteString(s string) { io.WriteString(b, s) }
