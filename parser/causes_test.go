package parser

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/record"
)

// The causes of the parser's misses on real listing pages, one fixture
// each (the goldens hold every field; these name what each fixture is for).
func TestRealTextCauses(t *testing.T) {
	t.Run("a Chinese title that begins with Latin words", func(t *testing.T) {
		p := parseFixture(t, "fixtures/edge/latin-led-cn-title.txt")
		want := [][2]string{
			{"Automated Testing of C/C++ Embedded Projects", "C/C++ 嵌入式项目的自动化测试"},
			{"FedSense: Federated Sensing at the Network Edge", "FedSense: 网络边缘的联邦感知"},
			{"Scheduling LLM Inference on Shared GPU Clusters", "GPU 集群上的 LLM 推理调度"},
			{"Benchmarking GPU Kernels on the GPU", "在GPU上对内核进行基准测试"},
		}
		if len(p.Records) != len(want) {
			t.Fatalf("%d records, want %d", len(p.Records), len(want))
		}
		for i, w := range want {
			if r := p.Records[i]; r.Title != w[0] || r.TitleCN != w[1] {
				t.Errorf("record %d: %q | %q, want %q | %q", i+1, r.Title, r.TitleCN, w[0], w[1])
			}
		}
	})
	t.Run("lines before the head", func(t *testing.T) {
		p := parseFixture(t, "fixtures/edge/abstract-first.txt")
		if len(p.Records) != 3 {
			t.Fatalf("%d records, want 3", len(p.Records))
		}
		second, last := p.Records[1], p.Records[2]
		if second.Abstract == "" || second.AbstractCN == "" || p.Records[0].AbstractCN != "" {
			t.Errorf("a block opening with its abstracts (JSON abstract empty): abstract %q, abstract_cn %q; the block before it: abstract_cn %q",
				second.Abstract, second.AbstractCN, p.Records[0].AbstractCN)
		}
		if last.Abstract == "" || last.AbstractCN == "" || !slices.Contains(last.Warnings, record.WarnJSONTruncated) {
			t.Errorf("a block opening with its abstract, JSON cut in it: abstract %q, abstract_cn %q, warnings %q", last.Abstract, last.AbstractCN, last.Warnings)
		}
	})
	t.Run("blocks in any line order", func(t *testing.T) {
		p := parseFixture(t, "fixtures/edge/line-order.txt")
		want := []string{"90410201", "90410202", "90410203", "90410204", "doi:10.5555/jes.2025.0205", "90410206"}
		if got := ids(p.Records); !slices.Equal(got, want) {
			t.Fatalf("ids %q, want %q", got, want)
		}
		for _, r := range p.Records {
			if r.TitleCN == "" || r.Citations == nil || r.Published == "" || len(r.Authors) == 0 {
				t.Errorf("%s: title_cn %q citations %v published %q authors %q", r.ID, r.TitleCN, r.Citations, r.Published, r.Authors)
			}
		}
	})
	t.Run("a cut nested journal object", func(t *testing.T) {
		p := parseFixture(t, "fixtures/edge/cut-journal.txt")
		if len(p.Records) != 1 {
			t.Fatalf("%d records", len(p.Records))
		}
		if j := p.Records[0].Journal; j == nil || j.Name != "Cell Reports Physical Science" || j.Volume != "269" || j.Pages != "" {
			t.Errorf("journal %+v", j)
		}
	})
	t.Run("volume and issue run together", func(t *testing.T) {
		p := parseFixture(t, "fixtures/edge/volume-issue.txt")
		want := [][2]string{{"8", "1"}, {"419", "1"}, {"", ""}, {"245", ""}, {"12", "3-4"}, {"Suppl 2", ""}}
		for i, w := range want {
			j := p.Records[i].Journal
			if j.Volume != w[0] || j.Issue != w[1] {
				t.Errorf("record %d: volume %q issue %q, want %q %q", i+1, j.Volume, j.Issue, w[0], w[1])
			}
		}
	})
	t.Run("cut visible text", func(t *testing.T) {
		p := parseFixture(t, "fixtures/edge/cut-cn-abstract.htm")
		if len(p.Records) != 2 || slices.Contains(p.Records[0].Warnings, record.WarnTextTruncated) ||
			!slices.Contains(p.Records[1].Warnings, record.WarnTextTruncated) || !slices.Contains(p.Warnings, PageWarnTextTruncated) {
			t.Errorf("records %d, warnings %q / %q, page %q", len(p.Records), p.Records[0].Warnings, p.Records[1].Warnings, p.Warnings)
		}
		for _, rel := range []string{"fixtures/seeds/001_04a786490eff8f10.txt", "fixtures/seeds/000_92928c0d02c94ff5.txt", "fixtures/html/li-classes/literature_d501422.htm"} {
			if p := parseFixture(t, rel); slices.Contains(p.Warnings, PageWarnTextTruncated) {
				t.Errorf("%s is whole, but warned %q", rel, p.Warnings)
			}
		}
	})
}

