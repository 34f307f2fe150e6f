package parser_test

import (
	"testing"

	"github.com/litcrawl/litcrawl/internal/testsite"
	"github.com/litcrawl/litcrawl/parser"
)

func BenchmarkZZSynth(b *testing.B) {
	body := testsite.Synth(1001, 3, 20)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		parser.Parse(body, parser.Options{})
	}
}
