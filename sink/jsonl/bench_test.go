package jsonl_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/litcrawl/litcrawl/sink"
	"github.com/litcrawl/litcrawl/sink/sinktest"
)

// BenchmarkJSONLWrite: one write and one fsync per page.
func BenchmarkJSONLWrite(b *testing.B) {
	s, err := sink.Open(context.Background(), "jsonl:"+filepath.Join(b.TempDir(), "out.jsonl"), sink.Options{})
	if err != nil {
		b.Fatal(err)
	}
	sinktest.Bench(b, s)
}
