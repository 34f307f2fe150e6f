package export

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/record"
)

// An author's name is read as family and given names where the name
// tells them apart, and kept whole where it does not.
func TestSplitName(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Name
	}{
		{"Ann Lee", Name{Family: "Lee", Given: "Ann"}},
		{"  Giuseppe  A. Di Luna ", Name{Family: "Di Luna", Given: "Giuseppe A."}},
		{"Ludwig van Beethoven", Name{Family: "van Beethoven", Given: "Ludwig"}},
		{"Jean-Pierre Müller", Name{Family: "Müller", Given: "Jean-Pierre"}},
		{"William I. Gustafson Jr.", Name{Family: "Gustafson", Given: "William I.", Suffix: "Jr."}},
		{"Lee, Ann", Name{Family: "Lee", Given: "Ann"}},
		{"王磊", Name{Literal: "王磊"}},
		{"Zhang 伟", Name{Literal: "Zhang 伟"}},
		{"ChayanonNamo", Name{Literal: "ChayanonNamo"}},
		{"Smith and Jones", Name{Literal: "Smith and Jones"}},
		{"a, b, c", Name{Literal: "a, b, c"}},
		{", Ann", Name{Literal: ", Ann"}},
		{"", Name{}},
	} {
		if got := SplitName(tt.in); got != tt.want {
			t.Errorf("SplitName(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

// A citation key is the first author's family name, the year and the
// first title word that is not a little word, in ASCII, then the site id
// (or a hash of the id): the same for the same paper, never one for two.
func TestKey(t *testing.T) {
	for _, tt := range []struct {
		r    record.Record
		want string
	}{
		{record.Record{ID: "8801", Authors: []string{"Ann Lee"}, Published: "2024-06-03", Title: "Adaptive Routing"}, "lee2024adaptive-8801"},
		{record.Record{ID: "8802", Authors: []string{"José Müller-Þór"}, Published: "2024-06", Title: "The Über Graph"}, "mulleror2024uber-8802"},
		{record.Record{ID: "8803", Authors: []string{"王磊"}, Published: "2024", Title: "A Study of Caches"}, "study2024-8803"},
		{record.Record{ID: "8804", Title: "网络"}, "paper-8804"},
		{record.Record{ID: "doi:10.1000/x", Authors: []string{"Ann Lee"}, Title: "On Trees"}, "leetrees-" + Key(record.Record{ID: "doi:10.1000/x"})[len("paper-"):]},
	} {
		if got := Key(tt.r); got != tt.want {
			t.Errorf("Key(%+v) = %q, want %q", tt.r, got, tt.want)
		}
	}
	a, b := record.Record{ID: "doi:10.1000/a", Title: "Same"}, record.Record{ID: "doi:10.1000/b", Title: "Same"}
	if Key(a) == Key(b) {
		t.Errorf("two papers, one key %q", Key(a))
	}
	// Keys stays unique even when Key gives two papers one key.
	keys := Keys([]record.Record{{ID: "1", Title: "X"}, {ID: "1", Title: "X"}, {ID: "1", Title: "X"}})
	if keys[0] == keys[1] || keys[1] == keys[2] || keys[0] == keys[2] {
		t.Errorf("Keys = %q", keys)
	}
}

// BibTeX text: TeX's reserved characters escaped, Unicode kept, words
// with capitals in braces; identifiers verbatim but for what would end
// the field.
func TestBibTeXText(t *testing.T) {
	for _, tt := range []struct{ fn, in, want string }{
		{"escape", `50% of $x & y_1 #2 ~ ^ \ {z}`, `50\% of \$x \& y\_1 \#2 \textasciitilde{} \textasciicircum{} \textbackslash{} \{z\}`},
		{"escape", "网络 über\nline", "网络 über line"},
		{"title", "Adaptive ViFi: a 5G Study", "{Adaptive} {ViFi:} a {5G} {Study}"},
		{"title", `The {Edge} of C\D`, `{The} {{\{Edge\}}} of {C\textbackslash{}D}`},
		{"title", "A {Big Set} of X", `{A} \{Big Set\} of {X}`},
		{"title", "Sets {a, b} and } {", `{Sets} \textbraceleft{}a, b\textbraceright{} and \textbraceright{} \textbraceleft{}`},
		{"escape", "a lone { in a cut abstract", `a lone \textbraceleft{} in a cut abstract`},
		{"verbatim", "https://doi.org/10.1002/a%3Cb%3E", "https://doi.org/10.1002/a%3Cb%3E"},
		{"verbatim", `10.1000/a{b}\c d`, "10.1000/a%7Bb%7D%5Cc%20d"},
	} {
		var got string
		switch tt.fn {
		case "escape":
			got = texEscape(tt.in)
		case "title":
			got = protectCapitals(tt.in)
		case "verbatim":
			got = verbatim(tt.in)
		}
		if got != tt.want {
			t.Errorf("%s(%q) = %q, want %q", tt.fn, tt.in, got, tt.want)
		}
	}
}

// Of each paper the last revision is kept, once; a paper whose id a
// later record replaces is that record; the filters select by journal
// (id or name) and by date.
func TestLatestAndFilters(t *testing.T) {
	var ps Papers
	j := &record.Journal{ID: 501422, Name: "Journal of Tests"}
	for _, r := range []record.Record{
		{ID: "doi:10.1/a", Title: "A (no JSON yet)", Published: "2024-06-01", Journal: j},
		{ID: "1", Title: "B", Published: "2024-06-02", Journal: j},
		{ID: "2", Title: "A", Published: "2024-06-01", Replaces: "doi:10.1/a", Revision: 1, Journal: j},
		{ID: "1", Title: "B fixed", Published: "2024-06-02", Revision: 2, Journal: j},
		{ID: "1", Title: "B older", Published: "2024-06-02", Revision: 1, Journal: j},
		{ID: "3", Title: "C", Published: "2024-07-01", Journal: &record.Journal{ID: 7, Name: "Other"}},
		{ID: "4", Title: "D undated", Journal: j, Source: record.Source{FetchedAt: "2026-12-05T03:00:00Z"}},
	} {
		ps.Add(r)
	}
	titles := func(f Filter) string {
		var out []string
		for _, r := range ps.Latest(f) {
			out = append(out, r.Title)
		}
		return strings.Join(out, "|")
	}
	for _, tt := range []struct {
		f    Filter
		want string
	}{
		{Filter{}, "B fixed|A|C|D undated"},
		{Filter{Journal: "501422"}, "B fixed|A|D undated"},
		{Filter{Journal: "journal of TESTS"}, "B fixed|A|D undated"},
		{Filter{Journal: "Other"}, "C"},
		{Filter{Journal: "9"}, ""},
		{Filter{Since: "2024-06-02"}, "B fixed|C"},
		{Filter{Until: "2024-06-01"}, "A"},
		{Filter{Since: "2024-06-02", Until: "2024-06-30"}, "B fixed"},
		{Filter{FetchedSince: "2026-12-05"}, "D undated"},
		{Filter{FetchedSince: "2026-12-06"}, ""},
	} {
		if got := titles(tt.f); got != tt.want {
			t.Errorf("Latest(%+v) = %q, want %q", tt.f, got, tt.want)
		}
	}
}

// A record read from a file is checked: a link that is not http or
// https (a javascript: URL) and a DOI that is none are dropped, control
// characters leave; a record without an id, and a line that is not a
// record, stop the read, naming the line. In texts a control character
// (a line break) becomes a space, so words stay apart, and a mark that
// reorders text (a bidirectional override) goes.
func TestRead(t *testing.T) {
	good := record.Record{ID: "1", Title: "A\x1b[31m title", Abstract: "line1\r\nER  - x\u202e", DOI: "10.1000/x", URL: "javascript:alert(1)", OpenAccessPDF: "https://u:p@x.org/a.pdf"}
	line, _ := json.Marshal(good)
	var ps Papers
	if err := Read(strings.NewReader("\n"+string(line)+"\n\n"), "a.jsonl", &ps); err != nil {
		t.Fatal(err)
	}
	rs := ps.Latest(Filter{})
	if len(rs) != 1 || rs[0].Title != "A [31m title" || rs[0].Abstract != "line1  ER  - x" || rs[0].URL != "" || rs[0].OpenAccessPDF != "" || rs[0].DOIURL != "https://doi.org/10.1000/x" {
		t.Errorf("read %+v", rs)
	}
	defer func(n int) { MaxPapers = n }(MaxPapers)
	MaxPapers = 2
	if err := Read(strings.NewReader(`{"id":"1"}`+"\n"+`{"id":"1","revision":1}`+"\n"+`{"id":"2"}`+"\n"+`{"id":"3"}`), "c.jsonl", &Papers{}); err == nil ||
		!strings.HasPrefix(err.Error(), "c.jsonl:4: more than 2 papers in one export") {
		t.Errorf("past MaxPapers: %v", err)
	}
	for _, tt := range []struct{ in, want string }{
		{string(line) + "\nnot json\n", "b.jsonl:2: not a record"},
		{`{"id":"","title":"x"}`, "b.jsonl:1: a record without a valid id"},
		{`{"id":"` + strings.Repeat("x", 600) + `"}`, "b.jsonl:1: a record without a valid id"},
		{strings.Repeat("x", MaxLine+10), "b.jsonl:1: a line over"},
	} {
		err := Read(strings.NewReader(tt.in), "b.jsonl", &Papers{})
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Read(%.30q…) = %v, want %q…", tt.in, err, tt.want)
		}
	}
}

// Each format writes every field it has a place for, and nothing else.
func TestFormats(t *testing.T) {
	cites := 3
	r := record.Record{ID: "8801", Title: "Adaptive Routing", TitleCN: "自适应路由", Authors: []string{"Ann Lee", "王磊"},
		DOI: "10.1000/jns.1", DOIURL: "https://doi.org/10.1000/jns.1", Published: "2024-06-03", Abstract: "We route.",
		Journal: &record.Journal{Name: "Journal of Network Systems", Volume: "9", Issue: "2", Pages: "10-20"}, Citations: &cites}
	var b bytes.Buffer
	for format, want := range map[string][]string{
		"bibtex": {"@article{lee2024adaptive-8801,\n", "  title = {{Adaptive} {Routing}},\n", "  origtitle = {自适应路由},\n",
			"  author = {Lee, Ann and {王磊}},\n", "  journal = {Journal of Network Systems},\n", "  volume = {9},\n",
			"  number = {2},\n", "  pages = {10--20},\n", "  year = {2024},\n", "  date = {2024-06-03},\n",
			"  doi = {10.1000/jns.1},\n", "  url = {https://doi.org/10.1000/jns.1},\n", "  abstract = {We route.},\n"},
		"ris": {"TY  - JOUR\r\n", "ID  - lee2024adaptive-8801\r\n", "TI  - Adaptive Routing\r\n", "OP  - 自适应路由\r\n",
			"AU  - Lee, Ann\r\n", "AU  - 王磊\r\n", "T2  - Journal of Network Systems\r\n", "VL  - 9\r\n", "IS  - 2\r\n",
			"SP  - 10\r\n", "EP  - 20\r\n", "PY  - 2024/06/03/\r\n", "DO  - 10.1000/jns.1\r\n", "AB  - We route.\r\n", "ER  - \r\n"},
		"csl-json": {`"id": "lee2024adaptive-8801"`, `"type": "article-journal"`, `"original-title": "自适应路由"`,
			`"family": "Lee"`, `"literal": "王磊"`, `"page": "10-20"`, `2024,`, `"DOI": "10.1000/jns.1"`},
	} {
		b.Reset()
		if err := Write(&b, format, []record.Record{r}); err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: no %q in\n%s", format, w, b.String())
			}
		}
	}
	if err := Write(&b, "endnote", nil); err == nil || !strings.Contains(err.Error(), FormatNames) {
		t.Errorf("an unknown format: %v", err)
	}
}

