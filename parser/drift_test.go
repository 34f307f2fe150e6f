package parser_test

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"html"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/litcrawl/litcrawl/internal/config"
	"github.com/litcrawl/litcrawl/internal/quality"
	"github.com/litcrawl/litcrawl/parser"
	"github.com/litcrawl/litcrawl/record"
)

// hasCJK: a Han character in s.
func hasCJK(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

// The drift test: the papers of the fixture pages laid out anew, without
// their JSON, in layouts the site may drift to (lines in another order,
// other date and DOI labels, date formats and DOI forms, date and DOI on
// two lines, the title in a heading or a link with its Chinese title on a
// line of its own, the abstract anywhere, another citation label, header
// and footer furniture, other markup), drawn at random from a fixed seed.
// Every page must be read exactly or raise the alarm (a finding, which
// makes a run exit 4): never a wrong field with exit 0.

var (
	driftSeed  = flag.Uint64("driftseed", 20261204, "seed of the drift test's layouts")
	driftPages = flag.Int("driftpages", 1200, "pages the drift test lays out")
	driftShow  = flag.Int("driftshow", -1, "print this page of the drift test, its records and findings")
)

// paper is what a generated block shows: the truth the parse must give.
type driftPaper struct {
	id                            string
	title, titleCN                string
	authors                       []string
	abstract, abstractCN          string
	doi, published                string
	citations                     int
	journal                       string
	impact                        string // a ranking line: "IF 2 4区 计算机科学", "3区 工程技术 Q3 …"
	zone                          int    // what the ranking line says
	subject, quartile, category   string
	glueImpact                    bool // the ranking line before the date/DOI line, on it
	published3                    [3]int
	hasCN, hasAbstract, hasAbsCN  bool
	showCitations                 bool
	showImpact                    bool
	showDOI, showDate, showAuthor bool
}

// layout is one drift: how every block of a page is laid out.
type layout struct {
	markup     string // text, div, li, table
	order      []string
	titleForm  string // line (EN CN), heading (EN heading, CN line), link (EN link to /literature/{id}.htm, CN after)
	dateLabel  string
	doiForm    string // label, bare, url, href
	doiLabel   string
	dateFormat int
	metaTwo    bool // date and DOI on two lines
	citeLabel  string
	header     bool
	footer     bool
	fullWidth  bool // full-width colons
	// twist is a drift the parser is not built to read, to hold the
	// alarm to its word: "" (none), "entitle" (an English title alone on
	// its line in a text capture), "lead" (the names line before the
	// title), "label" (a date label it does not know), "tools" (a line
	// of links in each block: 收藏 分享 下载).
	twist       string
	description string
}

var (
	driftDateLabels = []string{"Pub Date :", "Published:", "出版日期：", "发布时间:", "Publication date:"}
	driftDOILabels  = []string{"DOI:", "DOI：", "doi:"}
	driftMonths     = []string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}
)

func formatDriftDate(d [3]int, f int) string {
	switch f {
	case 1:
		return fmt.Sprintf("%04d/%02d/%02d", d[0], d[1], d[2])
	case 2:
		return fmt.Sprintf("%d %s %04d", d[2], driftMonths[d[1]-1], d[0])
	case 3:
		return fmt.Sprintf("%s %d, %04d", driftMonths[d[1]-1], d[2], d[0])
	case 4:
		return fmt.Sprintf("%04d年%d月%d日", d[0], d[1], d[2])
	}
	return fmt.Sprintf("%04d-%02d-%02d", d[0], d[1], d[2])
}

// driftPool is the papers of the fixture goldens that have a DOI, a date,
// authors and a title: the truth the drifted pages show.
func driftPool(t testing.TB) []driftPaper {
	t.Helper()
	var pool []driftPaper
	seen := map[string]bool{}
	err := filepath.WalkDir(filepath.Join("..", "fixtures", "golden"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var r record.Record
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				return err
			}
			// (one paper once: the fixtures give some papers twice, by
			// id or title, with other DOIs)
			if r.Title == "" || r.DOI == "" || r.Published == "" || len(r.Authors) == 0 || seen[r.DOI] || seen[r.ID] || seen[r.Title] ||
				hasCJK(r.Title) || strings.ContainsAny(r.Title, "\u00a0") {
				continue
			}
			seen[r.DOI], seen[r.ID], seen[r.Title] = true, true, true
			if strings.Trim(r.ID, "0123456789") != "" {
				r.ID = fmt.Sprint(7000000 + len(pool)) // the site's ids are numbers
			}
			dp := driftPaper{id: r.ID, title: r.Title, titleCN: r.TitleCN, authors: r.Authors, abstract: r.Abstract,
				doi: r.DOI, published: r.Published}
			fmt.Sscanf(r.Published, "%d-%d-%d", &dp.published3[0], &dp.published3[1], &dp.published3[2])
			if r.Journal != nil {
				dp.journal = r.Journal.Name
			}
			pool = append(pool, dp)
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pool) < 60 {
		t.Fatalf("only %d papers for the drift test", len(pool))
	}
	return pool
}

