package parser

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// benchPage is a realistic listing page: the li-classes fixture with its ten
// paper blocks repeated to twenty (about 60 KB, like a live page).
func benchPage(b *testing.B) []byte {
	b.Helper()
	data, err := readRepoFile("fixtures/html/li-classes/literature_d501422.htm")
	if err != nil {
		b.Fatal(err)
	}
	s := string(data)
	start, end := strings.Index(s, `<li class="item">`), strings.LastIndex(s, "</li>")+len("</li>")
	items := s[start:end]
	// The copies are other papers: another site id and another DOI (one
	// paper listed twice on a page is one record).
	other := strings.NewReplacer(`"paperid":"1422`, `"paperid":"9422`, "arxiv-2409.", "arxiv-2509.")
	page := s[:end] + "\n" + other.Replace(items) + s[end:]
	if p, _ := Parse([]byte(page), Options{}); len(p.Records) != 20 {
		b.Fatalf("bench page has %d records, want 20", len(p.Records))
	}
	return []byte(page)
}

// BenchmarkParse measures Parse on a 20-paper page; compare its MB/s with
// BenchmarkHTMLParse, which only builds the DOM of the same bytes.
func BenchmarkParse(b *testing.B) {
	page := benchPage(b)
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(page, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHTMLParse(b *testing.B) {
	page := benchPage(b)
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := html.Parse(bytes.NewReader(page)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseText measures a plain-text capture (seed 000).
func BenchmarkParseText(b *testing.B) {
	data, err := readRepoFile("fixtures/seeds/000_92928c0d02c94ff5.txt")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseVsHTMLParse runs html.Parse and Parse on the same page,
// interleaved, and reports Parse's throughput as a percentage of
// html.Parse's. Interleaving keeps the ratio steady on a noisy machine.
func BenchmarkParseVsHTMLParse(b *testing.B) {
	page := benchPage(b)
	var tHTML, tParse time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, err := html.Parse(bytes.NewReader(page)); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := Parse(page, Options{}); err != nil {
			b.Fatal(err)
		}
		tHTML += t1.Sub(t0)
		tParse += time.Since(t1)
	}
	b.ReportMetric(100*float64(tHTML)/float64(tParse), "%_of_html.Parse")
}
