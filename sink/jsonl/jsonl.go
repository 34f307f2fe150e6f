// Package jsonl is the JSON-lines sink driver: jsonl:PATH appends records
// to a file (with commit tokens, torn-line repair and {date} files), and
// "-" (or jsonl:-) writes them to standard output. Importing the package
// registers the driver.
package jsonl

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/litcrawl/litcrawl/internal/fspath"
	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/sink"
)

func init() {
	sink.Register(sink.Driver{Scheme: "jsonl", Usage: "jsonl:PATH, - (stdout)", Check: check, Open: open, Same: same})
}

// optionLike is what follows a ? that reads as options (key=…), not as
// part of an odd file name ("b #1?.jsonl").
var optionLike = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// check reads jsonl:PATH (or jsonl:- for standard output).
func check(rawURL string) error {
	p := strings.TrimPrefix(rawURL, "jsonl:")
	if err := sink.CheckPath("jsonl", p, "PATH", "file path"); err != nil {
		return err
	}
	if strings.Count(p, datePlaceholder) > 1 {
		return &sink.URLError{URL: rawURL, Reason: "{date} may appear once"}
	}
	if name, q, ok := strings.Cut(p, "?"); ok && optionLike.MatchString(q) {
		return &sink.URLError{URL: "jsonl:" + name, Reason: "jsonl: takes no options (after ? they would be part of the file name)"}
	}
	return nil
}

// same is the file a URL names, as an absolute path with its links
// resolved (a link to the file, or through a linked directory, is the
// same file); only told apart from other sinks by it, never a token's key.
func same(rawURL string) string {
	p := strings.TrimPrefix(rawURL, "jsonl:")
	if p == "-" {
		return "jsonl:-"
	}
	return "jsonl:" + fspath.File(p)
}

func open(_ context.Context, rawURL string, opts sink.Options) (sink.Sink, error) {
	p := strings.TrimPrefix(rawURL, "jsonl:")
	if p == "-" {
		return newStdout(opts), nil
	}
	if info, err := os.Stat(p); err == nil && info.Mode()&(fs.ModeCharDevice|fs.ModeNamedPipe) != 0 {
		// A device or a pipe (-o /dev/null, a FIFO a consumer reads): a
		// stream, as standard output is; nothing to cut back on a restore.
		f, err := openStream(p)
		if err != nil {
			return nil, fmt.Errorf("jsonl %s: %w", p, err)
		}
		return &stdoutSink{w: f, name: "jsonl:" + p, close: f.Close}, nil
	}
	return openFile(p, opts)
}

// jsonlSink appends records to a file, one JSON object per line.
//
// Crash safety: each Write is one append of whole lines followed by fsync.
// A torn last line (a crash inside a write) is cut off when the file is
// opened. Token names the file and the offset after the last Write; Restore
// truncates the file to it, so records written after the crawler's last
// commit are not kept twice. With {date} in the path, a later day's file
// holds only writes made after the token (dates move forward), and Restore
// empties it. A file written by several processes at once has none of these
// guarantees.
type jsonlSink struct {
	pattern string // the path, possibly with {date}
	opts    sink.Options

	sink.Gate          // Write, Token and Restore hold it exclusively
	f         *os.File // open file for path
	path      string   // the current file
	offset    int64    // its size after the last Write
	buf       bytes.Buffer
	maxLine   int // the longest line written (sink.MaxLine)
}

const datePlaceholder = "{date}"

// openFile opens the sink for a pattern that check accepted.
func openFile(pattern string, opts sink.Options) (*jsonlSink, error) {
	s := &jsonlSink{pattern: pattern, opts: opts, maxLine: sink.MaxLine}
	// Fail at start on a path that cannot be written.
	if err := s.ensureFile(s.pathFor()); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *jsonlSink) Describe() string { return "jsonl:" + s.pattern }

// TokenKey is the sink's absolute path: however the path is spelled, the
// same file finds its commit token.
func (s *jsonlSink) TokenKey() string {
	if abs, err := filepath.Abs(s.pattern); err == nil {
		return "jsonl:" + abs
	}
	return s.Describe()
}

func (s *jsonlSink) pathFor() string {
	return strings.Replace(s.pattern, datePlaceholder, s.opts.Clock().UTC().Format("2006-01-02"), 1)
}

// ensureFile opens path for appending (creating it and its directory), and
// cuts off a torn last line.
func (s *jsonlSink) ensureFile(path string) error {
	if s.f != nil && s.path == path {
		return nil
	}
	if s.f != nil {
		if err := s.f.Close(); err != nil {
			return fmt.Errorf("jsonl %s: close: %w", s.path, err)
		}
		s.f = nil
	}
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("jsonl %s: %w", path, err)
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("jsonl %s: %w", path, err)
	}
	size, err := repairTornLine(f)
	if err != nil {
		f.Close()
		return fmt.Errorf("jsonl %s: repair: %w", path, err)
	}
	s.f, s.path, s.offset = f, path, size
	return nil
}

