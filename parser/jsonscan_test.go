package parser

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/site"
)

const paperObj = `{"title":"A {braced} \"quoted\" title","authors":"A, B","doi":"10.1/x","abstract":"line\u0000break <\/p> }}}","paperid":"42","PeriodicalId":"7","PeriodicalIF":"1.5"}`

func TestExtractPapers(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		titles []string
		trunc  bool
	}{
		{"alone", paperObj, []string{`A {braced} "quoted" title`}, false},
		{"inside text", "before " + paperObj + " after", []string{`A {braced} "quoted" title`}, false},
		{"two in a row", paperObj + "," + strings.Replace(paperObj, `"42"`, `"43"`, 1), []string{`A {braced} "quoted" title`, `A {braced} "quoted" title`}, false},
		{"wrapped in array and object", `{"papers":[` + paperObj + `],"total":1}`, []string{`A {braced} "quoted" title`}, false},
		{"site config is noise", `{"title":"书科","theme":"light"}`, nil, false},
		{"paperid and title", `{"title":"T","paperid":12345}`, []string{"T"}, false},
		{"doi and title", `{"title":"T","doi":"arxiv-2409.00001"}`, []string{"T"}, false},
		{"html-escaped", strings.ReplaceAll(paperObj, `"`, "&quot;"), []string{`A {braced} "quoted" title`}, false},
		{"unbalanced braces in text", "{ {{ not json } " + paperObj, []string{`A {braced} "quoted" title`}, false},
		{"truncated in abstract", paperObj[:strings.Index(paperObj, "break")], []string{`A {braced} "quoted" title`}, true},
		{"truncated before title ends", `{"title":"Cut off here`, nil, false},
		{"not an object", `["title","doi"]`, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits, exhausted := extractPapers(tt.in)
			if exhausted {
				t.Fatal("scan budget exhausted on small input")
			}
			var titles []string
			for _, h := range hits {
				titles = append(titles, h.paper.Title)
				if h.paper.truncated != tt.trunc {
					t.Errorf("truncated = %v, want %v", h.paper.truncated, tt.trunc)
				}
			}
			if strings.Join(titles, "|") != strings.Join(tt.titles, "|") {
				t.Errorf("titles = %q, want %q", titles, tt.titles)
			}
		})
	}
}

func TestExtractPapersDecodesFields(t *testing.T) {
	hits, _ := extractPapers(paperObj)
	if len(hits) != 1 {
		t.Fatalf("hits = %d", len(hits))
	}
	p := hits[0].paper
	if p.PaperID != "42" || p.PeriodicalID != 7 || p.PeriodicalIF != 1.5 || p.oddTypes {
		t.Errorf("lenient numbers: paperid=%q PeriodicalId=%d IF=%v odd=%v", p.PaperID, p.PeriodicalID, p.PeriodicalIF, p.oddTypes)
	}
	if got := p.plainAbstract(); got != "line break }}}" {
		t.Errorf("abstract plain text = %q", got)
	}
}

func TestExtractPapersOddTypesKeepsObject(t *testing.T) {
	hits, _ := extractPapers(`{"title":"T","paperid":"9","authors":["A","B"],"RegionNum":{"x":1}}`)
	if len(hits) != 1 || !hits[0].paper.oddTypes || hits[0].paper.PaperID != "9" {
		t.Fatalf("an object with a field of the wrong type must still be read, flagged: %+v", hits)
	}
}

// A cut object keeps its complete fields, and the abstract it cut up to
// the cut (less the word the cut may have split): a field the capture cut
// is kept, flagged text-truncated on the record.
func TestExtractPapersSalvagesTruncated(t *testing.T) {
	cut := `{"title":"T","authors":"A","doi":"10.1/y","paperid":"77","abstract":"never ends`
	hits, _ := extractPapers(cut)
	if len(hits) != 1 {
		t.Fatalf("hits = %d", len(hits))
	}
	p := hits[0].paper
	if !p.truncated || p.Title != "T" || p.DOI != "10.1/y" || p.PaperID != "77" || p.abstractText() != "never" {
		t.Errorf("salvaged = %+v", p)
	}
}