func TestSplitVolume(t *testing.T) {
	for in, want := range map[string][2]string{
		"8 1": {"8", "1"}, "419 1": {"419", "1"}, "12 3-4": {"12", "3-4"}, "12 3/4": {"12", "3/4"},
		"PP": {"", ""}, "PP 99": {"", ""}, "pp": {"", ""}, "245": {"245", ""}, "Suppl 2": {"Suppl 2", ""},
		"12 A": {"12 A", ""}, "": {"", ""}, "1 2 3": {"1 2 3", ""},
	} {
		if v, i := splitVolume(in); v != want[0] || i != want[1] {
			t.Errorf("splitVolume(%q) = %q, %q; want %q, %q", in, v, i, want[0], want[1])
		}
	}
}

// An object that copies a paper's DOI (an advert in the block, say) and
// that no visible line shows never stands for the paper: one record, the
// paper's, whichever comes first.
func TestCopiedDOIDoesNotTakeThePaper(t *testing.T) {
	// An advert with the paper's own id on its title line, and the real
	// object's names in another order: the real object is the record.
	if p := parseFixture(t, "fixtures/edge/advert-same-id.htm"); len(p.Records) != 1 || p.Records[0].Abstract != "We parse listing pages robustly, whatever their markup." {
		t.Errorf("advert with the paper's id: %+v", p.Records)
	}
	real := `{"title":"Real Paper on Queues","authors":"Ann Lee, Bo Chen","doi":"10.5555/q.1","paperid":"111"}`
	fake := `{"title":"Buy Now","authors":"Shop","doi":"10.5555/q.1","paperid":"999"}`
	for name, page := range map[string]string{
		"fake first": "Real Paper on Queues 关于队列的真实论文\nJ Pub Date : 2024-01-02 DOI: 10.5555/q.1\n" + fake + "\nAnn Lee, Bo Chen\n" + real + "\n引用次数: 1\n",
		"fake after": "Real Paper on Queues 关于队列的真实论文\nJ Pub Date : 2024-01-02 DOI: 10.5555/q.1\nAnn Lee, Bo Chen\n" + real + "\n" + fake + "\n引用次数: 1\n",
	} {
		p, err := Parse([]byte(page), Options{Format: FormatText})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Records) != 1 || p.Records[0].ID != "111" || p.Records[0].Title != "Real Paper on Queues" {
			t.Errorf("%s: %d records: %+v", name, len(p.Records), p.Records)
		}
	}
}

// Two papers may share a title: an Editorial with JSON followed by one
// without, in the site's order, are two records with their own titles.
func TestSameTitleNeighbours(t *testing.T) {
	page := "J最新文献\nEditorial 社论一\nIF 2 4区 计算机科学\nJ Pub Date : 2025-02-26 DOI: 10.5555/e.40\nDara Fox, Hana Sato\n" +
		`{"title":"Editorial","authors":"Dara Fox, Hana Sato","doi":"10.5555/e.40","abstract":"","paperid":"9040"}` + "\n引用次数: 42\n" +
		"Editorial 社论二\nIF 2 4区 计算机科学\nJ Pub Date : 2025-07-25 DOI: 10.5555/e.41\nIvo Kral, Ming Hu\n引用次数: 37\n"
	p, err := Parse([]byte(page), Options{Format: FormatText})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Records) != 2 {
		t.Fatalf("%d records", len(p.Records))
	}
	a, b := p.Records[0], p.Records[1]
	if a.ID != "9040" || a.TitleCN != "社论一" || a.AbstractCN != "" || *a.Citations != 42 ||
		b.ID != "doi:10.5555/e.41" || b.Title != "Editorial" || b.TitleCN != "社论二" || *b.Citations != 37 {
		t.Errorf("records:\n%+v\n%+v", a, b)
	}
}

