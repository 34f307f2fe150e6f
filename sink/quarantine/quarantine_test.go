package quarantine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/litcrawl/litcrawl/sink"
	"github.com/litcrawl/litcrawl/sink/sinktest"
)

func refusals(n int) []sink.Refusal {
	var rs []sink.Refusal
	for _, r := range sinktest.Records("q", n) {
		rs = append(rs, sink.Refusal{Sink: "postgres://db/papers", Reason: "a NUL [SQLSTATE 22P05]", Tries: 1, Record: r})
	}
	return rs
}

// What Put keeps, Read gives back, in order; a line torn by a crash is
// counted as bad and does not hide the entries after it; Replace keeps
// exactly what it is given, and none removes the file.
func TestPutReadReplace(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), Name)
	if rs, bad, err := Read(path); err != nil || len(rs) != 0 || bad != 0 {
		t.Fatalf("no file: %v %d %v", rs, bad, err)
	}
	q := New(path)
	if err := q.Put(ctx, refusals(2)); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"at":"2026-01-01T00:00:00Z","sink":"x","rec`) // torn
	f.Close()
	if err := q.Put(ctx, refusals(3)[2:]); err != nil {
		t.Fatal(err)
	}
	rs, bad, err := Read(path)
	if err != nil || len(rs) != 3 || bad != 1 || rs[0].Record.ID != "q-0" || rs[2].Record.ID != "q-2" || rs[0].Reason == "" {
		t.Fatalf("read %d entries, %d bad, %v: %+v", len(rs), bad, err, rs)
	}
	if err := Replace(path, rs[1:2]); err != nil {
		t.Fatal(err)
	}
	if rs, bad, _ := Read(path); len(rs) != 1 || bad != 0 || rs[0].Record.ID != "q-1" {
		t.Fatalf("after Replace: %+v, %d bad", rs, bad)
	}
	if err := Replace(path, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("an empty quarantine leaves its file: %v", err)
	}
}

// The file is bounded: a Put past the bound fails (naming the file) and
// adds nothing; a FIFO or a directory at the path is refused at once.
func TestBoundsAndNonRegularFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, Name)
	defer func(l int64) { limit = l }(limit)
	limit = 2000
	q := New(path)
	if err := q.Put(ctx, refusals(1)); err != nil {
		t.Fatal(err)
	}
	err := q.Put(ctx, refusals(5))
	if err == nil || !strings.Contains(err.Error(), "full") || !strings.Contains(err.Error(), path) {
		t.Fatalf("a Put past the bound: %v", err)
	}
	if rs, _, _ := Read(path); len(rs) != 1 {
		t.Fatalf("a refused Put added entries: %d", len(rs))
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	for name, p := range map[string]string{"fifo": fifo, "dir": dir} {
		if _, _, err := Read(p); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Read of a %s: %v", name, err)
		}
		if err := New(p).Put(ctx, refusals(1)); err == nil {
			t.Errorf("Put into a %s succeeded", name)
		}
	}
}