func randomLayout(rng *rand.Rand) layout {
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	l := layout{
		markup:     pick([]string{"text", "div", "li", "table"}),
		titleForm:  pick([]string{"line", "line", "heading", "link"}),
		dateLabel:  pick(driftDateLabels),
		doiForm:    pick([]string{"label", "label", "bare", "url", "href"}),
		doiLabel:   pick(driftDOILabels),
		dateFormat: rng.IntN(5),
		metaTwo:    rng.IntN(2) == 0,
		citeLabel:  pick([]string{"引用次数: ", "Cited by "}),
		header:     rng.IntN(3) > 0,
		footer:     rng.IntN(3) > 0,
		fullWidth:  rng.IntN(4) == 0,
	}
	if l.markup == "text" && l.titleForm != "line" {
		l.titleForm = "line" // a text capture shows no headings or links
	}
	if l.markup == "text" && l.doiForm == "href" {
		l.doiForm = "label"
	}
	if rng.IntN(4) == 0 {
		l.twist = pick([]string{"entitle", "lead", "label", "tools"})
		if l.twist == "entitle" {
			l.markup, l.titleForm = "text", "line"
		}
	}
	parts := []string{"impact", "meta", "authors", "abstract", "abstractcn", "citation"}
	if rng.IntN(4) > 0 {
		rng.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	}
	l.order = parts
	l.description = fmt.Sprintf("twist=%s %s title=%s date=%q/%d doi=%s/%q two=%v cite=%q order=%v header=%v footer=%v fw=%v",
		l.twist, l.markup, l.titleForm, l.dateLabel, l.dateFormat, l.doiForm, l.doiLabel, l.metaTwo, l.citeLabel, l.order, l.header, l.footer, l.fullWidth)
	return l
}

// driftLine is one visible line of a generated block: its text, and for
// HTML how it is marked up.
type driftLine struct {
	text string
	tag  string // "", "h3", "a" (link to the paper), "doi" (doi.org link only)
	href string
}

func (l layout) colon(s string) string {
	if l.fullWidth {
		return strings.ReplaceAll(s, ":", "：")
	}
	return s
}

// blockLines lays out one paper.
func (l layout) blockLines(p driftPaper) []driftLine {
	var out []driftLine
	if l.twist == "lead" {
		out = append(out, driftLine{text: strings.Join(p.authors, ", ")})
	}
	switch {
	case l.twist == "entitle":
		out = append(out, driftLine{text: p.title})
		if p.titleCN != "" {
			out = append(out, driftLine{text: p.titleCN})
		}
	case l.titleForm == "line":
		out = append(out, driftLine{text: strings.TrimSpace(p.title + " " + p.titleCN)})
	case l.titleForm == "heading":
		out = append(out, driftLine{text: p.title, tag: "h3"})
		if p.titleCN != "" {
			out = append(out, driftLine{text: p.titleCN})
		}
	case l.titleForm == "link":
		out = append(out, driftLine{text: p.title, tag: "a", href: "/literature/" + p.id + ".htm"})
		if p.titleCN != "" {
			out = append(out, driftLine{text: p.titleCN})
		}
	}
	if l.twist == "tools" {
		out = append(out, driftLine{text: "收藏 分享 下载", tag: "tools"})
	}
	date := l.colon(l.dateLabel) + " " + formatDriftDate(p.published3, l.dateFormat)
	if l.twist == "label" {
		date = "Online " + formatDriftDate(p.published3, l.dateFormat)
	}
	var doi driftLine
	switch l.doiForm {
	case "label":
		doi = driftLine{text: l.colon(l.doiLabel) + " " + p.doi}
	case "bare":
		doi = driftLine{text: p.doi}
	case "url":
		doi = driftLine{text: "https://doi.org/" + p.doi}
	case "href":
		doi = driftLine{text: "全文链接", tag: "doi", href: "https://doi.org/" + p.doi}
	}
	for _, part := range l.order {
		switch part {
		case "impact":
			if p.showImpact && !(p.glueImpact && l.dateLabel == "Pub Date") {
				out = append(out, driftLine{text: p.impact})
			}
		case "meta":
			date := date
			if p.showImpact && p.glueImpact && l.dateLabel == "Pub Date" {
				date = p.impact + " " + date // the desktop's one line
			}
			if l.metaTwo || doi.tag != "" {
				out = append(out, driftLine{text: date}, doi)
			} else {
				out = append(out, driftLine{text: date + " " + doi.text})
			}
		case "authors":
			if l.twist != "lead" {
				out = append(out, driftLine{text: strings.Join(p.authors, ", ")})
			}
		case "abstract":
			if p.hasAbstract {
				out = append(out, driftLine{text: p.abstract})
			}
		case "abstractcn":
			if p.hasAbsCN {
				out = append(out, driftLine{text: p.abstractCN})
			}
		case "citation":
			if p.showCitations {
				out = append(out, driftLine{text: l.colon(l.citeLabel) + fmt.Sprint(p.citations)})
			}
		}
	}
	return out
}

