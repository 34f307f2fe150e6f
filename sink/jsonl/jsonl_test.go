package jsonl_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/sink"
	_ "github.com/litcrawl/litcrawl/sink/jsonl"
	"github.com/litcrawl/litcrawl/sink/sinktest"
)

func TestJSONLConformance(t *testing.T) {
	sinktest.Run(t, func(t *testing.T) sinktest.Destination {
		path := filepath.Join(t.TempDir(), "sub", "out.jsonl")
		return sinktest.Destination{
			Open: func(t *testing.T) sink.Sink { return sinktest.Open(t, "jsonl:"+path, sink.Options{}) },
			Read: func(t *testing.T) []record.Record { return sinktest.ReadJSONL(t, path) },
			Raw: func(t *testing.T) [][]byte {
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				return bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
			},
		}
	}, sinktest.Features{Ordered: true, Restore: true, Refuse: func(id string) record.Record { return sinktest.Oversized(id, sink.MaxLine) }})
}

func TestJSONLRepairsTornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	whole := `{"schema_version":1,"id":"1","source":{"position":1}}` + "\n"
	if err := os.WriteFile(path, []byte(whole+whole+`{"schema_version":1,"id":"3","sou`), 0o644); err != nil {
		t.Fatal(err)
	}
	s := sinktest.Open(t, "jsonl:"+path, sink.Options{})
	if err := s.Write(context.Background(), sinktest.Records("after", 1)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	got := sinktest.ReadJSONL(t, path)
	if len(got) != 3 || got[0].ID != "1" || got[1].ID != "1" || got[2].ID != "after-0" {
		t.Fatalf("after repair: %d records %+v", len(got), got)
	}
}

