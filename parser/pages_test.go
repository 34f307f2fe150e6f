package parser

import (
	"slices"
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/record"
)

// core is what must not depend on the markup a paper came in.
type core struct {
	ID, DOI, Title, TitleCN, Published string
	Authors                            string
	HasAbstract                        bool
}

func cores(recs []record.Record) []core {
	out := make([]core, len(recs))
	for i, r := range recs {
		out[i] = core{r.ID, r.DOI, r.Title, r.TitleCN, r.Published, strings.Join(r.Authors, "|"), r.Abstract != ""}
	}
	return out
}

// The same papers laid out in other markups give the same records as the
// text capture they were taken from.
func TestMarkupsAgreeWithSeeds(t *testing.T) {
	seed0 := parseFixture(t, "fixtures/seeds/000_92928c0d02c94ff5.txt").Records
	seed1 := parseFixture(t, "fixtures/seeds/001_04a786490eff8f10.txt").Records
	var seed0JSON []record.Record
	for _, r := range seed0 {
		if !slices.Contains(r.Warnings, record.WarnNoJSON) {
			seed0JSON = append(seed0JSON, r)
		}
	}
	tests := []struct {
		page string
		want []record.Record
	}{
		{"fixtures/html/li-classes/literature_d501422.htm", seed0},
		{"fixtures/html/script-json/literature_d501422_4.htm", seed0JSON},
		{"fixtures/html/flat-p/literature_d501422_2.htm", seed1},
		{"fixtures/html/table-br/literature_d501422_5.htm", seed1[:5]},
	}
	for _, tt := range tests {
		t.Run(tt.page, func(t *testing.T) {
			got := cores(parseFixture(t, tt.page).Records)
			want := cores(tt.want)
			if tt.page != "fixtures/html/li-classes/literature_d501422.htm" && tt.page != "fixtures/html/script-json/literature_d501422_4.htm" {
				// Seed 001 lost its title lines; these pages show them but
				// have no Chinese title.
				for i := range want {
					want[i].TitleCN = ""
				}
			}
			if i, w, g, differ := firstDiff(want, got); differ {
				t.Errorf("record %d:\n got %+v\nwant %+v", i+1, g, w)
			}
		})
	}
}

func TestPageFacts(t *testing.T) {
	tests := []struct {
		page                       string
		records                    int
		heading, footer, isListing bool
		journal                    int64
		pageNo                     int
		charset                    string
		warnings                   []string
	}{
		{"fixtures/edge/captcha.htm", 0, false, false, false, 0, 0, "utf-8", nil},
		{"fixtures/edge/noise-only.htm", 0, true, true, true, 0, 99, "utf-8", nil},
		{"fixtures/edge/gbk.htm", 2, true, true, true, 7788, 2, "gbk", nil},
		{"fixtures/edge/gb18030-undeclared.txt", 1, true, true, true, 0, 3, "gb18030", []string{PageWarnCharsetGuessed}},
		{"fixtures/edge/truncated-mid-json.htm", 5, true, false, true, 501422, 0, "utf-8", []string{PageWarnTextTruncated}},
		{"fixtures/html/desktop/literature_d3342_3.htm", 5, true, true, true, 3342, 3, "utf-8", nil},
		{"fixtures/seeds/001_04a786490eff8f10.txt", 10, false, true, true, 501422, 0, "utf-8", nil},
	}
	for _, tt := range tests {
		t.Run(tt.page, func(t *testing.T) {
			p := parseFixture(t, tt.page)
			if len(p.Records) != tt.records || p.HeadingSeen != tt.heading || p.FooterSeen != tt.footer ||
				p.IsListing() != tt.isListing || p.JournalID != tt.journal || p.PageNo != tt.pageNo ||
				p.Charset != tt.charset || !slices.Equal(p.Warnings, tt.warnings) {
				t.Errorf("got records=%d heading=%v footer=%v listing=%v journal=%d page=%d charset=%s warnings=%q",
					len(p.Records), p.HeadingSeen, p.FooterSeen, p.IsListing(), p.JournalID, p.PageNo, p.Charset, p.Warnings)
			}
		})
	}
}