// render lays a page out in the layout's markup.
func (l layout) render(journal string, papers []driftPaper) []byte {
	var header, footer []string
	if l.header {
		header = []string{"Book学术 搜索 登录", journal + "最新文献", "首页 > 最新文献", "筛选", "英文 中文"}
	}
	if l.footer {
		footer = []string{"上一页 1 2 3 4 5 下一页", "京ICP备2023020795号-1", "扫码关注我们"}
	}
	var b strings.Builder
	if l.markup == "text" {
		for _, h := range header {
			b.WriteString(h + "\n\n")
		}
		for _, p := range papers {
			for _, dl := range l.blockLines(p) {
				b.WriteString(dl.text + "\n\n")
			}
		}
		for _, f := range footer {
			b.WriteString(f + "\n\n")
		}
		return []byte(b.String())
	}
	esc := html.EscapeString
	b.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + esc(journal) + "最新文献</title></head><body>\n")
	if l.header {
		b.WriteString(`<div class="nav"><a href="/">Book学术</a> <a href="/search">搜索</a> <a href="/login">登录</a></div>` + "\n")
		b.WriteString("<h2>" + esc(journal) + "最新文献</h2>\n")
		b.WriteString(`<div class="crumb"><a href="/">首页</a> &gt; <a href="#">最新文献</a></div>` + "\n")
		b.WriteString(`<div class="filter">筛选</div><div class="lang"><a href="#">英文</a> <a href="#">中文</a></div>` + "\n")
	}
	line := func(dl driftLine) string {
		switch dl.tag {
		case "h3":
			return "<h3>" + esc(dl.text) + "</h3>"
		case "a":
			return `<a class="title" href="` + esc(dl.href) + `">` + esc(dl.text) + "</a>"
		case "doi":
			return `<a class="doi" href="` + esc(dl.href) + `">` + esc(dl.text) + "</a>"
		case "tools":
			return `<a href="#">收藏</a> <a href="#">分享</a> <a href="#">下载</a>`
		}
		return esc(dl.text)
	}
	switch l.markup {
	case "div":
		for _, p := range papers {
			b.WriteString(`<div class="item">`)
			for _, dl := range l.blockLines(p) {
				if dl.tag == "h3" {
					b.WriteString(line(dl))
				} else {
					b.WriteString("<div>" + line(dl) + "</div>")
				}
			}
			b.WriteString("</div>\n")
		}
	case "li":
		b.WriteString("<ul>\n")
		for _, p := range papers {
			b.WriteString("<li>")
			for _, dl := range l.blockLines(p) {
				b.WriteString("<p>" + line(dl) + "</p>")
			}
			b.WriteString("</li>\n")
		}
		b.WriteString("</ul>\n")
	case "table":
		b.WriteString("<table>\n")
		for _, p := range papers {
			b.WriteString("<tr><td>")
			for i, dl := range l.blockLines(p) {
				if i > 0 {
					b.WriteString("<br>")
				}
				b.WriteString(line(dl))
			}
			b.WriteString("</td></tr>\n")
		}
		b.WriteString("</table>\n")
	}
	if l.footer {
		b.WriteString(`<div class="pager"><a href="#">上一页</a> <a href="#">1</a> <a href="#">2</a> <a href="#">3</a> <a href="#">下一页</a></div>` + "\n")
		b.WriteString("<div class=\"footer\"><p>京ICP备2023020795号-1</p><p>扫码关注我们</p></div>\n")
	}
	b.WriteString("</body></html>\n")
	return []byte(b.String())
}

