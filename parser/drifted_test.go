package parser

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/record"
)

// The drifts the parser promises to read exactly, each in a fixture of
// its own (their goldens hold the fields): every record has its title,
// Chinese title, names, DOI and date, and nothing looks misread.
func TestListedDriftsExact(t *testing.T) {
	for _, rel := range []string{"fixtures/edge/drift-line-order.txt", "fixtures/edge/drift-labels.txt", "fixtures/edge/drift-markup.htm", "fixtures/edge/furniture.txt"} {
		page := parseFixture(t, rel)
		if len(page.Records) != 4 {
			t.Fatalf("%s: %d records, want 4", rel, len(page.Records))
		}
		for _, r := range page.Records {
			if r.Title == "" || r.TitleCN == "" || len(r.Authors) < 3 || !record.IsDOI(r.DOI) || r.Published == "" || r.Abstract == "" || r.Citations == nil {
				t.Errorf("%s: record %d lacks a field: %+v", rel, r.Source.Position, r)
			}
		}
		if f := page.Findings(testNow); len(f) > 0 {
			t.Errorf("%s: findings %+v", rel, f)
		}
	}
	// A link to the paper's page names it: its site id is the record's.
	page := parseFixture(t, "fixtures/edge/drift-markup.htm")
	if page.Records[1].ID != "142210970" || page.Records[3].ID != "151002312" {
		t.Errorf("ids from /literature/{id}.htm links: %q %q", page.Records[1].ID, page.Records[3].ID)
	}
}

// Header, navigation, breadcrumb, language switch, pager and footer lines
// are no field of any record: the site's name and its search and login
// links above the heading were once the first paper's Chinese abstract.
func TestFurnitureNeverAField(t *testing.T) {
	for _, rel := range []string{"fixtures/edge/furniture.htm", "fixtures/edge/furniture.txt", "fixtures/edge/drift-markup.htm"} {
		page := parseFixture(t, rel)
		for _, r := range page.Records {
			if f, v := FurnitureIn(r); f != "" {
				t.Errorf("%s: record %d: %s = %q", rel, r.Source.Position, f, v)
			}
			for _, s := range []string{r.Title, r.TitleCN, r.Abstract, r.AbstractCN, strings.Join(r.Authors, ",")} {
				if strings.Contains(s, "Book学术") || strings.Contains(s, "关于我们") {
					t.Errorf("%s: record %d holds header or footer text: %q", rel, r.Source.Position, s)
				}
			}
		}
	}
	// What stands above the heading is furniture, also in a text capture
	// whose header line holds no navigation word the parser knows.
	page, _ := Parse([]byte("Acme学术 Portal\n\nJ最新文献\n\nA Paper on Graphs 关于图的论文\n\nPub Date : 2024-01-02 DOI: 10.1234/x\n\nAnn Lee, Bo Chen\n\n引用次数: 1\n"), Options{})
	if len(page.Records) != 1 || page.Records[0].AbstractCN != "" || page.Records[0].Title != "A Paper on Graphs" {
		t.Errorf("a header line above the heading: %+v", page.Records)
	}
}

// A page that stops inside a block's visible text flags its last record
// text-truncated; so does a visible abstract that stops mid-sentence.
func TestCutVisibleText(t *testing.T) {
	page := parseFixture(t, "fixtures/edge/cut-visible-abstract.htm")
	n := len(page.Records)
	if n != 2 || !slices.Contains(page.Records[n-1].Warnings, record.WarnTextTruncated) || slices.Contains(page.Records[0].Warnings, record.WarnTextTruncated) ||
		!slices.Contains(page.Warnings, PageWarnTextTruncated) {
		t.Fatalf("records %+v, page warnings %q", page.Records, page.Warnings)
	}
	// A text capture cut in its last abstract, and one whole.
	block := "A Paper on Graphs 关于图的论文\n\nPub Date : 2024-01-02 DOI: 10.1234/x\n\nAnn Lee, Bo Chen\n\n"
	cut, _ := Parse([]byte(block+"We study graphs and find that the coverage of properties a"), Options{})
	whole, _ := Parse([]byte(block+"We study graphs and find that the coverage of properties holds.\n\n引用次数: 1\n"), Options{})
	if len(cut.Records) != 1 || !slices.Contains(cut.Records[0].Warnings, record.WarnTextTruncated) || !slices.Contains(cut.Warnings, PageWarnTextTruncated) {
		t.Errorf("cut capture: %+v %q", cut.Records, cut.Warnings)
	}
	if len(whole.Records) != 1 || slices.Contains(whole.Records[0].Warnings, record.WarnTextTruncated) || len(whole.Warnings) > 0 {
		t.Errorf("whole capture: %+v %q", whole.Records, whole.Warnings)
	}
}