// Neighbouring blocks keep their papers: a block without JSON is not
// taken into the block before it for sharing its names or a boilerplate
// abstract, for showing the DOI that block's JSON wrongly gives, or for
// having neither head nor Chinese title; two papers that give one DOI
// stay two, even with one title (Preface) when their site ids differ (the
// DOI stays with one, doi-conflict on the other).
func TestNeighboursKeepTheirPapers(t *testing.T) {
	for _, tt := range []struct {
		page string
		ids  []string
	}{
		{"fixtures/edge/neighbours-same-authors.txt", []string{"1001", "doi:10.5555/b"}},
		{"fixtures/edge/mismatch-next-doi.txt", []string{"1001", "doi:10.5555/b"}},
		{"fixtures/edge/no-head-no-json.txt", []string{"1001", "title:4cc8be5875b63b50", "1003"}},
		{"fixtures/edge/shared-doi.txt", []string{"1001", "1002"}},
		{"fixtures/edge/same-title-shared-doi.txt", []string{"1001", "1002"}},
		{"fixtures/edge/visible-doi-of-next.txt", []string{"1001", "1002"}},
		{"fixtures/edge/erratum-after-json.txt", []string{"1001", "title:ab55413cb8cb40a8"}},
		{"fixtures/edge/neighbour-without-doi.txt", []string{"1001", "title:4e7a16f0735da4c9"}},
	} {
		p := parseFixture(t, tt.page)
		if got := ids(p.Records); !slices.Equal(got, tt.ids) {
			t.Errorf("%s: ids %q, want %q", tt.page, got, tt.ids)
			continue
		}
		if err := uniquePapers(p.Records); err != nil {
			t.Errorf("%s: %v", tt.page, err)
		}
	}
	p := parseFixture(t, "fixtures/edge/shared-doi.txt")
	if p.Records[0].DOI == "" || p.Records[1].DOI != "" || !slices.Contains(p.Records[1].Warnings, record.WarnDOIConflict) {
		t.Errorf("shared DOI: %q %q / %q %q", p.Records[0].DOI, p.Records[0].Warnings, p.Records[1].DOI, p.Records[1].Warnings)
	}
}

// Where a page is cut: inside a script after a string that holds
// "</body>", inside a JSON object's first key, after the footer (the
// last block is whole), and a whole page with scripts past its closing tags.
func TestTextTruncatedEdges(t *testing.T) {
	lastWarned := func(p *Page) bool {
		return slices.Contains(p.Records[len(p.Records)-1].Warnings, record.WarnTextTruncated)
	}
	for rel, want := range map[string]bool{
		// Whole blocks (ending with their JSON, their citation line)
		// before the cut: the page is cut, not the record.
		"fixtures/edge/cut-in-script.htm":   false,
		"fixtures/edge/cut-open-object.txt": false,
		"fixtures/edge/footer-then-cut.htm": false,
	} {
		if p := parseFixture(t, rel); lastWarned(p) != want || !slices.Contains(p.Warnings, PageWarnTextTruncated) {
			t.Errorf("%s: last record warned %v, want %v; page warnings %q", rel, lastWarned(p), want, p.Warnings)
		}
	}
	data, err := readRepoFile("fixtures/edge/hostile-json.htm")
	if err != nil {
		t.Fatal(err)
	}
	whole := string(data) + "\n<script>" + strings.Repeat("var a = 1; // </body>\n", 4000) + "</script>\n"
	if p, _ := Parse([]byte(whole), Options{}); slices.Contains(p.Warnings, PageWarnTextTruncated) {
		t.Errorf("a whole page with 90 KB of script after </html> is taken as cut: %q", p.Warnings)
	}
}

