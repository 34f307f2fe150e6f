// Package archive records fetches as WARC 1.1 files and serves them back:
// Recorder is an http.RoundTripper that stores every request/response pair
// (gzip per record, files rotated by size, a warcinfo record per file
// naming the run) and passes the response on unchanged; Archive answers
// requests from the WARC files of a directory, for offline crawls and
// replay. The WARC writing and reading is github.com/nlnwa/gowarc's.
package archive

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httputil"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	gowarc "github.com/nlnwa/gowarc/v3"
)

// Recorder stores every request/response pair that goes through it. It is
// safe for concurrent use.
type Recorder struct {
	next    http.RoundTripper
	maxBody int64
	w       *gowarc.WarcFileWriter
}

// RecorderOptions configure a Recorder.
type RecorderOptions struct {
	// Dir is where the WARC files go (created if needed).
	Dir string
	// RunID names the run in each file's warcinfo record.
	RunID string
	// MaxFileSize rotates files at about this size (default 1 GiB).
	MaxFileSize int64
	// MaxBody caps what is read of a response (the crawler's body cap);
	// a larger body is passed on without being recorded in full.
	MaxBody int64
}

// NewRecorder records what next fetches.
func NewRecorder(next http.RoundTripper, o RecorderOptions) (*Recorder, error) {
	if next == nil {
		next = http.DefaultTransport
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("archive %s: %w", o.Dir, err)
	}
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = 1 << 30
	}
	w := gowarc.NewWarcFileWriter(
		// The run's own tag in every name: two runs sharing a directory
		// that start in the same second never write one file name.
		gowarc.WithFileNameGenerator(&gowarc.PatternNameGenerator{Directory: o.Dir, Prefix: "litcrawl-",
			Pattern: "%{prefix}s%{ts}s-%{run}s-%04{serial}d-%{hostOrIp}s.%{ext}s", Params: map[string]any{"run": runTag(o.RunID)}}),
		gowarc.WithCompression(true),
		gowarc.WithMaxFileSize(o.MaxFileSize),
		gowarc.WithFlush(true), // each record reaches the disk: a killed writer leaves complete records
		gowarc.WithWarcInfoFunc(func(b gowarc.WarcRecordBuilder) error {
			_, err := fmt.Fprintf(b, "software: litcrawl\r\nformat: WARC File Format 1.1\r\nrun-id: %s\r\n", o.RunID)
			return err
		}),
	)
	return &Recorder{next: next, maxBody: o.MaxBody, w: w}, nil
}

// runTag is what names a run's files: the random end of its id
// (20261205T182626Z-a1d165d8), or the process id and a random number.
func runTag(runID string) string {
	tag := runID[strings.LastIndexByte(runID, '-')+1:]
	if tag != "" && len(tag) <= 32 && !strings.ContainsFunc(tag, func(r rune) bool {
		return !('0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z')
	}) {
		return tag
	}
	return fmt.Sprintf("p%d-%08x", os.Getpid(), rand.Uint32())
}