// Explain says what each line was taken for: furniture, a paper's field,
// or why a piece gave no paper.
func TestExplain(t *testing.T) {
	ex, err := Explain([]byte("Acme学术 Portal\n\nBook学术 搜索 登录\n\nJ最新文献\n\nA Paper on Graphs 关于图的论文\n\nPub Date : 2024-01-02 DOI: 10.1234/x\n\nAnn Lee, Bo Chen\n\n引用次数: 1\n\n京ICP备2023020795号-1\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"furniture/above the listing's heading", "furniture/navigation, filter, language switch or chrome", "heading/the listing's heading",
		"title/title, title_cn", "date/DOI line/date, DOI", "text/authors", "citation line/citations", "furniture/footer"}
	var got []string
	for _, l := range ex.Lines {
		got = append(got, l.Kind+"/"+l.Taken)
	}
	if !slices.Equal(got, want) || len(ex.Findings) != 0 {
		t.Errorf("explained:\n%q\nwant\n%q\nfindings %+v", got, want, ex.Findings)
	}
	ex, _ = Explain([]byte("J最新文献\n\nIF 2 4区 计算机科学\n"), Options{})
	if len(ex.Lines) != 2 || ex.Lines[1].Taken != "no paper: no title, DOI or site id" {
		t.Errorf("a dropped piece: %+v", ex.Lines)
	}
}

// Layouts a first user tried, each one change to a three-paper page read
// without JSON: read exactly (no finding, the fields right), or alarmed.
func TestTriedLayouts(t *testing.T) {
	type paper struct{ title, cn, names, date, doi, abstract string }
	papers := []paper{
		{"Adaptive Checkpoint Placement for Stragglers", "面向掉队节点的自适应检查点放置", "Lin Wei, Maria Gonzalez", "2024-03-01", "10.1016/j.jdcs.2024.103313",
			"Straggling workers slow synchronous training when links span continents. We place checkpoints where delay exceeds a threshold."},
		{"Consensus Latency Bounds under Partial Synchrony", "部分同步下的共识延迟界", "Ada Novak, Peter Lindqvist", "2010-11-01", "10.1109/TPDS.2010.123",
			"We prove that any partially synchronous consensus protocol needs at least two rounds after GST, and that the bound is tight."},
		{"Lock-Free Ring Buffers for Persistent Memory", "面向持久内存的无锁环形缓冲区", "Marta Ruiz, Yusuf Demir", "2024-02-20", "10.1016/j.jdcs.2024.103290",
			"Persistent memory makes crash consistency a property of every store. We present a ring buffer whose head and tail survive a crash."},
	}
	page := func(head, foot string, block func(p paper) string) []byte {
		var b strings.Builder
		b.WriteString("Journal of Drift最新文献\n\n" + head)
		for _, p := range papers {
			b.WriteString(block(p))
		}
		b.WriteString(foot + "京ICP备2023020795号-1\n")
		return []byte(b.String())
	}
	site := func(p paper) string {
		return p.title + " " + p.cn + "\n\nJournal of Drift Pub Date : " + p.date + " DOI: " + p.doi + "\n\n" + p.names + "\n\n" + p.abstract + "\n\n引用次数: 1\n\n"
	}
	with := func(old, new string) func(p paper) string {
		return func(p paper) string { return strings.Replace(site(p), old, new, 1) }
	}
	tests := []struct {
		name  string
		data  []byte
		alarm bool
	}{
		{"text before another date label is no journal", page("", "", with("Journal of Drift Pub Date :", "Research Article Published:")), false},
		{"received and accepted before the site's label", page("", "", with("Journal of Drift Pub Date :", "Received: 2001-01-05 Accepted: 2002-02-06 Pub Date :")), false},
		{"labelled names and abstract", page("", "", func(p paper) string {
			return strings.Replace(strings.Replace(site(p), p.names, "Authors: "+p.names, 1), p.abstract, "Abstract: "+p.abstract, 1)
		}), false},
		{"a labelled keywords line", page("", "", with("引用次数", "Keywords: Deep Learning, Compilers\n\n引用次数")), false},
		{"names ending et al.", page("", "", func(p paper) string { return strings.Replace(site(p), p.names, p.names+" et al.", 1) }), false},
		{"a DOI with a sentence's stop", page("", "", func(p paper) string {
			return strings.Replace(site(p), "DOI: "+p.doi, "DOI: "+p.doi+".", 1)
		}), false},
		{"a volume line", page("", "", with("引用次数", "Vol. 12, No. 3, pp. 45-67\n\n引用次数")), false},
		{"furniture: details links, counts, copyright", page("共 1234 篇文献\n\n", "Copyright © 2024 Book学术. All rights reserved.\n\nPowered by Book学术 | Privacy Policy | Terms of Use\n\n",
			with("引用次数: 1\n\n", "引用次数: 1\n\n查看详情 >>\n\n")), false},
		{"an unlabelled keywords line instead of names", page("", "", func(p paper) string {
			return strings.Replace(site(p), p.names, "Deep Learning, Compilers, Tensor Programs", 1)
		}), true},
		{"a date in a form not read", page("", "", func(p paper) string { return strings.Replace(site(p), p.date, "09/02/2024", 1) }), true},
		{"a citation line before each title", page("", "", func(p paper) string {
			return "引用次数: 1\n\n" + strings.Replace(site(p), "引用次数: 1\n\n", "", 1)
		}), true},
		{"an impact line before each title", page("", "", func(p paper) string { return "IF 2 4区 计算机科学\n\n" + site(p) }), true},
		{"a separator between the titles", page("", "", func(p paper) string { return strings.Replace(site(p), p.title+" ", p.title+" / ", 1) }), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pg, err := Parse(tt.data, Options{})
			if err != nil {
				t.Fatal(err)
			}
			findings := pg.Findings(testNow)
			if tt.alarm {
				if len(findings) == 0 {
					t.Errorf("no finding: %+v", pg.Records)
				}
				return
			}
			if len(findings) > 0 || len(pg.Records) != 3 {
				t.Fatalf("%d records, findings %+v", len(pg.Records), findings)
			}
			for i, r := range pg.Records {
				p := papers[i]
				if r.Title != p.title || r.TitleCN != p.cn || strings.Join(r.Authors, ", ") != p.names || r.DOI != p.doi || r.Published != p.date ||
					r.Abstract != p.abstract || r.Journal == nil || r.Journal.Name != "Journal of Drift" {
					t.Errorf("record %d: %+v", i+1, r)
				}
			}
		})
	}
}