// repairTornLine truncates f after its last newline and returns the new
// size. A file that does not end in a newline was cut inside a Write, which
// therefore never returned: the partial line was never acknowledged.
func repairTornLine(f *os.File) (int64, error) {
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil || size == 0 {
		return size, err
	}
	const chunk = 64 << 10
	buf := make([]byte, chunk)
	end := size
	for end > 0 {
		start := max(end-chunk, 0)
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			keep := start + int64(i) + 1
			if keep == size {
				return size, nil
			}
			return keep, truncateSync(f, keep)
		}
		end = start
	}
	return 0, truncateSync(f, 0)
}

func truncateSync(f *os.File, size int64) error {
	if err := f.Truncate(size); err != nil {
		return err
	}
	return f.Sync()
}

func (s *jsonlSink) Write(ctx context.Context, recs []record.Record) error {
	release, err := s.Enter(ctx, true)
	if err != nil {
		return err
	}
	defer release()
	if len(recs) == 0 {
		return nil
	}
	if err := sink.EncodeLinesBounded(&s.buf, recs, s.maxLine); err != nil {
		if errors.Is(err, sink.ErrRefused) {
			return sink.Refused(fmt.Errorf("jsonl %s: %w", s.path, err))
		}
		return fmt.Errorf("jsonl: %w", err)
	}
	if err := s.ensureFile(s.pathFor()); err != nil {
		return err
	}
	// One write at the committed end: a failed or partial earlier write
	// is overwritten, never followed.
	if _, err := s.f.WriteAt(s.buf.Bytes(), s.offset); err != nil {
		return fmt.Errorf("jsonl %s: write: %w", s.path, err)
	}
	end := s.offset + int64(s.buf.Len())
	if err := s.f.Truncate(end); err != nil {
		return fmt.Errorf("jsonl %s: %w", s.path, err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("jsonl %s: fsync: %w", s.path, err)
	}
	s.offset = end
	return nil
}

// jsonlToken is the JSONL sink's commit token: the file (as the pattern
// gave it, and absolute) and its committed size.
type jsonlToken struct {
	Path   string `json:"path"`
	Abs    string `json:"abs,omitempty"` // absent in tokens of older versions
	Offset int64  `json:"offset"`
}

func (s *jsonlSink) Token() ([]byte, error) {
	release, err := s.Enter(context.Background(), true)
	if err != nil {
		return nil, err
	}
	defer release()
	abs, _ := filepath.Abs(s.path)
	return json.Marshal(jsonlToken{Path: s.path, Abs: abs, Offset: s.offset})
}

// ownPath is the token's file as this sink names it, when it is one of
// this sink's files: the path, or a date's file of a {date} pattern,
// compared as absolute paths when the token has one. A token of another
// file is never applied: a restore touches no file that is not a
// configured sink.
func (s *jsonlSink) ownPath(t jsonlToken) (string, bool) {
	pattern, file := s.pattern, t.Path
	if t.Abs != "" {
		abs, err := filepath.Abs(s.pattern)
		if err != nil {
			return "", false
		}
		pattern, file = abs, filepath.Clean(t.Abs)
	}
	if !strings.Contains(pattern, datePlaceholder) {
		return s.pattern, file == pattern
	}
	d, ok := dateIn(pattern, file)
	return strings.Replace(s.pattern, datePlaceholder, d, 1), ok
}

// dateIn is the date in p when p is a file of the {date} pattern.
func dateIn(pattern, p string) (string, bool) {
	i := strings.Index(pattern, datePlaceholder)
	if i < 0 {
		return "", false
	}
	prefix, suffix := pattern[:i], pattern[i+len(datePlaceholder):]
	if !strings.HasPrefix(p, prefix) || !strings.HasSuffix(p, suffix) || len(p) != len(prefix)+10+len(suffix) {
		return "", false
	}
	d := p[len(prefix) : len(prefix)+10]
	if _, err := time.Parse("2006-01-02", d); err != nil {
		return "", false
	}
	return d, true
}

func (s *jsonlSink) Restore(ctx context.Context, token []byte) error {
	var t jsonlToken
	if err := json.Unmarshal(token, &t); err != nil || t.Path == "" || t.Offset < 0 {
		return fmt.Errorf("jsonl %s: restore: bad token %q", s.pattern, token)
	}
	release, err := s.Enter(ctx, true)
	if err != nil {
		return err
	}
	defer release()
	own, ok := s.ownPath(t)
	if !ok {
		s.opts.Log().Warn("jsonl: the stored commit position is of another file, not this sink's: left alone; this sink starts from where it is",
			"sink", s.Describe(), "token_file", t.Path)
		return nil
	}
	t.Path = own
	// Later days' files hold only output written after the token.
	later, err := s.laterFiles(t.Path)
	if err != nil {
		return err
	}
	for _, p := range later {
		if err := s.truncatePath(p, 0); err != nil {
			return err
		}
	}
	if err := s.truncatePath(t.Path, t.Offset); err != nil {
		return err
	}
	// Reopen the current file: its size may have changed.
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
	return s.ensureFile(s.pathFor())
}

// truncatePath cuts path to size. A file that is gone (moved away, or
// deleted) starts clean, and one shorter than size (cut outside the
// crawler) is left as it is: both with a warning, since nothing written
// after the commit can be in them.
func (s *jsonlSink) truncatePath(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		if size > 0 {
			s.opts.Log().Warn("jsonl: the file of the last commit is gone: starting it clean", "file", path, "committed_bytes", size)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("jsonl restore %s: %w", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("jsonl restore %s: %w", path, err)
	}
	if info.Size() == 0 && size > 0 {
		s.opts.Log().Warn("jsonl: the file of the last commit is gone (or was emptied): starting it clean", "file", path, "committed_bytes", size)
		return nil
	}
	if info.Size() < size {
		s.opts.Log().Warn("jsonl: the file is shorter than at the last commit (changed outside the crawler): left as it is",
			"file", path, "bytes", info.Size(), "committed_bytes", size)
		return nil
	}
	if info.Size() == size {
		return nil
	}
	return truncateSync(f, size)
}

// laterFiles lists the files of a {date} pattern whose date is after the
// date of path.
func (s *jsonlSink) laterFiles(path string) ([]string, error) {
	i := strings.Index(s.pattern, datePlaceholder)
	if i < 0 {
		return nil, nil
	}
	prefix, suffix := s.pattern[:i], s.pattern[i+len(datePlaceholder):]
	dateOf := func(p string) string { d, _ := dateIn(s.pattern, p); return d }
	tokenDate := dateOf(path)
	if tokenDate == "" {
		return nil, fmt.Errorf("jsonl restore: token file %s does not match the path %s", path, s.pattern)
	}
	matches, err := filepath.Glob(escapeGlob(prefix) + "????-??-??" + escapeGlob(suffix))
	if err != nil {
		return nil, fmt.Errorf("jsonl restore %s: %w", s.pattern, err)
	}
	var later []string
	today := s.opts.Clock().UTC().Format("2006-01-02")
	for _, m := range matches {
		// Only days up to today can hold output written after the token: a
		// file dated in the future is someone else's, and left alone.
		if d := dateOf(m); d > tokenDate && d <= today {
			later = append(later, m)
		}
	}
	sort.Strings(later)
	return later, nil
}

func escapeGlob(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)
	return r.Replace(s)
}

func (s *jsonlSink) Close() error {
	return s.Shut(func() error {
		if s.f == nil {
			return nil
		}
		err := s.f.Close()
		s.f = nil
		if err != nil {
			return fmt.Errorf("jsonl %s: close: %w", s.path, err)
		}
		return nil
	})
}

// stdoutSink writes JSON lines to standard output, or to a device or a
// pipe. It cannot roll back, so a rerun after a crash may repeat the last
// batch.
type stdoutSink struct {
	sink.Gate
	w     io.Writer
	name  string       // "" for standard output
	close func() error // nil for standard output
	buf   bytes.Buffer
}

func newStdout(opts sink.Options) *stdoutSink {
	if opts.Stdout != nil {
		return &stdoutSink{w: opts.Stdout}
	}
	return &stdoutSink{w: os.Stdout}
}

func (s *stdoutSink) Describe() string { return cmp.Or(s.name, "stdout") }

func (s *stdoutSink) Write(ctx context.Context, recs []record.Record) error {
	release, err := s.Enter(ctx, true)
	if err != nil {
		return err
	}
	defer release()
	if err := sink.EncodeLines(&s.buf, recs); err != nil {
		return fmt.Errorf("%s: %w", s.Describe(), err)
	}
	if _, err := s.w.Write(s.buf.Bytes()); err != nil {
		return fmt.Errorf("%s: %w", s.Describe(), err)
	}
	return nil
}

func (s *stdoutSink) Close() error {
	return s.Shut(func() error {
		if s.close == nil {
			return nil
		}
		return s.close()
	})
}