// With {date}, a crash after the first write of a new day leaves that write
// in the new day's file; restoring the previous day's token empties it.
func TestJSONLDatedFilesRestore(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 12, 1, 23, 59, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	url := "jsonl:" + filepath.Join(dir, "papers-{date}.jsonl")
	s := sinktest.Open(t, url, sink.Options{Now: clock})
	a, b := sinktest.Records("a", 3), sinktest.Records("b", 3)
	if err := s.Write(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	tok, _ := s.(sink.Committer).Token()
	now = now.Add(2 * time.Minute) // the next UTC day
	if err := s.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	s.Close()

	future := filepath.Join(dir, "papers-2099-01-01.jsonl") // not this sink's output: in the future
	os.WriteFile(future, []byte("{\"id\":\"mine\"}\n"), 0o644)
	s2 := sinktest.Open(t, url, sink.Options{Now: clock})
	if err := s2.(sink.Restorer).Restore(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	if got := sinktest.ReadJSONL(t, future); len(got) != 1 {
		t.Errorf("a file dated after today was emptied by the restore")
	}
	if err := s2.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	s2.Close()
	day1 := sinktest.ReadJSONL(t, filepath.Join(dir, "papers-2026-12-01.jsonl"))
	day2 := sinktest.ReadJSONL(t, filepath.Join(dir, "papers-2026-12-02.jsonl"))
	if len(day1) != 3 || len(day2) != 3 || day2[0].ID != "b-0" {
		t.Fatalf("day 1 has %d records, day 2 has %d; want 3 and 3", len(day1), len(day2))
	}
}

// Restore touches only this sink's own file: a token of another file is
// left alone, a file that is gone starts clean and one cut shorter than
// the commit is left as it is, each with a warning instead of an error
// that would stop every later run.
func TestJSONLRestoreTouchesOnlyItsOwnFile(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "other.jsonl")
	if err := os.WriteFile(other, []byte("{\"id\":\"mine\"}\n{\"id\":\"x\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "out.jsonl")
	var logs bytes.Buffer
	opts := sink.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	s := sinktest.Open(t, "jsonl:"+path, opts)
	defer s.Close()
	restore := func(tok map[string]any) error {
		b, _ := json.Marshal(tok)
		return s.(sink.Restorer).Restore(context.Background(), b)
	}
	abs, _ := filepath.Abs(other)
	if err := restore(map[string]any{"path": other, "abs": abs, "offset": 3}); err != nil {
		t.Fatal(err)
	}
	if err := restore(map[string]any{"path": other, "offset": 3}); err != nil { // an older token, no abs
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(other); len(data) != 25 || !strings.Contains(logs.String(), "another file") {
		t.Fatalf("another file's token: that file now has %d bytes (want 25 untouched); log %q", len(data), logs.String())
	}
	logs.Reset()
	if err := s.Write(context.Background(), sinktest.Records("s", 1)); err != nil {
		t.Fatal(err)
	}
	if err := restore(map[string]any{"path": path, "offset": 999}); err != nil || !strings.Contains(logs.String(), "shorter") {
		t.Fatalf("a file shorter than the commit: %v; log %q", err, logs.String())
	}
	os.Remove(path)
	logs.Reset()
	if err := restore(map[string]any{"path": path, "offset": 999}); err != nil || !strings.Contains(logs.String(), "gone") {
		t.Fatalf("a file that is gone: %v; log %q", err, logs.String())
	}
	if err := s.Write(context.Background(), sinktest.Records("n", 2)); err != nil {
		t.Fatalf("writing after the gone file was started clean: %v", err)
	}
	if got := sinktest.ReadJSONL(t, path); len(got) != 2 {
		t.Errorf("the restarted file holds %d records, want 2", len(got))
	}
}

func TestOpenErrors(t *testing.T) {
	tests := map[string]string{
		"jsonl:":                      "expected a file path",
		"ftp://host/x":                "expected jsonl:PATH",
		"jsonl:/dev/null/not-a-dir/x": "not-a-dir",
		"jsonl://bob:PW@x/y":          "not a URL",
		"jsonl:https://u:hunter2@x/y": "expected jsonl:PATH, a file path, not a URL",
		"jsonl:http:/u:hunter2@x/y":   "not a URL",
		"jsonl:u:hunter2@x:/y":        "not a URL",
		"jsonl:x.jsonl?kep=5":         "jsonl: takes no options",
		"jsonl:a\x1b[2Jb":             "the file path has control characters",
		"jsonl:a-{date}-{date}.jsonl": "{date} may appear once",
		"https://user:hunter2@host/x": "REDACTED",
	}
	for url, want := range tests {
		_, err := sink.Open(context.Background(), url, sink.Options{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%q) = %v, want an error containing %q", url, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Open(%q) leaks the password: %v", url, err)
		}
	}
}

// The kill -9 test: a subprocess writes batches and, after each Write,
// stores the sink's token with the batch number (as the crawler stores them
// in its state). It is killed with SIGKILL at several points, each time
// rerun from its stored state. In the end every record is in the file
// exactly once.
const writerEnv = "LITCRAWL_JSONL_WRITER_DIR"

const killBatches, killBatchSize = 150, 25

func TestJSONLSurvivesKill9(t *testing.T) {
	if os.Getenv(writerEnv) != "" {
		t.Skip("writer subprocess")
	}
	dir := t.TempDir()
	run := func(killAfter int) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestJSONLWriterProcess$")
		cmd.Env = append(os.Environ(), writerEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if n, ok := strings.CutPrefix(sc.Text(), "committed "); ok {
				if b, _ := strconv.Atoi(n); killAfter > 0 && b >= killAfter {
					// The writer is in its next Write now, or about to be.
					if err := cmd.Process.Kill(); err != nil {
						t.Fatal(err)
					}
					break
				}
			}
		}
		err = cmd.Wait()
		if killAfter > 0 {
			return // killed: any exit status
		}
		if err != nil {
			t.Fatalf("writer: %v", err)
		}
	}
	run(20)
	run(60)
	run(110)
	run(0) // to the end
	got := sinktest.ReadJSONL(t, filepath.Join(dir, "out.jsonl"))
	seen := map[string]int{}
	for _, r := range got {
		seen[r.ID]++
	}
	for b := range killBatches {
		for i := range killBatchSize {
			if id := fmt.Sprintf("p%03d-%d", b, i); seen[id] != 1 {
				t.Fatalf("record %s is in the file %d times, want once", id, seen[id])
			}
		}
	}
	if len(got) != killBatches*killBatchSize {
		t.Fatalf("%d records, want %d", len(got), killBatches*killBatchSize)
	}
}

// TestJSONLWriterProcess is the writer of TestJSONLSurvivesKill9; it does
// nothing in a normal test run.
func TestJSONLWriterProcess(t *testing.T) {
	dir := os.Getenv(writerEnv)
	if dir == "" {
		t.Skip("only run as the subprocess of TestJSONLSurvivesKill9")
	}
	statePath := filepath.Join(dir, "state.json")
	var st struct {
		Next  int             `json:"next"`
		Token json.RawMessage `json:"token"`
	}
	s := sinktest.Open(t, "jsonl:"+filepath.Join(dir, "out.jsonl"), sink.Options{})
	if data, err := os.ReadFile(statePath); err == nil {
		if err := json.Unmarshal(data, &st); err != nil {
			t.Fatal(err)
		}
		if err := s.(sink.Restorer).Restore(context.Background(), st.Token); err != nil {
			t.Fatal(err)
		}
	}
	for b := st.Next; b < killBatches; b++ {
		if err := s.Write(context.Background(), sinktest.Records(fmt.Sprintf("p%03d", b), killBatchSize)); err != nil {
			t.Fatal(err)
		}
		tok, err := s.(sink.Committer).Token()
		if err != nil {
			t.Fatal(err)
		}
		st.Next, st.Token = b+1, tok
		data, _ := json.Marshal(st)
		tmp := statePath + ".tmp"
		f, err := os.Create(tmp)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if err := os.Rename(tmp, statePath); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("committed %d\n", b)
	}
	s.Close()
}

// A device or a named pipe is a stream: -o /dev/null discards the
// records, and a FIFO's reader gets every line.
func TestJSONLDeviceAndPipe(t *testing.T) {
	s := sinktest.Open(t, "jsonl:/dev/null", sink.Options{})
	if err := s.Write(context.Background(), sinktest.Records("n", 3)); err != nil {
		t.Fatalf("write to /dev/null: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(t.TempDir(), "papers.fifo")
	if err := syscallMkfifo(fifo); err != nil {
		t.Skip("no named pipes here:", err)
	}
	if _, err := sink.Open(context.Background(), "jsonl:"+fifo, sink.Options{}); err == nil || !strings.Contains(err.Error(), "no reader") {
		t.Fatalf("a named pipe without a reader: %v, want an error saying so at once", err)
	}
	// The reader opens first (without waiting for a writer), and reads
	// once the sink has opened the pipe.
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s = sinktest.Open(t, "jsonl:"+fifo, sink.Options{})
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		got <- b
	}()
	if err := s.Write(context.Background(), sinktest.Records("p", 2)); err != nil {
		t.Fatalf("write to a named pipe: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if lines := bytes.Count(<-got, []byte("\n")); lines != 2 {
		t.Errorf("the pipe's reader got %d lines, want 2", lines)
	}
}

// One file however it is named: through a link to it, or a linked
// directory, it is the same destination (given twice, it is refused).
func TestSameFileThroughLinks(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.jsonl")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(file, filepath.Join(dir, "link.jsonl")); err != nil {
		t.Fatal(err)
	}
	linkedDir := filepath.Join(t.TempDir(), "d")
	if err := os.Symlink(dir, linkedDir); err != nil {
		t.Fatal(err)
	}
	for _, other := range []string{filepath.Join(dir, "link.jsonl"), filepath.Join(linkedDir, "p.jsonl"), filepath.Join(dir, "./p.jsonl")} {
		if sink.Same("jsonl:"+other) != sink.Same("jsonl:"+file) {
			t.Errorf("%s and %s: two destinations, want one", other, file)
		}
	}
	if sink.Same("jsonl:"+filepath.Join(dir, "q.jsonl")) == sink.Same("jsonl:"+file) {
		t.Errorf("two files taken as one")
	}
}