// -o replaces only a file that is wholly an earlier export of the format:
// not a library of one's own, nor an export with one's own entry added.
func TestReplaceable(t *testing.T) {
	dir := t.TempDir()
	recs := []record.Record{{ID: "10010000100", Title: "A", Authors: []string{"Ann Lee"}, Published: "2024-01-02"}, {ID: "doi:10.1/x", Title: "B"}}
	for _, format := range []string{"bibtex", "ris", "csl-json"} {
		var b bytes.Buffer
		if err := Write(&b, format, recs); err != nil {
			t.Fatal(err)
		}
		ours := filepath.Join(dir, "ours."+format)
		os.WriteFile(ours, b.Bytes(), 0o644)
		if err := Replaceable(ours, format); err != nil {
			t.Errorf("%s: an earlier export: %v", format, err)
		}
		own := map[string]map[string]string{
			"bibtex": {
				"own bib":       "@article{smith2020-1,\n  title = {Mine},\n}\n",
				"book first":    "@book{mine2020,\n  title = {Mine},\n}\n\n" + b.String(),
				"added to ours": b.String() + "\n@article{mine2020,\n  title = {Mine},\n}\n",
			},
			"ris": {
				"own ris":       "TY  - JOUR\r\nTI  - mine\r\nER  - \r\n\r\n" + b.String(),
				"added to ours": b.String() + "TY  - JOUR\r\nID  - mine2020\r\nER  - \r\n",
			},
			"csl-json": {
				"own json":      `[{"id": "mine2020", "type": "article-journal", "title": "Mine"}]`,
				"added to ours": strings.TrimSuffix(strings.TrimSpace(b.String()), "]") + `, {"id": "lee2024a-1234", "type": "book"}]`,
			},
		}[format]
		own["array"], own["records"] = "[1, 2]", `{"id":"1","title":"A"}`+"\n"
		for name, text := range own {
			p := filepath.Join(dir, "x")
			os.WriteFile(p, []byte(text), 0o644)
			if err := Replaceable(p, format); err == nil {
				t.Errorf("%s: %s would be replaced", format, name)
			}
		}
	}
	for _, empty := range []string{"", " \n", "[]"} {
		p := filepath.Join(dir, "e")
		os.WriteFile(p, []byte(empty), 0o644)
		if err := Replaceable(p, "csl-json"); err != nil {
			t.Errorf("%q: %v", empty, err)
		}
	}
}
