package parser_test

import (
	"testing"

	"github.com/litcrawl/litcrawl/internal/testsite"
	"github.com/litcrawl/litcrawl/parser"
)

// BenchmarkParseSynth measures Parse on the page `go run ./bench` serves
// (testsite.Synth: 20 papers, their JSON HTML-escaped in hidden divs).
func BenchmarkParseSynth(b *testing.B) {
	body := testsite.Synth(1001, 3, 20)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parser.Parse(body, parser.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