func TestExtractPapersBoundedWork(t *testing.T) {
	// 200,000 unbalanced object starts: quadratic scanning would take minutes.
	in := strings.Repeat(`{"a":`, 200000)
	hits, exhausted := extractPapers(in)
	if len(hits) != 0 || !exhausted {
		t.Errorf("hits=%d exhausted=%v, want 0 and true", len(hits), exhausted)
	}
}

// FuzzExtractPapers: any bytes, no panic, and every hit is a paper whose
// offsets lie inside the input.
func FuzzExtractPapers(f *testing.F) {
	f.Add(paperObj)
	f.Add(`{"title":"x","doi":"10.1/\u00`)
	f.Add(`{&quot;title&quot;:&quot;T&quot;,&quot;paperid&quot;:&quot;1&quot;}`)
	f.Add(`{"title":"a\"}{","paperid":"1"}`)
	f.Add(`{{{{"title":"T"`)
	f.Fuzz(func(t *testing.T, s string) {
		hits, _ := extractPapers(s)
		for _, h := range hits {
			if h.start < 0 || h.end > len(s) || h.start > h.end {
				t.Fatalf("offsets %d..%d outside input of %d bytes", h.start, h.end, len(s))
			}
			if !h.paper.truncated && !h.paper.isPaper() {
				t.Fatalf("accepted a non-paper object: %+v", h.paper)
			}
		}
	})
}

// FuzzParse: any bytes, either format, no panic, every record encodes as
// valid UTF-8 JSON that validates against the shipped JSON Schema and
// holds no control character, and the parser's invariants
// hold (props_test.go): no two records of one paper; a permutation (from
// seed) of the lines inside each block with JSON changes no id, title,
// DOI, authors or date; taking the JSON out keeps what the visible lines
// showed in agreement with it.
func FuzzParse(f *testing.F) {
	for i, rel := range fixturePages(f) {
		data, err := readRepoFile(rel)
		if err != nil {
			f.Fatal(err)
		}
		if len(data) > 16<<10 {
			data = data[:16<<10]
		}
		f.Add(data, rel, uint64(i))
	}
	f.Add([]byte("<p>IF 2 4区</p><p>Pub Date : 2024-01-01DOI:</p><p>引用次数: 9999999999999999999</p>"), "x.htm", uint64(0))
	f.Add([]byte{0xff, 0xfe, '<', 0, 'p', 0}, "literature_d1_2.htm", uint64(0))
	f.Add([]byte(`<div>{"paperid":"1\u0000\u001b","title":"T\u0000","doi":"10.1/\u0007x"}</div>`), "literature_d1_2.htm", uint64(0))
	f.Fuzz(func(t *testing.T, data []byte, name string, seed uint64) {
		journal, pageNo, _ := site.Default.ParseFile(name)
		opts := Options{Capture: name, Journal: journal, Page: pageNo}
		page, err := Parse(data, opts)
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		for i, r := range page.Records {
			if r.ID == "" || r.Source.Position != i+1 || r.SchemaVersion != record.SchemaVersion {
				t.Fatalf("record %d: id=%q position=%d", i, r.ID, r.Source.Position)
			}
			b, err := json.Marshal(r)
			if err != nil || !json.Valid(b) || !utf8.Valid(b) {
				t.Fatalf("record %d does not encode as valid JSON: %v", i, err)
			}
			if f, v := FurnitureIn(r); f != "" {
				t.Fatalf("record %d: page furniture in %s: %q", i, f, v)
			}
			if v := controlIn(r); v != "" {
				t.Fatalf("record %d: control character in %q", i, v)
			}
			if err := validRecord(t, r); err != nil {
				t.Fatalf("record %d does not validate against the schema: %v\n%s", i, err, b)
			}
		}
		if err := uniquePapers(page.Records); err != nil {
			t.Fatal(err)
		}
		page.Findings(time.Now())
		if ex, err := Explain(data, opts); err != nil || len(ex.Page.Records) != len(page.Records) {
			t.Fatalf("Explain: %v, %d records for Parse's %d", err, len(ex.Page.Records), len(page.Records))
		}
		raw, base, err := readRaw(data, opts)
		if err != nil {
			t.Fatal(err)
		}
		checkPage(t, name, raw, *base, opts, rand.New(rand.NewPCG(seed, seed>>1)), 1)
	})
}