// drawPapers picks a page of papers and what each shows.
func drawPapers(rng *rand.Rand, pool []driftPaper, l layout) []driftPaper {
	n := 3 + rng.IntN(8)
	out := make([]driftPaper, 0, n)
	for _, i := range rng.Perm(len(pool))[:n] {
		p := pool[i]
		if l.titleForm == "line" && p.titleCN == "" {
			// A text title line needs its Chinese title to be told from a
			// names line or an abstract: the site shows one for every
			// paper; make one.
			p.titleCN = "关于" + strings.Fields(p.title)[0] + "的研究"
		}
		p.hasAbstract = p.abstract != "" && len(p.abstract) > len(p.title) && !hasCJK(p.abstract) && rng.IntN(4) > 0
		if p.hasAbstract && len(p.abstract) > 600 {
			p.abstract = strings.TrimSpace(p.abstract[:strings.LastIndex(p.abstract[:600], ". ")+1])
			p.hasAbstract = len(p.abstract) > len(p.title)
		}
		p.hasAbsCN = rng.IntN(3) == 0
		if p.hasAbsCN {
			p.abstractCN = "本文研究" + p.titleCN + "问题。我们提出了一种新的方法，并在多个数据集上验证了其有效性，结果表明该方法优于现有方法。"
		}
		p.showCitations = rng.IntN(2) == 0
		p.citations = rng.IntN(300)
		p.showImpact = rng.IntN(2) == 0
		p.drawRanking(rng)
		out = append(out, p)
	}
	return out
}

// drawRanking draws the ranking line's parts, their order, and whether it
// is glued before the date/DOI line.
func (p *driftPaper) drawRanking(rng *rand.Rand) {
	subjects := []string{"计算机科学", "工程技术", "医学", "物理与天体物理"}
	categories := []string{"COMPUTER SCIENCE, INFORMATION SYSTEMS", "ENGINEERING, ELECTRICAL & ELECTRONIC", "COMPUTER SCIENCE, THEORY & METHODS", "TELECOMMUNICATIONS"}
	var parts []string
	form := rng.IntN(5) // IF+zone+subject, zone+subject, zone+subject+JCR, IF alone, IF+zone+subject+JCR
	if form == 0 || form == 3 || form == 4 {
		parts = append(parts, fmt.Sprintf("IF %d.%d", 1+rng.IntN(9), rng.IntN(10)))
	}
	if form != 3 {
		p.zone, p.subject = 1+rng.IntN(4), subjects[rng.IntN(len(subjects))]
		parts = append(parts, fmt.Sprintf("%d区 %s", p.zone, p.subject))
	}
	if form == 2 || form == 4 {
		p.quartile, p.category = fmt.Sprintf("Q%d", 1+rng.IntN(4)), categories[rng.IntN(len(categories))]
		parts = append(parts, p.quartile+" "+p.category)
	}
	if rng.IntN(4) == 0 {
		rng.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	}
	p.impact = strings.Join(parts, " ")
	p.glueImpact = rng.IntN(3) == 0
}

