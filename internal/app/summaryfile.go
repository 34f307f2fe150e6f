package app

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/litcrawl/litcrawl/internal/atomicfile"
)

// summaryFile is --report FILE: the run summary as one JSON document with a
// line per page in its page_log array. The page lines are spooled to a
// hidden file next to FILE while the run goes on, so a run of any length
// keeps none of them in memory; at the end the report is written to a
// temporary file and renamed over FILE.
type summaryFile struct {
	path  string
	spool *os.File
	buf   *bufio.Writer
}

// openSummaryFile creates the spool; it fails before the run starts when FILE's
// directory cannot be written.
func openSummaryFile(path, stateDir string) (*summaryFile, error) {
	if err := PrepareOutputFile(path, stateDir); err != nil {
		return nil, fmt.Errorf("--report %s: %w", path, err)
	}
	spool, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".pages-*")
	if err != nil {
		return nil, fmt.Errorf("--report %s: %w", path, err)
	}
	return &summaryFile{path: path, spool: spool, buf: bufio.NewWriterSize(spool, 64<<10)}, nil
}

// pages is where the page lines go (one JSON object a line).
func (r *summaryFile) pages() io.Writer { return r.buf }

// write writes the report: summary, a JSON object, with the spooled page
// lines added as its page_log array. The spool is removed either way.
func (r *summaryFile) write(summary []byte) error {
	defer r.discard()
	summary = bytes.TrimSpace(summary)
	if len(summary) < 2 || summary[len(summary)-1] != '}' {
		return fmt.Errorf("--report %s: summary is not a JSON object", r.path)
	}
	if err := r.buf.Flush(); err != nil {
		return fmt.Errorf("--report %s: %w", r.path, err)
	}
	if _, err := r.spool.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("--report %s: %w", r.path, err)
	}
	err := atomicfile.Write(r.path, func(bw *bufio.Writer) error {
		bw.Write(summary[:len(summary)-1])
		if len(summary) > 2 {
			bw.WriteByte(',')
		}
		bw.WriteString(`"page_log":[`)
		br := bufio.NewReaderSize(r.spool, 64<<10)
		first := true
		for {
			line, err := br.ReadBytes('\n')
			if line = bytes.TrimSpace(line); len(line) > 0 {
				if !first {
					bw.WriteByte(',')
				}
				first = false
				bw.Write(line)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				return fmt.Errorf("reading the page log: %w", err)
			}
		}
		_, err := bw.WriteString("]}\n")
		return err
	})
	if err != nil {
		return fmt.Errorf("--report %s: %w", r.path, err)
	}
	return nil
}

// discard removes the spool.
func (r *summaryFile) discard() {
	r.spool.Close()
	os.Remove(r.spool.Name())
}