func TestTruncatedPageFallsBack(t *testing.T) {
	p := parseFixture(t, "fixtures/edge/truncated-mid-json.htm")
	last := p.Records[len(p.Records)-1]
	if !slices.Equal(last.Warnings, []string{record.WarnJSONTruncated, record.WarnTextTruncated}) || last.ID != "doi:arxiv-2409.00848" ||
		last.Title == "" || last.Published != "2024-09-01" || !strings.HasSuffix(last.Abstract, "We present the first") {
		t.Errorf("cut-off block: %+v", last)
	}
}

func TestDesktopFields(t *testing.T) {
	recs := parseFixture(t, "fixtures/html/desktop/literature_d3342_3.htm").Records
	r := recs[0]
	if r.ImpactFactor != 1.2 || r.Zone != 4 || r.Subject != "计算机科学" || r.JCRQuartile != "Q3" ||
		r.JCRCategory != "COMPUTER SCIENCE, HARDWARE & ARCHITECTURE" || r.Journal.Volume != "245" ||
		r.Journal.Pages != "Article 103313" || r.DOIURL != "https://doi.org/10.1016/j.jdcs.2024.103313" || len(r.Warnings) != 0 {
		t.Errorf("desktop record 1: %+v (the DOI differs only in case from the visible one: no mismatch)", r)
	}
	if !strings.Contains(r.Abstract, "delay d>τ exceeds") || strings.Contains(r.Abstract, "<") {
		t.Errorf("MathML and <p> must be stripped: %q", r.Abstract)
	}
	if recs[1].ImpactFactor != 0 || !slices.Equal(recs[1].Authors, []string{"Ada Novak", "Peter Lindqvist", "Chen Hao"}) {
		t.Errorf("record 2: IF=%v authors=%q", recs[1].ImpactFactor, recs[1].Authors)
	}
	if recs[2].Abstract == "" || recs[2].AbstractCN == "" {
		t.Errorf("record 3: an empty JSON abstract falls back to the visible one: %+v", recs[2])
	}
	if !slices.Equal(recs[3].Warnings, []string{record.WarnJSONVisibleMismatch}) || recs[3].DOI != "10.1016/j.jdcs.2024.103402" ||
		recs[3].Published != "2024-05-07" || recs[3].TitleCN != "远程工作对软件缺陷密度的影响：一项队列研究。" {
		t.Errorf("record 4: visible DOI differs: keep the JSON one and warn: %+v", recs[3])
	}
}

func TestNoiseNeverLeaks(t *testing.T) {
	noise := []string{"京公网安备", "京ICP备", "扫码关注我们", "求助内容", "应助结果提醒方式", "筛选", "上一页", "下一页", "最新文献"}
	for _, rel := range fixturePages(t) {
		for _, r := range parseFixture(t, rel).Records {
			fields := []string{r.Title, r.TitleCN, r.Abstract, r.AbstractCN, strings.Join(r.Authors, ","), r.Subject}
			for _, f := range fields {
				for _, n := range noise {
					if strings.Contains(f, n) {
						t.Errorf("%s %s: %q leaked into %q", rel, r.ID, n, f)
					}
				}
			}
		}
	}
}

