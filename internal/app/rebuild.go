package app

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/litcrawl/litcrawl/internal/atomicfile"
	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/history"
	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/internal/redact"
	"github.com/litcrawl/litcrawl/internal/state"
)

// Rebuilt is what Rebuild read and recorded.
type Rebuilt struct {
	Files   int `json:"files"`
	Lines   int `json:"lines"`
	Papers  int `json:"papers"`  // known papers recorded
	Skipped int `json:"skipped"` // lines that were not a record with an id
}

// maxLine bounds one JSONL line Rebuild reads (a record is a few KB).
const maxLine = 16 << 20

// Rebuild builds a new state in dir from delivered JSONL files (sources
// "jsonl:PATH"): every record's paper (id and DOI) becomes known, first
// delivered by the run its source names. No page is marked done, so a
// later backfill fetches the pages again and delivers only what is not
// known. dir must not hold a state already; the state is built beside it
// and moved into place at the end, so a failed rebuild leaves nothing.
func Rebuild(ctx context.Context, dir string, sources []string) (Rebuilt, error) {
	var out Rebuilt
	if len(sources) == 0 {
		return out, exitcode.Usagef("--from: give at least one jsonl:FILE of delivered records")
	}
	var files []string
	for _, s := range sources {
		p, ok := strings.CutPrefix(s, "jsonl:")
		if !ok || p == "" || p == "-" || strings.HasPrefix(p, "//") {
			return out, exitcode.Usagef("--from %q: expected jsonl:FILE (a file the JSONL sink wrote)", redact.URL(s))
		}
		if info, err := os.Stat(p); err != nil {
			return out, fmt.Errorf("--from %s: %w", s, err)
		} else if !info.Mode().IsRegular() {
			return out, exitcode.Usagef("--from %s: not a regular file", s)
		}
		files = append(files, p)
	}
	if _, err := os.Stat(filepath.Join(dir, state.FileName)); err == nil {
		return out, exitcode.Usagef("--state-dir %s already holds a state: give a new directory (the damaged one stays as it is)", dir)
	}
	tmp := filepath.Clean(dir) + ".rebuilding"
	if err := os.RemoveAll(tmp); err != nil {
		return out, err
	}
	st, err := state.Open(tmp)
	if err != nil {
		return out, err
	}
	started := time.Now()
	err = func() error {
		for _, f := range files {
			before := out
			if err := readDelivered(ctx, f, st, &out); err != nil {
				return err
			}
			if lines := out.Lines - before.Lines; lines > 0 && out.Skipped-before.Skipped == lines {
				return fmt.Errorf("--from jsonl:%s: none of its %d lines is a record with an id: not a file the JSONL sink wrote", f, lines)
			}
			out.Files++
		}
		sum, _ := json.Marshal(out)
		return st.PutRun(state.Run{ID: "rebuild-" + NewRunID(started), Kind: string(history.Rebuild), Started: started, Finished: time.Now(), Summary: sum})
	}()
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.RemoveAll(tmp)
		return out, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return out, err
	}
	if err := atomicfile.Replace(filepath.Join(tmp, state.FileName), filepath.Join(dir, state.FileName)); err != nil {
		return out, fmt.Errorf("move the rebuilt state into %s: %w", dir, err)
	}
	os.RemoveAll(tmp)
	return out, nil
}

// readDelivered records the papers of one JSONL file, a batch a
// transaction.
func readDelivered(ctx context.Context, path string, st *state.Store, out *Rebuilt) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	batch := make([]state.KnownPaper, 0, 1000)
	flush := func() error {
		n, err := st.AddKnown(ctx, batch)
		out.Papers += n
		batch = batch[:0]
		return err
	}
	for sc.Scan() {
		line := sc.Bytes()
		out.Lines++
		var rec struct {
			ID     string `json:"id"`
			DOI    string `json:"doi"`
			Source struct {
				RunID string `json:"run_id"`
			} `json:"source"`
		}
		if json.Unmarshal(line, &rec) != nil || rec.ID == "" {
			out.Skipped++
			continue
		}
		if rec.Source.RunID == "" {
			rec.Source.RunID = "rebuilt"
		}
		batch = append(batch, state.KnownPaper{Paper: ledger.Paper{ID: rec.ID, DOI: rec.DOI}, RunID: rec.Source.RunID})
		if len(batch) == cap(batch) {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("a line longer than %d bytes: not a JSONL file of records", maxLine)
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	return flush()
}
