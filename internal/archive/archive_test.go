package archive_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/litcrawl/litcrawl/internal/archive"
	"github.com/litcrawl/litcrawl/internal/testsite"
)

func recordSite(t *testing.T, dir string, maxFile int64, pages int) (*httptest.Server, map[string][]byte) {
	t.Helper()
	site := testsite.New()
	site.SynthJournal(7, pages, 20)
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)
	rec, err := archive.NewRecorder(srv.Client().Transport, archive.RecorderOptions{Dir: dir, RunID: "run-42", MaxFileSize: maxFile, MaxBody: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: rec}
	bodies := map[string][]byte{}
	for p := 1; p <= pages; p++ {
		u := srv.URL + testsite.PagePath(7, p)
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !bytes.Equal(b, testsite.Synth(7, p, 20)) && p != pages { // the last page drops its next link
			t.Fatalf("the recorder changed page %d's body", p)
		}
		bodies[u] = b
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	return srv, bodies
}

// What the recorder stores, the library's reader gives back byte for
// byte, and the archive serves it again.
func TestRecordAndReadBack(t *testing.T) {
	dir := t.TempDir()
	srv, bodies := recordSite(t, dir, 0, 5)
	n := 0
	err := archive.Responses(dir, func(r archive.Response) error {
		n++
		if !bytes.Equal(r.Body, bodies[r.URL]) || r.Status != 200 || r.Date.IsZero() || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
			t.Errorf("%s: status %d, %d bytes (want %d)", r.URL, r.Status, len(r.Body), len(bodies[r.URL]))
		}
		return nil
	})
	if err != nil || n != 5 {
		t.Fatalf("read %d responses: %v", n, err)
	}
	a, err := archive.Load(dir)
	if err != nil || a.Len() != 5 {
		t.Fatalf("load: %d urls, %v", a.Len(), err)
	}
	c := &http.Client{Transport: a}
	resp, err := c.Get(srv.URL + testsite.PagePath(7, 3))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if !bytes.Equal(b, bodies[srv.URL+testsite.PagePath(7, 3)]) {
		t.Error("replayed body differs")
	}
	_, err = c.Get(srv.URL + testsite.PagePath(7, 99))
	var na *archive.ErrNotArchived
	if !errors.As(err, &na) || !na.Permanent() {
		t.Errorf("a URL missing from the archive: %v", err)
	}
	if resp, err := c.Get(srv.URL + "/robots.txt"); err != nil || resp.StatusCode != 404 {
		t.Errorf("an unarchived robots.txt must answer 404: %v", err)
	}
}

// Files rotate by size, each starting with a warcinfo record that names
// the run, and each record is its own gzip member.
func TestRotationAndWarcinfo(t *testing.T) {
	dir := t.TempDir()
	recordSite(t, dir, 40<<10, 8)
	files, err := archive.Files(dir)
	if err != nil || len(files) < 2 {
		t.Fatalf("files: %v %v", files, err)
	}
	for _, f := range files {
		raw, _ := os.ReadFile(f)
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		zr.Multistream(false)
		first, _ := io.ReadAll(zr) // the first gzip member only
		if !bytes.Contains(first, []byte("WARC-Type: warcinfo")) || !bytes.Contains(first, []byte("run-id: run-42")) {
			t.Errorf("%s does not start with a warcinfo record naming the run:\n%.300s", filepath.Base(f), first)
		}
	}
}

// A writer killed in the middle of a record leaves a file whose complete
// records are all readable.
func TestCutFileReadsCompleteRecords(t *testing.T) {
	dir := t.TempDir()
	recordSite(t, dir, 0, 6)
	files, _ := archive.Files(dir)
	raw, _ := os.ReadFile(files[0])
	if err := os.WriteFile(files[0], raw[:len(raw)-700], 0o644); err != nil { // cut inside the last record
		t.Fatal(err)
	}
	n := 0
	err := archive.Responses(dir, func(archive.Response) error { n++; return nil })
	if err != nil || n != 5 {
		t.Fatalf("read %d complete responses (want 5): %v", n, err)
	}
}

// Files lists regular WARC files only: a FIFO named like one would block
// a replay for ever. A file given for the directory is named as such.
func TestFilesSkipsWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "a.warc.gz"), 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	os.Mkdir(filepath.Join(dir, "b.warc"), 0o700)
	os.WriteFile(filepath.Join(dir, "c.warc.gz"), nil, 0o600)
	got, err := archive.Files(dir)
	if err != nil || len(got) != 1 || filepath.Base(got[0]) != "c.warc.gz" {
		t.Errorf("Files = %q, %v; want only c.warc.gz", got, err)
	}
	if _, err := archive.Files(filepath.Join(dir, "c.warc.gz")); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a file for the directory: %v", err)
	}
}

// Two runs recording into one directory at the same moment each keep
// their own files: nothing one wrote is overwritten by the other.
func TestTwoRunsShareADirectory(t *testing.T) {
	dir := t.TempDir()
	site := testsite.New()
	site.SynthJournal(7, 2, 20)
	srv := httptest.NewServer(site)
	defer srv.Close()
	var recs []*archive.Recorder
	for _, run := range []string{"20261205T182626Z-a1d165d8", "20261205T182626Z-0bad5eed"} {
		rec, err := archive.NewRecorder(srv.Client().Transport, archive.RecorderOptions{Dir: dir, RunID: run, MaxBody: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	for i, rec := range recs { // both open at once, as two runs are
		resp, err := (&http.Client{Transport: rec}).Get(srv.URL + testsite.PagePath(7, i+1))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	for _, rec := range recs {
		if err := rec.Close(); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	if err := archive.Responses(dir, func(archive.Response) error { n++; return nil }); err != nil || n != 2 {
		t.Fatalf("the directory holds %d responses (%v), want both runs' 2", n, err)
	}
}