func TestFormatsAndOptions(t *testing.T) {
	html := []byte("<html><body><p>T 标题</p><p>J Pub Date : 2024-01-02 DOI: 10.1/a</p><p>X Y</p><p>引用次数: 1</p></body></html>")
	p, err := Parse(html, Options{URL: "https://m.booksci.cn/literature_d9_4.htm", Journal: 9, Page: 4, RunID: "r1"})
	if err != nil || len(p.Records) != 1 {
		t.Fatalf("records=%v err=%v", p, err)
	}
	s := p.Records[0].Source
	if s.URL != "https://m.booksci.cn/literature_d9_4.htm" || s.Capture != s.URL || s.Page != 4 || s.RunID != "r1" || p.Records[0].Journal.ID != 9 {
		t.Errorf("source = %+v journal=%+v", s, p.Records[0].Journal)
	}
	// Forced text: the markup is then just text and yields nothing sensible,
	// but never panics.
	if _, err := Parse(html, Options{Format: FormatText}); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(html, Options{Charset: "no-such-charset"}); err == nil || !strings.Contains(err.Error(), "no-such-charset") {
		t.Errorf("unknown charset: err = %v", err)
	}
	if _, err := ParseFormat("pdf"); err == nil {
		t.Error("ParseFormat(pdf) must fail")
	}
}

// A page nested deeper than html.Parse accepts is still read, from its
// token stream, with the same records.
func TestDeeplyNestedPageFallsBackToTokens(t *testing.T) {
	data, err := readRepoFile("fixtures/html/li-classes/literature_d501422.htm")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	i := strings.Index(s, "<ul")
	deep := s[:i] + strings.Repeat("<span>", 600) + s[i:]
	p, err := Parse([]byte(deep), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := parseFixture(t, "fixtures/html/li-classes/literature_d501422.htm")
	if !slices.Equal(p.Warnings, []string{PageWarnHTMLFallback}) || !p.HeadingSeen || !p.FooterSeen {
		t.Errorf("warnings=%q heading=%v footer=%v", p.Warnings, p.HeadingSeen, p.FooterSeen)
	}
	if got, w := cores(p.Records), cores(want.Records); !slices.Equal(got, w) {
		t.Errorf("token fallback records differ:\n got %+v\nwant %+v", got, w)
	}
}

// Hidden elements are not visible text, but the JSON kept in them (even
// split by inline tags) is read; other hidden text never reaches a record.
func TestHiddenElements(t *testing.T) {
	page := `<html><body><ul><li>
<p>Hidden Gems 隐藏的宝石</p>
<div style="display: none">menu text that must not show</div>
<p>J Pub Date : 2024-01-02 DOI: 10.1/hg</p>
<p>Ann Lee</p>
<div hidden>{"title":"Hidden Gems","authors":"Ann Lee","doi":"10.1/hg","abstract":"An <i>italic</i> word.","paperid":"555"}</div>
<p>引用次数: 2</p></li></ul></body></html>`
	p, err := Parse([]byte(page), Options{})
	if err != nil || len(p.Records) != 1 {
		t.Fatalf("records=%d err=%v", len(p.Records), err)
	}
	r := p.Records[0]
	if r.ID != "555" || r.Abstract != "An italic word." || r.TitleCN != "隐藏的宝石" || len(r.Warnings) != 0 {
		t.Errorf("record = %+v", r)
	}
	b := encodeJSONL(t, p.Records)
	if strings.Contains(string(b), "menu text") {
		t.Errorf("hidden text leaked: %s", b)
	}
}

// The charset may come from the HTTP header or be forced; both win over the
// guess, and a wrong forced charset never panics.
func TestCharsetFromHeaderAndOverride(t *testing.T) {
	data, err := readRepoFile("fixtures/edge/gb18030-undeclared.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, opts := range []Options{
		{ContentType: "text/plain; charset=GBK"},
		{Charset: "gb18030"},
	} {
		p, err := Parse(data, opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Records) != 1 || p.Records[0].TitleCN != "分布式事务的乐观并发控制" || len(p.Warnings) != 0 {
			t.Errorf("%+v: records=%+v warnings=%q", opts, p.Records, p.Warnings)
		}
	}
	p, err := Parse(data, Options{Charset: "big5"})
	if err != nil || p.Charset != "big5" {
		t.Errorf("forced big5: charset=%q err=%v", p.Charset, err)
	}
}
