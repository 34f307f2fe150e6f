package app

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/internal/state"
	"github.com/litcrawl/litcrawl/record"
)

// Two runs started in the same second get different ids (a nightly run
// tells its own papers from earlier runs' by the id).
func TestRunIDsAreUnique(t *testing.T) {
	now := time.Now()
	seen := map[string]bool{}
	for range 100 {
		id := NewRunID(now)
		if seen[id] {
			t.Fatalf("run id %s twice", id)
		}
		seen[id] = true
	}
}

// A sink the state has no position of (a first run, a sink added since, a
// file moved) gets one before the run writes: a run killed after writing
// and before its first commit is taken back on the rerun, not kept and
// written again.
func TestASinkNewToTheStateIsTakenBackAfterAKill(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "papers.jsonl")
	for _, with := range [][]string{nil, {"jsonl:" + filepath.Join(dir, "other.jsonl")}} {
		os.Remove(file)
		os.Remove(filepath.Join(dir, "other.jsonl"))
		st, err := state.Open(filepath.Join(dir, "state"))
		if err != nil {
			t.Fatal(err)
		}
		out, err := OpenSinks(ctx, append(with, "jsonl:"+file), SinkOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := restore(ctx, st, out, false, slog.Default()); err != nil {
			t.Fatal(err)
		}
		if err := out.Write(ctx, []record.Record{{ID: "p1", Title: "t"}}); err != nil {
			t.Fatal(err)
		}
		out.Close() // killed: written, never committed
		st.Close()

		st, err = state.Open(filepath.Join(dir, "state"))
		if err != nil {
			t.Fatal(err)
		}
		out, err = OpenSinks(ctx, append(with, "jsonl:"+file), SinkOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := restore(ctx, st, out, false, slog.Default()); err != nil {
			t.Fatal(err)
		}
		out.Close()
		st.Close()
		for _, f := range []string{file, filepath.Join(dir, "other.jsonl")} {
			if b, _ := os.ReadFile(f); len(b) != 0 {
				t.Errorf("with %v: after the rerun's restore %s holds %q, want what the killed run wrote taken back", with, filepath.Base(f), b)
			}
		}
	}
}
