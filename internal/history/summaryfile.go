package history

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/redact"
)

// SummaryFile is a --report file as crawl report uses it: the run's
// summary, and what its page log holds that the summary may not (for runs
// recorded before the summary kept it).
type SummaryFile struct {
	RunSummary
	PageLog PageLogSummary
}

// PageLogSummary is what a report's page log adds: the fetch times of its
// pages, and its failed pages with their tries (the first
// MaxFailedPagesRead).
type PageLogSummary struct {
	FetchSeconds engine.Histogram
	Failed       []engine.PageLine
}

// MaxFailedPagesRead bounds the failed pages kept from one page log.
const MaxFailedPagesRead = 1000

// MaxSummaryFileBytes bounds a --report file read back (by crawl report).
const MaxSummaryFileBytes = 512 << 20

// ReadSummaryFile reads a --report file.
func ReadSummaryFile(path string) (*SummaryFile, error) {
	// A FIFO would block the open itself: look before opening.
	if info, err := os.Stat(path); err != nil {
		return nil, err
	} else if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil {
		return nil, err
	} else if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	} else if info.Size() > MaxSummaryFileBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than a run report may hold (%d)", path, info.Size(), MaxSummaryFileBytes)
	}
	rf, err := decodeSummaryFile(bufio.NewReaderSize(f, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("%s: not a run report (crawl backfill/nightly --report writes them): %w", path, err)
	}
	for i := range rf.PageLog.Failed {
		rf.PageLog.Failed[i].Error = redact.Text(rf.PageLog.Failed[i].Error)
	}
	if rf.RunID == "" || rf.Started == "" {
		return nil, fmt.Errorf("%s: not a run report: it has no run_id and started", path)
	}
	if _, err := time.Parse(time.RFC3339, rf.Started); err != nil {
		return nil, fmt.Errorf("%s: started %q: expected an RFC 3339 time", path, rf.Started)
	}
	return rf, nil
}

// decodeSummaryFile reads a report's page log one line at a time, keeping
// only its histogram and failed pages: a page log of millions of pages
// takes no more memory than a short one.
func decodeSummaryFile(r io.Reader) (*SummaryFile, error) {
	dec := json.NewDecoder(r)
	if t, err := dec.Token(); err != nil {
		return nil, err
	} else if t != json.Delim('{') {
		return nil, errors.New("expected a JSON object")
	}
	rest := map[string]json.RawMessage{}
	rf := &SummaryFile{}
	rf.PageLog.FetchSeconds = engine.Histogram{LE: engine.FetchSecondsBounds, Counts: make([]int64, len(engine.FetchSecondsBounds)+1)}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		if key != "page_log" {
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return nil, err
			}
			rest[key] = v
			continue
		}
		if t, err := dec.Token(); err != nil {
			return nil, err
		} else if t == nil {
			continue
		} else if t != json.Delim('[') {
			return nil, errors.New("page_log: expected an array")
		}
		for dec.More() {
			var pr engine.PageLine
			if err := dec.Decode(&pr); err != nil {
				return nil, fmt.Errorf("page_log: %w", err)
			}
			if pr.Result != "skipped" {
				i, _ := slices.BinarySearch(engine.FetchSecondsBounds, pr.Seconds)
				rf.PageLog.FetchSeconds.Counts[i]++
			}
			if pr.Result == "failed" && len(rf.PageLog.Failed) < MaxFailedPagesRead {
				rf.PageLog.Failed = append(rf.PageLog.Failed, pr)
			}
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
	}
	data, err := json.Marshal(rest)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &rf.RunSummary); err != nil {
		return nil, err
	}
	return rf, nil
}

// SecondsLabel writes a bucket bound of the fetch-time histogram: "50 ms",
// "2.5 s".
func SecondsLabel(s float64) string {
	if s < 1 {
		return strconv.FormatFloat(s*1000, 'f', -1, 64) + " ms"
	}
	return strconv.FormatFloat(s, 'f', -1, 64) + " s"
}