// Out-of-range values never reach a record: a zone other than 1 to 4, a
// negative journal id.
func TestOutOfRangeValuesDropped(t *testing.T) {
	for _, r := range parseFixture(t, "fixtures/edge/out-of-range.txt").Records {
		if r.Zone > 4 || r.Journal != nil && r.Journal.ID < 0 {
			t.Errorf("%s: zone %d journal %+v", r.ID, r.Zone, r.Journal)
		}
	}
}

// Every segment stays within maxBlockLines, whatever the page: the work
// on one is bounded, and a page's parse stays linear in its size.
func TestSegmentsAreBounded(t *testing.T) {
	pages := map[string]string{
		"text lines":       strings.Repeat("x\n", 5000),
		"impact lines":     `{"title":"A","doi":"10.1/a","paperid":"1"}` + "\n" + strings.Repeat("IF 2\n", 5000) + `{"title":"B","doi":"10.1/b","paperid":"2"}` + "\n",
		"citation lines":   `{"title":"A","doi":"10.1/a","paperid":"1"}` + "\n" + strings.Repeat("引用次数: 1\n", 5000),
		"names after JSON": `{"title":"A","doi":"10.1/a","paperid":"1"}` + "\n" + strings.Repeat("Ann Lee, Bo Chen\n", 5000),
	}
	for name, page := range pages {
		lines, base, err := readLines([]byte(page), Options{Format: FormatText}, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range parseLines(lines, base, Options{}) {
			if len(s.lines) > maxBlockLines {
				t.Errorf("%s: a segment of %d lines", name, len(s.lines))
			}
		}
	}
}

// TestCutEnds holds the one policy for a capture's end: a block the
// capture cut is kept, its record flagged text-truncated, its kept lines
// read as its fields; the start of a next block cut before it names its
// paper is a page warning; neither is a finding (a cut end alone never
// exits 4).
func TestCutEnds(t *testing.T) {
	for _, tc := range []struct {
		page       string
		records    int
		lastWarned bool
		check      func(r record.Record) bool
	}{
		// A short Chinese abstract cut at the end: kept.
		{"fixtures/edge/cut-short-cn-abstract.txt", 3, true, func(r record.Record) bool { return r.AbstractCN == "本文提出一种面向" }},
		// Cut on a sentence end ("。") where the page's blocks go on to
		// their JSON: the block lacks the part every other one has.
		{"fixtures/edge/cut-on-sentence.txt", 3, true, func(r record.Record) bool { return r.AbstractCN == "我们研究了分布式缓存问题。" }},
		// The next paper's title cut mid-word after a whole block.
		{"fixtures/edge/cut-next-title.txt", 2, false, func(r record.Record) bool { return r.DOI == "10.1109/tcc.2024.002" }},
		// A mobile page cut inside the last JSON's abstract: kept, cut.
		{"fixtures/edge/cut-json-abstract.txt", 2, true, func(r record.Record) bool { return r.Abstract == "We study edge learning case 2. It" }},
	} {
		p := parseFixture(t, tc.page)
		if len(p.Records) != tc.records || !slices.Contains(p.Warnings, PageWarnTextTruncated) {
			t.Errorf("%s: %d records, page warnings %q; want %d and text-truncated", tc.page, len(p.Records), p.Warnings, tc.records)
			continue
		}
		last := p.Records[len(p.Records)-1]
		if slices.Contains(last.Warnings, record.WarnTextTruncated) != tc.lastWarned || !tc.check(last) {
			t.Errorf("%s: last record warnings %q (want text-truncated %v), %+v", tc.page, last.Warnings, tc.lastWarned, last)
		}
		if f := p.Findings(time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)); len(f) > 0 {
			t.Errorf("%s: a cut end raised findings: %+v", tc.page, f)
		}
	}
	// Not cut ends but misreadings that end like one, or pages that
	// cannot be told from such a misreading: their last paper's missing
	// names alarm. (The pages are inline: the fixtures are pages read
	// right.)
	for _, tc := range []struct{ name, page string }{
		// Blocks that lead with their names (a names line no block took
		// stands before the first), read as each block's last line: the
		// last block lacks its names and the citation line every other
		// one has.
		{"names lead, citation lines", namesLeadCut},
		// A text capture without JSON or citation lines whose last block
		// stops at its date/DOI line while every other goes on: cut
		// there, or blocks leading with their names (the first paper's
		// shown without) read shifted by one, as the next page is.
		{"stops at its date/DOI line", stopsAtDOI},
		{"names lead, the first paper without", namesLeadFirstWithout},
	} {
		p, err := Parse([]byte(tc.page), Options{Capture: "page.txt"})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, f := range p.Findings(time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)) {
			found = found || f.Field == "authors" && f.Position == len(p.Records)
		}
		if !found {
			t.Errorf("%s: the last paper's missing names raised no finding", tc.name)
		}
	}
}

