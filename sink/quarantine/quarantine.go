// Package quarantine keeps the records sinks refuse for their content
// (sink.ErrRefused) in a JSON-lines file beside the crawl state, one
// sink.Refusal a line: the sink, the reason, when, and the record. A crawl
// delivers the rest of the batch and commits the page; crawl quarantine
// list shows what is kept, and crawl quarantine retry delivers it again.
package quarantine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/litcrawl/litcrawl/internal/fskind"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/litcrawl/litcrawl/internal/atomicfile"
	"github.com/litcrawl/litcrawl/sink"
)

// Name is the quarantine's file name in a state directory.
const Name = "quarantine.jsonl"

// MaxBytes bounds the file: a Put that would grow it past this fails (the
// batch is then not delivered, and the run stops), so that a site serving
// refused records without end cannot fill the disk.
const MaxBytes = 256 << 20

// File is a quarantine file. Its Put is safe for concurrent use, also by
// several processes (a lock file beside it, Locked).
type File struct {
	path  string
	limit int64 // the file's bound: MaxBytes (tests lower it)
	mu    sync.Mutex
}

// Locked runs fn holding the quarantine at path for this process alone
// (an flock on path+".lock"), so that Puts of other processes (a fleet
// worker beside a retry) wait until it returns.
func Locked(path string, fn func() error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("quarantine: %w", err)
	}
	lf, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("quarantine: %w", err)
	}
	defer lf.Close() // releases the lock
	if err := lockFile(lf); err != nil {
		return fmt.Errorf("quarantine %s: lock: %w", path, err)
	}
	return fn()
}

// New is the quarantine kept at path (made on the first Put).
func New(path string) *File { return &File{path: path, limit: MaxBytes} }

// In is the quarantine of the state directory dir.
func In(dir string) *File { return New(filepath.Join(dir, Name)) }

// Path is where the file is.
func (f *File) Path() string { return f.path }

var _ sink.Quarantine = (*File)(nil)

// Put appends the refusals and fsyncs the file (and, when it made the
// file, its directory): when it returns nil they are on disk.
//
// A held record (sink.HeldBy) the file holds already, by id, is not added
// again: a nightly that reads the same page every night holds its paper
// once.
func (f *File) Put(ctx context.Context, rs []sink.Refusal) error {
	if len(rs) == 0 {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := regularOrAbsent(f.path); err != nil {
		return err
	}
	return Locked(f.path, func() error {
		var held map[string]bool
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		for _, r := range rs {
			if r.Sink == sink.HeldBy {
				if held == nil {
					c, err := Read(f.path)
					if err != nil {
						return err
					}
					held = map[string]bool{}
					for _, e := range c.Entries {
						if e.Sink == sink.HeldBy {
							held[e.Record.ID] = true
						}
					}
				}
				if held[r.Record.ID] {
					continue
				}
				held[r.Record.ID] = true
			}
			if err := enc.Encode(r); err != nil {
				return fmt.Errorf("quarantine: encode record %s: %w", r.Record.ID, err)
			}
		}
		if buf.Len() == 0 {
			return nil
		}
		return f.put(buf)
	})
}

func (f *File) put(buf bytes.Buffer) error {
	fh, err := os.OpenFile(f.path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("quarantine: %w", err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return fmt.Errorf("quarantine: %w", err)
	}
	size := st.Size()
	if size+int64(buf.Len()) > f.limit {
		return fmt.Errorf("quarantine %s is full (%d bytes, at most %d): see crawl quarantine list, retry or remove what it holds", f.path, size, f.limit)
	}
	// A line torn by a crash is ended, so the new entries start a line.
	if size > 0 {
		var last [1]byte
		if _, err := fh.ReadAt(last[:], size-1); err == nil && last[0] != '\n' {
			buf = *bytes.NewBuffer(append([]byte{'\n'}, buf.Bytes()...))
		}
	}
	if _, err := fh.WriteAt(buf.Bytes(), size); err != nil {
		return fmt.Errorf("quarantine %s: write: %w", f.path, err)
	}
	if err := fh.Sync(); err != nil {
		return fmt.Errorf("quarantine %s: fsync: %w", f.path, err)
	}
	if size == 0 {
		if err := atomicfile.SyncDir(filepath.Dir(f.path)); err != nil {
			return fmt.Errorf("quarantine %s: fsync its directory: %w", f.path, err)
		}
	}
	return nil
}

// regularOrAbsent refuses a path that is there and is no regular file (a
// FIFO would block, a device would be written to).
func regularOrAbsent(path string) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("quarantine: %w", err)
	case !st.Mode().IsRegular():
		return fmt.Errorf("quarantine %s: not a regular file (%s)", path, fskind.Of(st.Mode()))
	}
	return nil
}

// Contents is what a quarantine file holds.
type Contents struct {
	// Entries, oldest first, one per sink and record: an entry written
	// again for the same record and sink (a page quarantined, then crawled
	// again before it was committed) replaces the earlier one in its place.
	Entries []sink.Refusal
	// Bad are the lines that are no entry (torn by a crash, edited by
	// hand): kept as they are by Replace, never dropped unseen.
	Bad [][]byte
}

// Read is what the quarantine at path holds; nothing when there is no
// file.
func Read(path string) (Contents, error) {
	var c Contents
	if err := regularOrAbsent(path); err != nil {
		return c, err
	}
	fh, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("quarantine: %w", err)
	}
	defer fh.Close()
	at := map[string]int{} // sink and record id → index in Entries
	br := bufio.NewReaderSize(fh, 64<<10)
	for {
		line, err := readLine(br)
		if len(bytes.TrimSpace(line)) > 0 {
			var r sink.Refusal
			if json.Unmarshal(line, &r) == nil && r.Record.ID != "" && r.Sink != "" {
				k := r.Sink + "\x00" + r.Record.ID
				if i, ok := at[k]; ok {
					r.Tries = max(r.Tries, c.Entries[i].Tries)
					c.Entries[i] = r
				} else {
					at[k] = len(c.Entries)
					c.Entries = append(c.Entries, r)
				}
			} else {
				c.Bad = append(c.Bad, bytes.TrimSuffix(line, []byte("\n")))
			}
		}
		if err == io.EOF {
			return c, nil
		}
		if err != nil {
			return Contents{}, fmt.Errorf("quarantine %s: %w", path, err)
		}
	}
}

// readLine reads one line. A line is at most MaxBytes (Put never writes a
// longer one), so every entry Put wrote is read back.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if int64(len(line)+len(chunk)) <= MaxBytes {
			line = append(line, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return line, err
	}
}

// Replace makes the quarantine hold exactly c (nothing: the file is
// removed), durably: a crash leaves the old file or the new one. Callers
// hold the lock (Locked) from the Read to the Replace.
func Replace(path string, c Contents) error {
	if err := regularOrAbsent(path); err != nil {
		return err
	}
	rs := c.Entries
	if len(rs) == 0 && len(c.Bad) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("quarantine: %w", err)
		}
		return atomicfile.SyncDir(filepath.Dir(path))
	}
	return atomicfile.Write(path, func(w *bufio.Writer) error {
		for _, b := range c.Bad {
			w.Write(b)
			w.WriteByte('\n')
		}
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for _, r := range rs {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	})
}
