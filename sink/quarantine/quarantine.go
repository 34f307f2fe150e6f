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

var limit int64 = MaxBytes // tests lower it

// maxLine bounds one entry when read: a record's line (sink.MaxLine) and
// the entry's own fields.
const maxLine = sink.MaxLine + 64<<10

// File is a quarantine file. Its Put is safe for concurrent use.
type File struct {
	path string
	mu   sync.Mutex
}

// New is the quarantine kept at path (made on the first Put).
func New(path string) *File { return &File{path: path} }

// In is the quarantine of the state directory dir.
func In(dir string) *File { return New(filepath.Join(dir, Name)) }

// Path is where the file is.
func (f *File) Path() string { return f.path }

var _ sink.Quarantine = (*File)(nil)

// Put appends the refusals and fsyncs the file (and, when it made the
// file, its directory): when it returns nil they are on disk.
func (f *File) Put(ctx context.Context, rs []sink.Refusal) error {
	if len(rs) == 0 {
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, r := range rs {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("quarantine: encode record %s: %w", r.Record.ID, err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := regularOrAbsent(f.path); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
		return fmt.Errorf("quarantine: %w", err)
	}
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
	if size+int64(buf.Len()) > limit {
		return fmt.Errorf("quarantine %s is full (%d bytes, at most %d): see crawl quarantine list, retry or remove what it holds", f.path, size, limit)
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

// Read is what the quarantine at path holds, oldest first; none when there
// is no file. Lines that are no entry (torn by a crash, edited by hand) are
// counted in bad and left out.
func Read(path string) (rs []sink.Refusal, bad int, err error) {
	if err := regularOrAbsent(path); err != nil {
		return nil, 0, err
	}
	fh, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("quarantine: %w", err)
	}
	defer fh.Close()
	br := bufio.NewReaderSize(fh, 64<<10)
	for {
		line, err := readLine(br)
		if len(bytes.TrimSpace(line)) > 0 {
			var r sink.Refusal
			if json.Unmarshal(line, &r) == nil && r.Record.ID != "" && r.Sink != "" {
				rs = append(rs, r)
			} else {
				bad++
			}
		}
		if err == io.EOF {
			return rs, bad, nil
		}
		if err != nil {
			return nil, 0, fmt.Errorf("quarantine %s: %w", path, err)
		}
	}
}

// readLine reads one line; a line over maxLine is skipped whole and read
// as a bad one.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) <= maxLine {
			line = append(line, chunk...)
		} else {
			line = []byte("-") // too long: counted as bad
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return line, err
	}
}

// Replace makes the quarantine hold exactly rs (none: the file is
// removed), durably: a crash leaves the old file or the new one.
func Replace(path string, rs []sink.Refusal) error {
	if err := regularOrAbsent(path); err != nil {
		return err
	}
	if len(rs) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("quarantine: %w", err)
		}
		return atomicfile.SyncDir(filepath.Dir(path))
	}
	return atomicfile.Write(path, func(w *bufio.Writer) error {
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