// stopsAtDOI: the last block stops right after its date/DOI line.
const stopsAtDOI = `Journal of Network Systems最新文献

Adaptive Routing in Mesh Networks 网状网络中的自适应路由

IF 2.4 3区 计算机科学

Journal of Network Systems Pub Date : 2024-06-03 DOI: 10.1000/jns.2024.0101

Rosa Delgado, Farid Haddad

We study adaptive routing in wireless mesh networks. Our scheme lowers delay under load. Field trials on two campuses confirm it.

Congestion Control for Satellite Links 卫星链路的拥塞控制

IF 2.4 3区 计算机科学

Journal of Network Systems Pub Date : 2024-06-02 DOI: 10.1000/jns.2024.0102

王磊, 李娜

We revisit congestion control over long-delay satellite links. A delay-based controller keeps queues short. Simulations and a testbed agree.

Energy-Aware Scheduling for Edge Clusters 边缘集群的能耗感知调度

IF 2.4 3区 计算机科学

Journal of Network Systems Pub Date : 2024-06-01 DOI: 10.1000/jns.2024.0103

Olu Adeyemi, Petra Novak

We schedule jobs on edge clusters with energy budgets. The scheduler cuts energy by a fifth. Traces from a city deployment show the savings.

Secure Aggregation for Sensor Fleets 传感器群的安全聚合

IF 2.4 3区 计算机科学

Journal of Network Systems Pub Date : 2024-05-30 DOI: 10.1000/jns.2024.0104
`

// namesLeadFirstWithout: each block's names stand before its title, the
// first paper's are not shown, and the last block ends at its date/DOI
// line (whole).
const namesLeadFirstWithout = `Journal of Network Systems最新文献

Adaptive Routing in Mesh Networks 网状网络中的自适应路由

IF 2.4 3区 计算机科学

Journal of Network Systems Pub Date : 2024-06-03 DOI: 10.1000/jns.2024.0101

We study adaptive routing in wireless mesh networks. Our scheme lowers delay under load. Field trials on two campuses confirm it.

Rosa Delgado, Farid Haddad

Congestion Control for Satellite Links 卫星链路的拥塞控制

IF 2.4 3区 计算机科学

Journal of Network Systems Pub Date : 2024-06-02 DOI: 10.1000/jns.2024.0102

We revisit congestion control over long-delay satellite links. A delay-based controller keeps queues short. Simulations and a testbed agree.

Olu Adeyemi, Petra Novak

Energy-Aware Scheduling for Edge Clusters 边缘集群的能耗感知调度

IF 2.4 3区 计算机科学

Journal of Network Systems Pub Date : 2024-06-01 DOI: 10.1000/jns.2024.0103

We schedule jobs on edge clusters with energy budgets. The scheduler cuts energy by a fifth. Traces from a city deployment show the savings.

Mei Tanaka, Jonas Berg

Secure Aggregation for Sensor Fleets 传感器群的安全聚合

IF 2.4 3区 计算机科学

Journal of Network Systems Pub Date : 2024-05-30 DOI: 10.1000/jns.2024.0104
`

