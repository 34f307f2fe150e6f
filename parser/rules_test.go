package parser

import (
	"testing"

	"github.com/litcrawl/litcrawl/record"
)

// The rules of the parser, one table each: the line forms the
// classification reads (lines.go, ranking.go: TestRankingLine), the
// furniture rules, the field readers (assemble.go) and the plausibility
// rules (plausible.go). Each row states one case of its rule.

// TestLineForms: what kind of line a text is, by its own text.
func TestLineForms(t *testing.T) {
	for _, tc := range []struct {
		text string
		kind lineKind
	}{
		// headings
		{"arXiv - CS - Distributed, Parallel, and Cluster Computing最新文献_第7页", kindHeading},
		{"Journal of Testing最新文献", kindHeading},
		// citation lines
		{"引用次数: 12", kindCitation},
		{"被引次数：3", kindCitation},
		{"Citations: 7", kindCitation},
		{"Cited by 4", kindCitation},
		// date/DOI lines: every label, date form and DOI form
		{"Journal X Pub Date : 2024-09-02 DOI: arxiv-2409.01075", kindMeta},
		{"Pub Date : 2010-11-01DOI: 10.1109/5.771073", kindMeta},
		{"Published: 11 Sep 2024", kindMeta},
		{"Published online: Sep 11, 2024", kindMeta},
		{"Publication date: September 11, 2024", kindMeta},
		{"出版日期：2024年9月11日", kindMeta},
		{"发布时间: 2024/09/11", kindMeta},
		{"发表时间：2024.09.11", kindMeta},
		{"DOI: 10.1016/j.x.2024.1", kindMeta},
		{"10.1109/tst.2024.001", kindMeta},
		{"https://doi.org/10.1109/tst.2024.001", kindMeta},
		// ranking lines (every form: TestRankingLine)
		{"IF 2 4区 计算机科学", kindImpact},
		{"3区 计算机科学 Q3 COMPUTER SCIENCE, INFORMATION SYSTEMS", kindImpact},
		// furniture
		{"筛选", kindNoise},
		{"英文 中文", kindNoise},
		{"首页 > 最新文献", kindNoise},
		{"京ICP备2023020795号-1", kindNoise},
		{"京公网安备 11010802042870号", kindNoise},
		{"Copyright © 2024 Book学术", kindNoise},
		{"共 1234 篇文献", kindNoise},
		{"上一页 1 2 3 下一页", kindNoise},
		{"•", kindNoise},
		// text: decided by the block (title, names, abstract)
		{"Fast Graph Partitioning for Sparse Workloads 稀疏工作负载的快速图划分", kindText},
		{"Ann Lee, Bo Chen", kindText},
		{"IF Statements Considered Harmful", kindText},
		{"We study graphs. We prove a bound.", kindText},
	} {
		if got := classify(tc.text); got.kind != tc.kind {
			t.Errorf("%q: kind %d, want %d", tc.text, got.kind, tc.kind)
		}
	}
}

// TestDateForms: the date forms read after a date label, and those not
// read (a finding: a date in a form not read).
func TestDateForms(t *testing.T) {
	for _, tc := range []struct{ line, published, bad string }{
		{"Published: 2024-09-11", "2024-09-11", ""},
		{"Published: 2024/09/11", "2024-09-11", ""},
		{"Published: 2024.09.11", "2024-09-11", ""},
		{"Published: 11 Sep 2024", "2024-09-11", ""},
		{"Published: Sep 11, 2024", "2024-09-11", ""},
		{"Published: September 11, 2024", "2024-09-11", ""},
		{"出版日期：2024年9月11日", "2024-09-11", ""},
		{"Published: 09/02/2024", "", "09/02/2024"},
		{"Published: 2024", "", "2024"},
	} {
		h, _ := parseMeta(tc.line)
		if h.published != tc.published || h.badDate != tc.bad {
			t.Errorf("%q: published %q bad %q, want %q %q", tc.line, h.published, h.badDate, tc.published, tc.bad)
		}
	}
}