// Layouts an attacker tried: exact, or alarmed; never a wrong field
// without a finding.
func TestAttackedLayouts(t *testing.T) {
	const head = "Journal of Drift最新文献\n"
	const foot = "上一页 1 2 下一页\n京ICP备2023020795号-1\n"
	obj := func(title, doi, id string) string {
		return `{"title":"` + title + `","authors":"Ada Novak, Peter Lindqvist","doi":"` + doi + `","abstract":"We prove a tight bound on rounds, and that it is tight.","publicationDate":"2024-09-02","paperid":"` + id + `"}` + "\n"
	}
	block := func(title, cn, doi, id string) string {
		return title + " " + cn + "\nJournal of Drift Pub Date : 2024-09-02 DOI: " + doi + "\nAda Novak, Peter Lindqvist\n" + obj(title, doi, id)
	}
	a := block("Consensus Latency Bounds under Partial Synchrony", "部分同步下的共识延迟界", "10.1000/abc.1", "10000")
	b := block("Adaptive Checkpoint Placement for Stragglers", "面向掉队节点的自适应检查点放置", "10.1000/abc.2", "10001")
	cnAbs := "我们证明任何部分同步共识协议在稳定后至少需要两轮，并且该界是紧的。\n"
	check := func(name string, data string, alarm bool, want func(rs []record.Record) bool) {
		t.Helper()
		pg, err := Parse([]byte(data), Options{})
		if err != nil {
			t.Fatal(err)
		}
		f := pg.Findings(testNow)
		switch {
		case alarm && len(f) == 0:
			t.Errorf("%s: no finding: %+v", name, pg.Records)
		case !alarm && len(f) > 0:
			t.Errorf("%s: findings %+v", name, f)
		case !alarm && !want(pg.Records):
			t.Errorf("%s: records %+v", name, pg.Records)
		}
	}
	check("a citation line before each title", head+"引用次数: 3\n"+a+"引用次数: 4\n"+b+foot, true, nil)
	check("a Chinese abstract after the citation line", head+a+"引用次数: 3\n"+cnAbs+b+"引用次数: 4\n"+foot, true, nil)
	check("a Chinese abstract right after the title line", head+strings.Replace(a, "\nJournal", "\n"+cnAbs+"Journal", 1)+"引用次数: 3\n"+foot, false,
		func(rs []record.Record) bool { return len(rs) == 1 && rs[0].AbstractCN == strings.TrimSpace(cnAbs) })
	for _, sep := range []string{" / ", " | ", " — ", ": "} {
		with := strings.Replace(a, "Synchrony 部分", "Synchrony"+sep+"部分", 1)
		for _, page := range []string{with, strings.Replace(with, obj("Consensus Latency Bounds under Partial Synchrony", "10.1000/abc.1", "10000"), "", 1)} {
			check("the separator "+sep, head+page+"引用次数: 3\n"+foot, false, func(rs []record.Record) bool {
				return len(rs) == 1 && rs[0].Title == "Consensus Latency Bounds under Partial Synchrony" && rs[0].TitleCN == "部分同步下的共识延迟界"
			})
		}
	}
	check("labelled lines and a byline", head+"Consensus Latency Bounds under Partial Synchrony 部分同步下的共识延迟界\nJournal of Drift Pub Date : 2024-09-02 DOI: 10.1000/abc.1\n作者: Ada Novak, Peter Lindqvist\n摘要: We prove a tight bound on rounds, and that it is tight.\n引用次数: 3\n"+
		"Adaptive Checkpoint Placement for Stragglers 面向掉队节点的自适应检查点放置\nJournal of Drift Pub Date : 2024-09-03 DOI: 10.1000/abc.2\nBy Lin Wei, Maria Gonzalez\n引用次数: 4\n"+foot, false,
		func(rs []record.Record) bool {
			return len(rs) == 2 && strings.Join(rs[0].Authors, ",") == "Ada Novak,Peter Lindqvist" && rs[0].Abstract == "We prove a tight bound on rounds, and that it is tight." &&
				strings.Join(rs[1].Authors, ",") == "Lin Wei,Maria Gonzalez"
		})
	check("initials in a JSON author", head+strings.Replace(a, `"authors":"Ada Novak, Peter Lindqvist"`, `"authors":"W. H. Auden"`, 1)+"引用次数: 3\n"+foot, false,
		func(rs []record.Record) bool { return len(rs) == 1 && rs[0].Authors[0] == "W. H. Auden" })
	check("a DOI with an invisible character and a full stop", head+strings.Replace(strings.Replace(a, obj("Consensus Latency Bounds under Partial Synchrony", "10.1000/abc.1", "10000"), "", 1),
		"DOI: 10.1000/abc.1", "DOI：10.1000/abc.1\u200b。", 1)+"引用次数: 3\n"+foot, false,
		func(rs []record.Record) bool { return len(rs) == 1 && rs[0].DOI == "10.1000/abc.1" })
	check("a journal name with a colon", head+strings.Replace(a, "Journal of Drift Pub Date", "Journal of Physics: Conference Series Pub Date", 1)+"引用次数: 3\n"+foot, false,
		func(rs []record.Record) bool {
			return len(rs) == 1 && rs[0].Journal != nil && rs[0].Journal.Name == "Journal of Physics: Conference Series"
		})
	check("a title that starts like a label", head+strings.Replace(a, "Consensus Latency Bounds under Partial Synchrony 部分", "Abstract: A Theory of Summaries 部分", 1)+"引用次数: 3\n"+foot, true, nil)
	check("an abstract that starts like a volume line", head+strings.Replace(strings.Replace(a, obj("Consensus Latency Bounds under Partial Synchrony", "10.1000/abc.1", "10000"), "", 1),
		"Ada Novak, Peter Lindqvist\n", "Ada Novak, Peter Lindqvist\nVol. 12 of the survey series covers consensus, and this one proves a bound.\n", 1)+"引用次数: 3\n"+foot, false,
		func(rs []record.Record) bool {
			return len(rs) == 1 && strings.HasPrefix(rs[0].Abstract, "Vol. 12 of the survey")
		})
	check("one site id for two papers", head+a+"引用次数: 3\n"+strings.Replace(b, `"paperid":"10001"`, `"paperid":"10000"`, 1)+"引用次数: 4\n"+foot, true, nil)
	check("an impact line after the citation line", head+a+"引用次数: 3\nIF 2.1 1区 计算机科学\n"+b+"引用次数: 4\nIF 3 2区 数学\n"+foot, true, nil)
	// A short link to the paper's page inside a block is no paper.
	html := `<html><body><h2>Journal of Drift最新文献</h2><div class="item"><h3>Consensus Latency Bounds under Partial Synchrony</h3><div>部分同步下的共识延迟界</div>` +
		`<div>Published: 2024-09-02</div><div>DOI: 10.1000/abc.1</div><div>Ada Novak, Peter Lindqvist</div><div>We prove a tight bound on rounds, and that it is tight.</div>` +
		`<div><a href="/literature/9001.htm">Full text</a></div><div>Cited by 3</div></div><p>京ICP备2023020795号-1</p></body></html>`
	check("a tool link to the paper's page", html, false, func(rs []record.Record) bool {
		return len(rs) == 1 && rs[0].Citations != nil && *rs[0].Citations == 3
	})
}

