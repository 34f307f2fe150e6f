package atom

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strconv"

	"github.com/litcrawl/litcrawl/internal/atomicfile"
)

// stateName is the file in the feed directory that holds what the feeds
// show (the feeds are made from it) and the last writes' undo records.
const stateName = ".litcrawl-atom.json"

// maxStateBytes bounds the state file read back: 1,000 feeds of 10,000
// entries would be larger, but no reader fetches such feeds.
const maxStateBytes = 1 << 30

// maxUndo is how many writes after a commit can be taken back (one in a
// crawl: a page's write, then its commit; a batch that a record of it made
// the sink refuse is written in parts).
const maxUndo = 32

// feed is one journal's feed: its name and entries, newest first.
type feed struct {
	Name    string   `json:"name,omitempty"`
	Entries []*entry `json:"entries"`
}

// undo takes write Gen back: per journal, the ids it added and the
// entries it replaced or pushed out.
type undo struct {
	Gen   uint64              `json:"gen"`
	Feeds map[string]undoFeed `json:"feeds"`
}

type undoFeed struct {
	New     bool     `json:"new,omitempty"` // the write made the feed
	Name    string   `json:"name,omitempty"`
	Added   []string `json:"added,omitempty"`
	Removed []*entry `json:"removed,omitempty"`
}

// state is the state file: the write count (a token names it), the feeds,
// and the undo records of the last writes, oldest first.
type state struct {
	Version int              `json:"version"`
	Gen     uint64           `json:"gen"`
	Feeds   map[string]*feed `json:"feeds"` // by journal id, in decimal
	Undo    []undo           `json:"undo,omitempty"`
}

// load reads the state in dir; a directory without one has an empty state.
func load(dir string) (*state, error) {
	path := dir + string(os.PathSeparator) + stateName
	st := &state{Version: 1, Feeds: map[string]*feed{}}
	info, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return st, nil
	case err != nil:
		return nil, err
	case !info.Mode().IsRegular():
		return nil, fmt.Errorf("%s: not a regular file", path)
	case info.Size() > maxStateBytes:
		return nil, fmt.Errorf("%s: %d bytes, more than the feeds' state holds", path, info.Size())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, st); err != nil {
		return nil, fmt.Errorf("%s: not the feeds' state (%v): move it away to start the feeds anew", path, err)
	}
	if st.Version != 1 {
		return nil, fmt.Errorf("%s: version %d, written by a newer version of crawl", path, st.Version)
	}
	if st.Feeds == nil {
		st.Feeds = map[string]*feed{}
	}
	for k, f := range st.Feeds {
		if j, err := strconv.ParseInt(k, 10, 64); err != nil || j <= 0 || f == nil || strconv.FormatInt(j, 10) != k {
			return nil, fmt.Errorf("%s: feed %q is not a journal's: move the file away to start the feeds anew", path, k)
		}
		f.Entries = slices.DeleteFunc(f.Entries, func(e *entry) bool { return e == nil || e.ID == "" })
	}
	return st, nil
}

// save writes the state durably (a temporary file renamed over the last
// one). Entries' lines are rendered once and reused.
func (st *state) save(dir string) error {
	return atomicfile.Write(dir+string(os.PathSeparator)+stateName, func(w *bufio.Writer) error {
		fmt.Fprintf(w, `{"version":%d,"gen":%d,"feeds":{`, st.Version, st.Gen)
		for i, k := range slices.Sorted(maps.Keys(st.Feeds)) {
			f := st.Feeds[k]
			if i > 0 {
				w.WriteByte(',')
			}
			name, _ := json.Marshal(f.Name)
			fmt.Fprintf(w, "\n%q:{\"name\":%s,\"entries\":[", k, name)
			for n, e := range f.Entries {
				e.render()
				if n > 0 {
					w.WriteByte(',')
				}
				w.WriteString("\n")
				w.Write(e.line)
			}
			w.WriteString("]}")
		}
		w.WriteString("},\n\"undo\":[")
		for i, u := range st.Undo {
			if i > 0 {
				w.WriteByte(',')
			}
			fmt.Fprintf(w, "\n{\"gen\":%d,\"feeds\":{", u.Gen)
			for n, k := range slices.Sorted(maps.Keys(u.Feeds)) {
				uf := u.Feeds[k]
				if n > 0 {
					w.WriteByte(',')
				}
				head, err := json.Marshal(undoFeed{New: uf.New, Name: uf.Name, Added: uf.Added})
				if err != nil {
					return err
				}
				// The head's fields, then the removed entries' lines.
				fmt.Fprintf(w, "%q:%s,\"removed\":[", k, head[:len(head)-1])
				for m, e := range uf.Removed {
					e.render()
					if m > 0 {
						w.WriteByte(',')
					}
					w.Write(e.line)
				}
				w.WriteString("]}")
			}
			w.WriteString("}}")
		}
		_, err := io.WriteString(w, "]}\n")
		return err
	})
}