// TestFieldReaders: which rule of buildRecord sets each field: the JSON
// (fromJSON) for what it has, the visible lines always for title_cn,
// abstract_cn, citations, zone, subject and JCR (shownOnly), and the
// visible lines for what the JSON lacks (fillFromLines).
func TestFieldReaders(t *testing.T) {
	seven := 7
	json := &paperJSON{Title: "T From JSON", Authors: "Ann Lee, Bo Chen", DOI: "10.1234/json", PublicationDate: "2024-01-02",
		PaperID: "42", RegionNum: 3, RegionCategory: "工程技术", PeriodicalIF: 1.5}
	v := visible{title: "T Shown", titleCN: "中文标题", authors: []string{"Shown Name"}, abstract: "Shown abstract.",
		abstractCN: "中文摘要。", citations: &seven,
		head: headInfo{zone: 2, subject: "计算机科学", jcrQuartile: "Q1", jcrCategory: "ENGINEERING, CIVIL", doi: "10.1234/shown", published: "2024-03-04", journal: "Shown Journal"}}
	for _, tc := range []struct {
		rule  string
		json  *paperJSON
		field string
		get   func(r record.Record) any
		want  any
	}{
		{"fromJSON", json, "title", func(r record.Record) any { return r.Title }, "T From JSON"},
		{"fromJSON", json, "doi", func(r record.Record) any { return r.DOI }, "10.1234/json"},
		{"fromJSON", json, "published", func(r record.Record) any { return r.Published }, "2024-01-02"},
		{"fromJSON", json, "authors", func(r record.Record) any { return len(r.Authors) }, 2},
		{"fromJSON", json, "id", func(r record.Record) any { return r.ID }, "42"},
		{"shownOnly", json, "title_cn", func(r record.Record) any { return r.TitleCN }, "中文标题"},
		{"shownOnly", json, "abstract_cn", func(r record.Record) any { return r.AbstractCN }, "中文摘要。"},
		{"shownOnly", json, "citations", func(r record.Record) any { return *r.Citations }, 7},
		{"shownOnly", json, "zone", func(r record.Record) any { return r.Zone }, 2},
		{"shownOnly", json, "subject", func(r record.Record) any { return r.Subject }, "计算机科学"},
		{"shownOnly", json, "jcr_category", func(r record.Record) any { return r.JCRCategory }, "ENGINEERING, CIVIL"},
		{"fillFromLines", json, "abstract", func(r record.Record) any { return r.Abstract }, "Shown abstract."},
		{"fillFromLines", nil, "title", func(r record.Record) any { return r.Title }, "T Shown"},
		{"fillFromLines", nil, "doi", func(r record.Record) any { return r.DOI }, "10.1234/shown"},
		{"fillFromLines", nil, "published", func(r record.Record) any { return r.Published }, "2024-03-04"},
		{"fillFromLines", nil, "journal.name", func(r record.Record) any { return r.Journal.Name }, "Shown Journal"},
		{"identify", nil, "id", func(r record.Record) any { return r.ID }, "doi:10.1234/shown"},
	} {
		var r record.Record
		var j record.Journal
		id := ""
		s := &segment{json: tc.json}
		if tc.json != nil {
			id = fromJSON(tc.json, &r, &j)
		}
		shownOnly(v, &r)
		fillFromLines(s, v, &r, &j, &Page{})
		identify(&r, id)
		if got := tc.get(r); got != tc.want {
			t.Errorf("%s sets %s: %v, want %v", tc.rule, tc.field, got, tc.want)
		}
	}
}

// TestFieldRules: each plausibility rule of plausible.go, a row for each
// thing it says a field looks like instead.
func TestFieldRules(t *testing.T) {
	noJSON := []string{record.WarnNoJSON}
	big := 20_000_000
	for _, tc := range []struct {
		rule  string
		r     record.Record
		field string // "": no finding
	}{
		{"furniture", record.Record{Title: "T", AbstractCN: "京ICP备2023020795号-1"}, "abstract_cn"},
		{"title", record.Record{Title: "Ann Lee, Bo Chen, Carl Diaz", Warnings: noJSON}, "title"},
		{"title", record.Record{Title: "Pub Date : 2024-09-02 DOI: 10.1/x", Warnings: noJSON}, "title"},
		{"title", record.Record{Title: "引用次数: 4", Warnings: noJSON}, "title"},
		{"title", record.Record{Title: "Volume Eight, Issue One"}, ""}, // the JSON's: not checked
		{"title_cn", record.Record{Title: "T", TitleCN: "No Chinese Here"}, "title_cn"},
		{"authors", record.Record{Title: "T", Authors: []string{"We study graphs and we prove a bound on their diameter in this paper today"}, Warnings: noJSON}, "authors"},
		{"published", record.Record{Title: "T", Published: "2024-02-30"}, "published"},
		{"published", record.Record{Title: "T", Published: "1850-01-01"}, "published"},
		{"published", record.Record{Title: "T", Published: "2099-01-01"}, "published"},
		{"doi", record.Record{Title: "T", DOI: "not-a-doi"}, "doi"},
		{"abstract", record.Record{Title: "A Long Title of a Paper Here", Abstract: "Short bit", Warnings: noJSON}, "abstract"},
		{"abstract", record.Record{Title: "A Long Title of a Paper Here", Abstract: "Short bit", Warnings: []string{record.WarnNoJSON, record.WarnTextTruncated}}, ""}, // cut: no finding
		{"abstract", record.Record{Title: "T", Abstract: "Ann Lee, Bo Chen, Carl Diaz", Warnings: noJSON}, "abstract"},
		{"abstract_cn", record.Record{Title: "T", AbstractCN: "Not Chinese prose at all."}, "abstract_cn"},
		{"abstract_cn", record.Record{Title: "T", AbstractCN: "张三、李四、王五"}, "abstract_cn"},
		{"citations", record.Record{Title: "T", Citations: &big}, "citations"},
		{"page text", record.Record{Title: "T", Journal: &record.Journal{Name: "3区 计算机科学 Q3 Computer Science"}}, "journal.name"},
		{"page text", record.Record{Title: "T", Journal: &record.Journal{Name: "Pub Date : 2024-01-02"}}, "journal.name"},
		{"page text", record.Record{Title: "T", Journal: &record.Journal{Name: "上一页 1 2 下一页"}}, "journal.name"},
		{"page text", record.Record{Title: "T", Subject: "IF 2 4区"}, "subject"},
		{"page text", record.Record{Title: "T", Journal: &record.Journal{Name: "IEEE Access"}, Subject: "计算机科学"}, ""},
	} {
		var got []string
		for _, f := range Implausible(tc.r, testNow) {
			got = append(got, f.Field)
		}
		switch {
		case tc.field == "" && len(got) > 0:
			t.Errorf("%s: %+v: findings %q, want none", tc.rule, tc.r, got)
		case tc.field != "" && (len(got) == 0 || got[0] != tc.field):
			t.Errorf("%s: %+v: findings %q, want %s", tc.rule, tc.r, got, tc.field)
		}
	}
}