// A NUL in a JSON paperid (and an ESC, a line break elsewhere) never
// reaches a record: PostgreSQL refuses a NUL, and one such paper would
// stop delivery for good. The id, doi and doi_url are cleaned, with a page
// warning.
func TestControlCharactersNeverInARecord(t *testing.T) {
	data, err := readRepoFile("fixtures/html/desktop/literature_d3342_3.htm")
	if err != nil {
		t.Fatal(err)
	}
	page := strings.Replace(string(data), `"paperid":"151002311"`, `"paperid":"151002311\u0000\u001b[2J"`, 1)
	page = strings.Replace(page, `"journal":{"name":"Journal of Distributed Computing Systems"`, `"journal":{"name":"Journal of\u0007 Distributed Computing Systems"`, 1)
	if page == string(data) {
		t.Fatal("fixture changed: no paperid to poison")
	}
	p, err := Parse([]byte(page), Options{Capture: "x.htm", RunID: "run\u0000\u001bid"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Records) == 0 {
		t.Fatal("no record")
	}
	for _, r := range p.Records {
		if v := controlIn(r); v != "" {
			t.Errorf("control character in %q", v)
		}
	}
	if !slices.Contains(p.Warnings, PageWarnControlChars) {
		t.Errorf("no %s page warning: %v", PageWarnControlChars, p.Warnings)
	}
}

// controlIn is a string of r's JSON that holds a control character, or "".
func controlIn(r record.Record) string {
	b, _ := json.Marshal(r)
	var v any
	json.Unmarshal(b, &v)
	var walk func(any) string
	walk = func(x any) string {
		switch x := x.(type) {
		case string:
			if record.HasControl(x) {
				return x
			}
		case []any:
			for _, e := range x {
				if s := walk(e); s != "" {
					return s
				}
			}
		case map[string]any:
			for _, e := range x {
				if s := walk(e); s != "" {
					return s
				}
			}
		}
		return ""
	}
	return walk(v)
}