// namesLeadCut is a page whose blocks lead with their names, its last
// block without the citation line every other one has.
const namesLeadCut = `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Journal of Drift最新文献</title></head><body>
<h2>Journal of Drift最新文献</h2>
<div><div>Alice Zhang, Bob Li</div><h3>Fast Graph Partitioning for Sparse Workloads</h3><div>Graph partitioning is central to sparse workloads. We present a fast partitioner.</div><div>Published: 2024/09/02 DOI： 10.1109/tst.2024.001</div><div>Cited by 42</div></div>
<div><div>Giuseppe A. Di Luna, Giovanni Viglietta</div><h3>Universal Finite-State Computation in Anonymous Networks</h3><div>A network is said to be anonymous if its agents are indistinguishable. We study what it computes.</div><div>Published: 2024/09/01 DOI： 10.48550/arXiv.2409.00688</div><div>Cited by 13</div></div>
<div><div>Ines Costa, Wei Lan</div><h3>Scheduling Sensing Tasks Across Energy Bursts</h3><div>Published: 2025/01/22 DOI： 10.5555/jes.2025.0101</div><div>IF 3.1 2区 物理与天体物理</div><div>Cited by 61</div></div>
<div><div>Nicolas Bousquet, Laurent Feuilloley</div><h3>How local constraints influence network diameter</h3><div>Published: 2024/09/02 DOI： 10.48550/arXiv.2409.01305</div><div>1区 医学</div></div>
</body></html>
`

// A line of names before the first paper, which no paper took, is a
// finding (the blocks may lead with their names, each read as its
// neighbour's); page furniture before it is not.
func TestNamesBeforeTheFirstPaper(t *testing.T) {
	block := func(title, doi string) string {
		return title + "\n\nJournal of Network Systems Pub Date : 2024-06-03 DOI: " + doi + "\n\nRosa Delgado, Farid Haddad\n\n" +
			"We study adaptive routing in wireless mesh networks. Our scheme lowers delay under load.\n\n"
	}
	body := block("Adaptive Routing in Mesh Networks", "10.1000/jns.1") + block("Congestion Control for Satellite Links", "10.1000/jns.2") +
		block("Energy-Aware Scheduling for Edge Clusters", "10.1000/jns.3")
	for _, tc := range []struct {
		lead string
		want bool
	}{
		{"Mei Tanaka, Jonas Berg", true},
		{"王磊, 李娜", true},
		{"筛选", false},
		{"首页 > 最新文献", false},
	} {
		// (A text capture's lines before the first title join its
		// block; in this HTML page, whose blocks lead with their names,
		// they are a piece of their own.)
		li := func(names, id, title, doi string) string {
			return "<li><p>" + names + `</p><p><a class="title" href="/literature/` + id + `.htm">` + title + "</a></p><p>Pub Date : 2025/03/01 DOI: " + doi +
				"</p><p>We study " + strings.ToLower(title) + " in a way that is long enough to be an abstract.</p></li>"
		}
		html := "<html><body><h2>Journal of Network Systems最新文献</h2><ul>" + li(tc.lead, "1001", "First Paper on Graphs", "10.1000/a.1") +
			li("陈静", "1002", "Scheduling Under Uncertainty", "10.1000/a.2") + li("Chen Wu, Dara Fox", "1003", "Quorum Leases Revisited", "10.1000/a.3") +
			li("Ana Costa", "1004", "Gossip Protocols Revisited", "10.1000/a.4") + "</ul></body></html>"
		for _, page := range []string{"Journal of Network Systems最新文献\n\n" + tc.lead + "\n\n" + body, html} {
			p, err := Parse([]byte(page), Options{Capture: "page"})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, f := range p.Findings(testNow) {
				found = found || f.Position == 1 && strings.Contains(f.Why, "before")
			}
			if found != tc.want {
				t.Errorf("%q before the first paper: finding %v, want %v (%.40q…)", tc.lead, found, tc.want, page)
			}
		}
	}
}
