package testsite

import (
	"encoding/json"
	"fmt"
	"html"
	"strings"
)

// varietyPaper is a paper of the variety journals: the forms the real
// site shows, in one place.
type varietyPaper struct {
	title, titleCN string
	authors        string // as the page shows them (the separator varies)
	abstract       string // HTML, as the JSON gives it (markup, MathML)
	doi            string
	date           string
	noJSON         bool // a block without JSON (the site adds it later)
}

// varietyPapers are the forms: HTML and MathML in abstracts, every
// author separator the site uses (", ", "; ", "、", "，", "；"), Chinese, hyphenated and
// particle names, TeX's reserved characters and capitals in titles, a
// DOI with parentheses and angle brackets, blocks without JSON.
var varietyPapers = []varietyPaper{
	{"Adaptive ViFi: Handoff for Vehicular Networks", "自适应ViFi：面向车载网络的切换机制", "Ann Lee, Bo Chen",
		"<p>Handoffs in <i>vehicular</i> networks drop packets. We let a car use several base stations at once.</p>", "10.1109/tmc.%d.0001", "2024-09-02", false},
	{"Cost & Benefit of 50% Sampling in C_n Graphs", "C_n图中50%采样的成本与收益", "Giuseppe A. Di Luna; Giovanni Viglietta",
		`<p>We bound the cost of sampling half of the edges of <math><msub><mi>C</mi><mi>n</mi></msub></math> by <math><mi>O</mi><mo>(</mo><mi>n</mi><mo>)</mo></math>.</p>`, "10.1000/jgt.%d.0002", "2024-08-30", false},
	{"Federated Learning over 5G {Edge} Links", "5G边缘链路上的联邦学习", "王磊、李娜、张伟",
		"<p>本文研究<b>5G</b>边缘链路上的联邦学习问题。</p>", "10.1002/(SICI)1097-4636(%d)30:3<331::AID-JBM6>3.0.CO;2-H", "2024-08-21", false},
	{"Price $ and Hash # Tables with ~ and ^ in Keys", "", "William I. Gustafson Jr.；Jacob Shpund",
		"<p>Hash tables keyed by strings with <code>~</code> and <code>^</code> in them.</p>", "10.48550/arXiv.%d.01075", "2024-07-01", true},
	{"Back\\slash Paths in DOS File Systems", "DOS文件系统中的反斜杠路径", "Ana Costa，Jean-Pierre Müller，Ludwig van Beethoven",
		"<p>Paths with a backslash are read two ways.</p>", "10.1000/fs.%d.0005", "2024-06-15", true},
	{"Scheduling Under Uncertainty", "不确定性下的调度", "陈静",
		"<p>We schedule jobs whose lengths are known only as distributions.</p>", "10.1000/sch.%d.0006", "2024-05-03", false},
}

// varietyPage makes page p of a variety journal.
func varietyPage(journal int64, p int, last bool) []byte {
	var b strings.Builder
	jn := fmt.Sprintf("Variety Journal %d", journal)
	fmt.Fprintf(&b, `<!DOCTYPE html><html><head><meta charset="utf-8"><title>%s最新文献_第%d页</title></head><body>
<div class="nav"><a href="/">Book学术</a> <a href="/search">搜索</a> <a href="/login">登录</a></div>
<h1>%s最新文献_第%d页</h1><div>筛选</div><div>英文 中文</div><ul class="list">
`, jn, p, jn, p)
	for i, vp := range varietyPapers {
		id := fmt.Sprintf("%d%02d%02d", journal, p, i)
		doi := fmt.Sprintf(vp.doi, journal*100+int64(p))
		title := fmt.Sprintf("%s (Part %d.%d)", vp.title, journal, p)
		fields := map[string]any{
			"title": title, "authors": vp.authors, "doi": doi, "DOIUrl": nil, "url": nil,
			"abstract": vp.abstract, "PeriodicalId": journal, "journal": map[string]any{"name": jn, "volume": fmt.Sprint(p), "pages": ""},
			"PeriodicalIF": 2.5, "publicationDate": vp.date, "paperid": id,
		}
		obj, _ := json.Marshal(fields)
		jsonDiv := fmt.Sprintf(`<div class="json" style="display:none">%s</div>`, html.EscapeString(string(obj)))
		if vp.noJSON {
			jsonDiv = ""
		}
		titleLine := html.EscapeString(title)
		if vp.titleCN != "" {
			titleLine += " " + html.EscapeString(vp.titleCN)
		}
		fmt.Fprintf(&b, `<li><div class="title">%s</div>
<div class="rank">IF 2.5 3区 计算机科学</div>
<div class="meta">%s Pub Date : %s DOI: %s</div>
<div class="authors">%s</div>
<div class="abstract">%s</div>
%s
<div class="cite">引用次数: %d</div></li>
`, titleLine, html.EscapeString(jn), vp.date, html.EscapeString(doi), html.EscapeString(vp.authors), vp.abstract, jsonDiv, i)
	}
	if last {
		fmt.Fprintf(&b, `</ul><div class="pager">上一页 %d</div>`, p)
	} else {
		fmt.Fprintf(&b, `</ul><div class="pager">上一页 %d %d 下一页</div>`, p, p+1)
	}
	b.WriteString("\n<p>京ICP备2023020795号-1</p></body></html>\n")
	return []byte(b.String())
}

// VarietyJournal serves pages 1..pages of a journal of the real site's
// variety (varietyPapers, each page's own: their ids, DOIs and titles
// name the journal and the page).
func (s *Site) VarietyJournal(journal int64, pages int) {
	for p := 1; p <= pages; p++ {
		s.SetPage(journal, p, varietyPage(journal, p, p == pages), "text/html; charset=utf-8")
	}
}
