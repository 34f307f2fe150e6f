package quarantine

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/litcrawl/litcrawl/sink"
	"github.com/litcrawl/litcrawl/sink/sinktest"
)

func refusals(prefix string, n int) []sink.Refusal {
	var rs []sink.Refusal
	for _, r := range sinktest.Records(prefix, n) {
		rs = append(rs, sink.Refusal{Sink: "postgres://db/papers", Reason: "a NUL [SQLSTATE 22P05]", Tries: 1, Record: r})
	}
	return rs
}

// What Put keeps, Read gives back, in order; a line torn by a crash is
// read as bad and does not hide the entries after it, and Replace keeps
// it; a record quarantined twice for one sink (its page crawled again
// before it was committed) is one entry; Replace with nothing removes the
// file.
func TestPutReadReplace(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), Name)
	if c, err := Read(path); err != nil || len(c.Entries) != 0 || len(c.Bad) != 0 {
		t.Fatalf("no file: %+v %v", c, err)
	}
	q := New(path)
	if err := q.Put(ctx, refusals("q", 2)); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"at":"2026-01-01T00:00:00Z","sink":"x","rec`) // torn
	f.Close()
	if err := q.Put(ctx, refusals("q", 3)[1:]); err != nil { // q-1 again, and q-2
		t.Fatal(err)
	}
	c, err := Read(path)
	if err != nil || len(c.Entries) != 3 || len(c.Bad) != 1 || c.Entries[0].Record.ID != "q-0" || c.Entries[1].Record.ID != "q-1" || c.Entries[2].Record.ID != "q-2" {
		t.Fatalf("read %+v, %v", c, err)
	}
	c.Entries = c.Entries[1:2]
	if err := Replace(path, c); err != nil {
		t.Fatal(err)
	}
	if c, _ := Read(path); len(c.Entries) != 1 || len(c.Bad) != 1 || c.Entries[0].Record.ID != "q-1" {
		t.Fatalf("after Replace: %+v", c)
	}
	if err := Replace(path, Contents{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("an empty quarantine leaves its file: %v", err)
	}
}

// An entry as large as a record the JSONL sink takes (16 MiB) and more is
// read back whole: nothing Put wrote is read as a bad line.
func TestLargeEntriesReadBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), Name)
	big := refusals("big", 1)
	big[0].Record = sinktest.Oversized("big-0", sink.MaxLine+1<<20)
	if err := New(path).Put(context.Background(), append(big, refusals("s", 1)...)); err != nil {
		t.Fatal(err)
	}
	c, err := Read(path)
	if err != nil || len(c.Bad) != 0 || len(c.Entries) != 2 || len(c.Entries[0].Record.Abstract) != sink.MaxLine+1<<20 {
		t.Fatalf("read %d entries, %d bad, %v", len(c.Entries), len(c.Bad), err)
	}
}

// The file is bounded: a Put past the bound fails (naming the file) and
// adds nothing; a FIFO or a directory at the path is refused at once.
func TestBoundsAndNonRegularFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, Name)
	q := New(path)
	q.limit = 2000
	if err := q.Put(ctx, refusals("q", 1)); err != nil {
		t.Fatal(err)
	}
	err := q.Put(ctx, refusals("r", 5))
	if err == nil || !strings.Contains(err.Error(), "full") || !strings.Contains(err.Error(), path) {
		t.Fatalf("a Put past the bound: %v", err)
	}
	if c, _ := Read(path); len(c.Entries) != 1 {
		t.Fatalf("a refused Put added entries: %d", len(c.Entries))
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	for name, p := range map[string]string{"fifo": fifo, "dir": dir} {
		if _, err := Read(p); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Read of a %s: %v", name, err)
		}
		if err := New(p).Put(ctx, refusals("q", 1)); err == nil {
			t.Errorf("Put into a %s succeeded", name)
		}
	}
}

// Processes appending to one quarantine at once (fleet workers sharing a
// state_dir) lose no entry: each append holds the lock.
func TestConcurrentProcessesLoseNothing(t *testing.T) {
	if os.Getenv("QUARANTINE_PUTTER") != "" {
		n, _ := strconv.Atoi(os.Getenv("QUARANTINE_N"))
		q := New(os.Getenv("QUARANTINE_PATH"))
		for i := range n {
			if err := q.Put(context.Background(), refusals(fmt.Sprintf("%s-%d", os.Getenv("QUARANTINE_PUTTER"), i), 1)); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
		return
	}
	path := filepath.Join(t.TempDir(), Name)
	const n = 300
	var wg sync.WaitGroup
	for _, who := range []string{"a", "b", "c"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestConcurrentProcessesLoseNothing$")
			cmd.Env = append(os.Environ(), "QUARANTINE_PUTTER="+who, "QUARANTINE_PATH="+path, fmt.Sprintf("QUARANTINE_N=%d", n))
			var errb bytes.Buffer
			cmd.Stderr = &errb
			if err := cmd.Run(); err != nil {
				t.Errorf("putter %s: %v %s", who, err, errb.String())
			}
		}()
	}
	wg.Wait()
	c, err := Read(path)
	if err != nil || len(c.Entries) != 3*n || len(c.Bad) != 0 {
		t.Fatalf("%d entries, %d bad lines, %v; want %d", len(c.Entries), len(c.Bad), err, 3*n)
	}
}
