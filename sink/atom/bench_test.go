package atom_test

import (
	"context"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/sink"
)

// BenchmarkWrite is a crawl's pattern: a write of a page's 20 papers,
// then its token, and so on; the feed keeps its default 100. backfill:
// each page older than the last (past the fifth page the feed does not
// change); newer: each page newer than the last (the feed changes at
// every write, as a nightly's first pages or keep=10000 would).
func BenchmarkWrite(b *testing.B) {
	for _, order := range []string{"backfill", "newer"} {
		b.Run(order, func(b *testing.B) {
			dir := b.TempDir()
			s, err := sink.Open(context.Background(), "atom:"+dir, sink.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			all := papers("p", 11, 20*b.N, time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC)) // a day each, all past
			page := func(i int) []record.Record {
				if order == "backfill" {
					i = b.N - 1 - i
				}
				return all[20*i : 20*i+20]
			}
			b.ResetTimer()
			for i := range b.N {
				if err := s.Write(context.Background(), page(i)); err != nil {
					b.Fatal(err)
				}
				if _, err := s.(sink.Committer).Token(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