// RoundTrip fetches through next and records the exchange. A body that
// fails to arrive whole is not recorded; its error is returned as is.
func (r *Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	limit := r.maxBody
	if limit <= 0 {
		limit = 64 << 20
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if int64(len(body)) <= limit {
		if werr := r.record(req, resp, body); werr != nil {
			return nil, fmt.Errorf("archive: %w", werr)
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// uuidMu serialises what touches the uuid package's process-wide state:
// gowarc turns its random pool on each time it makes a record builder or
// an unmarshaler (a write the race detector rightly flags beside any other
// uuid call), so records are built, written and read under it.
var uuidMu sync.Mutex

func (r *Recorder) record(req *http.Request, resp *http.Response, body []byte) error {
	uuidMu.Lock()
	defer uuidMu.Unlock()
	now := time.Now().UTC().Format(time.RFC3339)
	reqID, respID := "<urn:uuid:"+uuid.NewString()+">", "<urn:uuid:"+uuid.NewString()+">"
	target := req.URL.String()

	// Credentials never reach an archive: the Authorization header (the
	// base URL's user info, sent as Basic auth) and cookies are left out.
	dumped := req.Clone(req.Context())
	for _, h := range []string{"Authorization", "Proxy-Authorization", "Cookie"} {
		dumped.Header.Del(h)
	}
	reqDump, err := httputil.DumpRequestOut(dumped, false)
	if err != nil {
		return err
	}
	reqRec, err := buildRecord(gowarc.Request, "request", reqID, respID, now, target, reqDump)
	if err != nil {
		return err
	}
	var block bytes.Buffer
	fmt.Fprintf(&block, "HTTP/%d.%d %s\r\n", resp.ProtoMajor, resp.ProtoMinor, resp.Status)
	h := resp.Header.Clone()
	h.Del("Transfer-Encoding") // the body is stored whole
	h.Set("Content-Length", fmt.Sprint(len(body)))
	h.Write(&block)
	block.WriteString("\r\n")
	block.Write(body)
	respRec, err := buildRecord(gowarc.Response, "response", respID, reqID, now, target, block.Bytes())
	if err != nil {
		return err
	}
	for _, res := range r.w.Write(reqRec, respRec) {
		if res.Err != nil {
			return res.Err
		}
	}
	return nil
}

// buildRecord makes a request or response record holding an HTTP message,
// linked to its counterpart by WARC-Concurrent-To.
func buildRecord(t gowarc.RecordType, msgType, id, concurrentTo, date, target string, block []byte) (gowarc.WarcRecord, error) {
	b := gowarc.NewRecordBuilder(t)
	if _, err := b.Write(block); err != nil {
		return nil, err
	}
	b.AddWarcHeader(gowarc.WarcRecordID, id)
	b.AddWarcHeader(gowarc.WarcDate, date)
	b.AddWarcHeader(gowarc.WarcTargetURI, target)
	b.AddWarcHeader(gowarc.WarcConcurrentTo, concurrentTo)
	b.AddWarcHeader(gowarc.ContentType, "application/http;msgtype="+msgType)
	rec, _, err := b.Build()
	return rec, err
}

// Close finishes the current WARC file.
func (r *Recorder) Close() error {
	uuidMu.Lock()
	defer uuidMu.Unlock()
	return r.w.Close()
}

// Response is one archived response.
type Response struct {
	URL    string
	Date   time.Time
	Status int
	Header http.Header
	Body   []byte
}

// Files lists the WARC files of a directory in name (time) order,
// including those of a writer that was killed: the writer names a file
// "….warc.gz.open" until it closes it. What is not a regular file (a FIFO,
// a device, a directory) is skipped: reading it could block for ever.
func Files(dir string) ([]string, error) {
	if info, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("archive %s: %w", dir, err)
	} else if !info.IsDir() {
		return nil, fmt.Errorf("archive %s: not a directory: expected the directory of WARC files a crawl with --archive wrote", dir)
	}
	var out []string
	for _, pat := range []string{"*.warc", "*.warc.gz", "*.warc.open", "*.warc.gz.open"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			return nil, err
		}
		for _, p := range m {
			if info, err := os.Stat(p); err == nil && info.Mode().IsRegular() {
				out = append(out, p)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("archive %s: no WARC files in it (*.warc, *.warc.gz)", dir)
	}
	sort.Strings(out)
	return out, nil
}

// Responses calls f for every response record of the WARC files of dir,
// in file and record order. A file cut off in a record (a killed writer) is
// read up to its last complete record.
func Responses(dir string, f func(Response) error) error {
	files, err := Files(dir)
	if err != nil {
		return err
	}
	for _, file := range files {
		if err := readFile(file, f); err != nil {
			return err
		}
	}
	return nil
}

func readFile(file string, f func(Response) error) error {
	uuidMu.Lock()
	rd, err := gowarc.NewWarcFileReader(file, 0)
	uuidMu.Unlock()
	if err != nil {
		return fmt.Errorf("archive %s: %w", file, err)
	}
	defer rd.Close()
	for {
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			// A record cut off at the end of a file written by a process
			// that was killed: what came before it is complete.
			if errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "EOF") {
				return nil
			}
			return fmt.Errorf("archive %s: %w", file, err)
		}
		wr := rec.WarcRecord
		if wr.Type() != gowarc.Response {
			wr.Close()
			continue
		}
		resp, err := parseResponse(wr)
		wr.Close()
		if err != nil {
			return fmt.Errorf("archive %s at %d: %w", file, rec.Offset, err)
		}
		if err := f(resp); err != nil {
			return err
		}
	}
}

func parseResponse(wr gowarc.WarcRecord) (Response, error) {
	r := Response{URL: wr.WarcHeader().Get(gowarc.WarcTargetURI)}
	r.Date, _ = time.Parse(time.RFC3339, wr.WarcHeader().Get(gowarc.WarcDate))
	rd, err := wr.Block().RawBytes()
	if err != nil {
		return r, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(rd), nil)
	if err != nil {
		return r, err
	}
	defer resp.Body.Close()
	r.Status, r.Header = resp.StatusCode, resp.Header
	r.Body, err = io.ReadAll(resp.Body)
	return r, err
}

// Archive answers requests from archived responses: for each URL, the last
// archived response. It is safe for concurrent use.
type Archive struct {
	mu   sync.RWMutex
	byID map[string]Response
}

// Load reads every WARC file of dir.
func Load(dir string) (*Archive, error) {
	a := &Archive{byID: map[string]Response{}}
	err := Responses(dir, func(r Response) error {
		a.byID[r.URL] = r
		return nil
	})
	return a, err
}

// Len is the number of archived URLs.
func (a *Archive) Len() int {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return len(a.byID)
}

// ErrNotArchived: the archive has no response for a URL. It is permanent:
// trying again offline cannot succeed.
type ErrNotArchived struct{ URL string }

func (e *ErrNotArchived) Error() string   { return "not in the archive: " + e.URL }
func (e *ErrNotArchived) Permanent() bool { return true }

// RoundTrip answers from the archive. A robots.txt that was never archived
// answers 404 (everything allowed); any other missing URL is an
// *ErrNotArchived.
func (a *Archive) RoundTrip(req *http.Request) (*http.Response, error) {
	a.mu.RLock()
	r, ok := a.byID[req.URL.String()]
	a.mu.RUnlock()
	if !ok {
		if req.URL.Path == "/robots.txt" {
			return &http.Response{StatusCode: http.StatusNotFound, Status: "404 Not Found", Header: http.Header{},
				Body: io.NopCloser(strings.NewReader("")), Request: req, ProtoMajor: 1, ProtoMinor: 1}, nil
		}
		return nil, &ErrNotArchived{URL: req.URL.String()}
	}
	return &http.Response{StatusCode: r.Status, Status: fmt.Sprintf("%d %s", r.Status, http.StatusText(r.Status)),
		Header: r.Header.Clone(), Body: io.NopCloser(bytes.NewReader(r.Body)), ContentLength: int64(len(r.Body)),
		Request: req, ProtoMajor: 1, ProtoMinor: 1}, nil
}
