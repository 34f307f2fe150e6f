package parser

import (
	"slices"
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/record"
)

// The seeds are text captures of real pages; these facts were read off them
// by hand and are what a user of the records relies on.

func TestSeed000MobilePage7(t *testing.T) {
	page := parseFixture(t, "fixtures/seeds/000_92928c0d02c94ff5.txt")
	if got := len(page.Records); got != 10 {
		t.Fatalf("records = %d, want 10", got)
	}
	if !page.HeadingSeen || page.FooterSeen || page.PageNo != 7 || page.JournalID != 501422 {
		t.Errorf("page facts: heading=%v footer=%v page=%d journal=%d, want true false 7 501422",
			page.HeadingSeen, page.FooterSeen, page.PageNo, page.JournalID)
	}
	withJSON, noJSON := 0, []string{}
	for _, r := range page.Records {
		if slices.Contains(r.Warnings, record.WarnNoJSON) {
			noJSON = append(noJSON, r.Title)
		} else {
			withJSON++
		}
		if r.Citations == nil || *r.Citations != 0 {
			t.Errorf("%s: citations = %v, want 0 (the page shows 引用次数: 0)", r.ID, r.Citations)
		}
		if r.Journal == nil || r.Journal.ID != 501422 || r.Journal.Name != "arXiv - CS - Distributed, Parallel, and Cluster Computing" {
			t.Errorf("%s: journal = %+v", r.ID, r.Journal)
		}
		if r.Source.Page != 7 || r.Source.Position < 1 {
			t.Errorf("%s: source = %+v", r.ID, r.Source)
		}
	}
	if withJSON != 8 || !slices.Equal(noJSON, []string{
		"How local constraints influence network diameter and applications to LCL generalizations",
		"Demo: FedCampus: A Real-world Privacy-preserving Mobile Application for Smart Campus via Federated Learning & Analytics",
	}) {
		t.Errorf("with JSON = %d, without = %q", withJSON, noJSON)
	}

	first := page.Records[0]
	if first.ID != "142210977" || first.DOI != "10.48550/arXiv.2409.01075" || first.ArxivID != "2409.01075" ||
		first.URL != "https://arxiv.org/abs/2409.01075" || first.DOIURL != "https://doi.org/10.48550/arXiv.2409.01075" || first.Published != "2024-09-02" {
		t.Errorf("first record ids/dates: %+v", first)
	}
	if first.TitleCN != "涡旋：通过硬件感知的策略空间分层实现高效的无采样动态张量程序优化" {
		t.Errorf("title_cn = %q", first.TitleCN)
	}
	if len(first.Authors) != 12 || first.Authors[0] != "Yangjie Zhou" || first.Authors[11] != "Minwen Deng" {
		t.Errorf("authors = %q", first.Authors)
	}
	if strings.Contains(first.Abstract, "\x00") || !strings.Contains(first.Abstract, "attracting attention") {
		t.Errorf("abstract: \\u0000 line breaks must become spaces: %.120q", first.Abstract)
	}
	if first.ImpactFactor != 0 {
		t.Errorf("impact_factor = %v: PeriodicalIF 0.0 means unrated and must be omitted", first.ImpactFactor)
	}

	noj := page.Records[1]
	if noj.ID != "doi:arxiv-2409.01305" || noj.TitleCN != "局部约束如何影响网络直径以及在 LCL 概括中的应用" ||
		!slices.Equal(noj.Authors, []string{"Nicolas Bousquet", "Laurent Feuilloley", "Théo Pierron"}) || noj.Published != "2024-09-02" {
		t.Errorf("block without JSON: %+v", noj)
	}
	flash := page.Records[3]
	if flash.Title != "FlashFlex: Accommodating Large Language Model Training over Heterogeneous Environment" ||
		flash.TitleCN != "FlashFlex：适应异构环境下的大型语言模型训练" {
		t.Errorf("Chinese title starting with Latin words: title=%q title_cn=%q", flash.Title, flash.TitleCN)
	}
}

func TestSeed001Fragment(t *testing.T) {
	page := parseFixture(t, "fixtures/seeds/001_04a786490eff8f10.txt")
	if got := len(page.Records); got != 10 {
		t.Fatalf("records = %d, want 10", got)
	}
	if page.HeadingSeen || !page.FooterSeen || page.PageNo != 0 || page.JournalID != 501422 {
		t.Errorf("page facts: heading=%v footer=%v page=%d journal=%d", page.HeadingSeen, page.FooterSeen, page.PageNo, page.JournalID)
	}
	wantIDs := []string{"142263551", "142211087", "142211052", "142211088", "142211084", "142211085", "142211094", "142211061", "142263550", "142263653"}
	for i, r := range page.Records {
		if r.ID != wantIDs[i] {
			t.Errorf("record %d id = %s, want %s", i+1, r.ID, wantIDs[i])
		}
		if len(r.Warnings) != 0 {
			t.Errorf("%s: warnings %q", r.ID, r.Warnings)
		}
		if r.Citations != nil || r.TitleCN != "" {
			t.Errorf("%s: the capture has no citation or title lines, got citations=%v title_cn=%q", r.ID, r.Citations, r.TitleCN)
		}
		for _, f := range []string{r.Title, r.Abstract, strings.Join(r.Authors, ",")} {
			for _, noise := range []string{"京ICP备", "扫码关注我们", "求助内容", "应助结果"} {
				if strings.Contains(f, noise) {
					t.Errorf("%s: footer noise %q leaked into a field", r.ID, noise)
				}
			}
		}
	}
	if cn := page.Records[1].AbstractCN; !strings.HasPrefix(cn, "联合学习（FL）是一种分布式机器学习方案") {
		t.Errorf("DFDG abstract_cn = %.60q", cn)
	}
	if got := page.Records[5].Authors; !slices.Equal(got, []string{"Jiashu ZhangYiming", "Zihan PanYiming", "MollyYiming", "Xu", "Khuzaima Daudjee", "Sihang Liu"}) {
		t.Errorf("odd author names must be kept as given: %q", got)
	}
}
