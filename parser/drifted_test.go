package parser

import (
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
	want := []string{"furniture/above the listing's heading", "furniture/header, navigation, filter or language switch", "heading/the listing's heading",
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