// driftVerdict compares a parse with the truth: "" when exact, else the
// first difference.
func driftVerdict(page *parser.Page, papers []driftPaper) string {
	if len(page.Records) != len(papers) {
		return fmt.Sprintf("%d records for %d papers", len(page.Records), len(papers))
	}
	for i, r := range page.Records {
		p := papers[i]
		want := record.ParseDOI(p.doi).DOI
		switch {
		case r.Title != p.title:
			return fmt.Sprintf("paper %d: title %q, want %q", i+1, r.Title, p.title)
		case r.TitleCN != p.titleCN:
			return fmt.Sprintf("paper %d: title_cn %q, want %q", i+1, r.TitleCN, p.titleCN)
		case !slices.Equal(r.Authors, p.authors):
			return fmt.Sprintf("paper %d: authors %q, want %q", i+1, r.Authors, p.authors)
		case r.DOI != want:
			return fmt.Sprintf("paper %d: doi %q, want %q", i+1, r.DOI, want)
		case r.Published != p.published:
			return fmt.Sprintf("paper %d: published %q, want %q", i+1, r.Published, p.published)
		case p.hasAbstract && r.Abstract != p.abstract || !p.hasAbstract && r.Abstract != "":
			return fmt.Sprintf("paper %d: abstract %.60q, want %.60q", i+1, r.Abstract, p.abstract)
		case p.hasAbsCN && r.AbstractCN != p.abstractCN || !p.hasAbsCN && r.AbstractCN != "":
			return fmt.Sprintf("paper %d: abstract_cn %.40q, want %.40q", i+1, r.AbstractCN, p.abstractCN)
		case p.showImpact && (r.Zone != p.zone || r.Subject != p.subject || r.JCRQuartile != p.quartile || r.JCRCategory != p.category):
			return fmt.Sprintf("paper %d: ranking %d %q %q %q, want %d %q %q %q", i+1, r.Zone, r.Subject, r.JCRQuartile, r.JCRCategory, p.zone, p.subject, p.quartile, p.category)
		case !p.showImpact && (r.Zone != 0 || r.Subject != "" || r.JCRQuartile != ""):
			return fmt.Sprintf("paper %d: ranking %d %q %q, none shown", i+1, r.Zone, r.Subject, r.JCRQuartile)
		case p.showCitations && (r.Citations == nil || *r.Citations != p.citations) || !p.showCitations && r.Citations != nil:
			return fmt.Sprintf("paper %d: citations %v, want %d (shown %v)", i+1, r.Citations, p.citations, p.showCitations)
		}
	}
	return ""
}

func TestDrift(t *testing.T) {
	pool := driftPool(t)
	rng := rand.New(rand.NewPCG(*driftSeed, 1))
	now := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	thresholds := config.Default().Quality
	thresholds.MinPapersPerPage = 0
	exact, alarmed, silent, untwistedAlarms := 0, 0, 0, 0
	twisted := map[string][2]int{} // per twist: exact, alarmed
	for i := range *driftPages {
		l := randomLayout(rng)
		papers := drawPapers(rng, pool, l)
		data := l.render("Journal of Drift", papers)
		page, err := parser.Parse(data, parser.Options{Journal: 9, Page: 2})
		if err != nil {
			t.Fatal(err)
		}
		wrong := driftVerdict(page, papers)
		// The run's quality gate over this page alone (a page holds
		// fewer papers than quality.min_papers_per_page asks of a run).
		var q quality.Counts
		q.Add(page, now)
		gate := quality.Check(thresholds, q)
		if i == *driftShow {
			t.Logf("page %d (%s): %s\n%s", i, l.description, wrong, data)
			os.WriteFile(filepath.Join(os.TempDir(), "drift-page"), data, 0o644)
			for _, r := range page.Records {
				b, _ := json.Marshal(r)
				t.Logf("%s", b)
			}
			t.Logf("gate: %v", gate)
		}
		switch {
		case wrong == "":
			exact++
			if l.twist != "" {
				c := twisted[l.twist]
				c[0]++
				twisted[l.twist] = c
			}
		case gate != nil:
			alarmed++
			if l.twist == "" {
				// The listed drifts, without a twist, are read exactly.
				untwistedAlarms++
				if untwistedAlarms <= 3 {
					t.Errorf("page %d (%s): a listed drift raised the alarm: %s; %v", i, l.description, wrong, gate)
				}
			}
			if l.twist != "" {
				c := twisted[l.twist]
				c[1]++
				twisted[l.twist] = c
			}
			if *driftShow == -2 {
				t.Logf("alarmed %d (%s): %s; %v", i, l.description, wrong, gate)
			}
		default:
			silent++
			if silent <= 5 {
				t.Errorf("page %d (%s): a wrong field without an alarm: %s\n%s", i, l.description, wrong, data)
			}
		}
	}
	for _, tw := range slices.Sorted(maps.Keys(twisted)) {
		t.Logf("twist %s: %d exact, %d alarmed", tw, twisted[tw][0], twisted[tw][1])
	}
	if silent == 0 && alarmed == 0 {
		t.Error("no page raised the alarm: the twists no longer test it")
	}
	t.Logf("drift: %d pages (seed %d): %d exact, %d alarmed, %d wrong without an alarm", *driftPages, *driftSeed, exact, alarmed, silent)
}
