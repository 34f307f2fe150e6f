package testsite

import (
	"encoding/json"
	"fmt"
	"html"
	"slices"
	"strings"
)

// SynthID is the paper id Synth gives paper i of a page, unique across
// journals and pages.
func SynthID(journal int64, page, i int) string {
	return fmt.Sprintf("%d%05d%02d", journal, page, i)
}

// Synth makes a listing page in the mobile layout with n papers whose ids,
// DOIs and titles are unique to (journal, page, i): a heading, the paper
// blocks with their embedded JSON, a pager and the footer. With realistic
// abstracts a 20-paper page is about 60 KB.
func Synth(journal int64, page, n int) []byte {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = SynthID(journal, page, i)
	}
	return SynthPage(journal, page, ids)
}

// SynthPage makes a listing page holding the papers with the given ids, in
// that order; its pager has a "next" link.
func SynthPage(journal int64, page int, ids []string) []byte {
	return synthPage(journal, page, ids, false)
}

// synthPage makes a page; the last page's pager has no "next" link.
func synthPage(journal int64, page int, ids []string, last bool) []byte {
	var b strings.Builder
	jn := fmt.Sprintf("Synthetic Journal %d", journal)
	fmt.Fprintf(&b, `<!DOCTYPE html><html><head><meta charset="utf-8"><title>%s最新文献_第%d页</title></head><body>
<div class="nav"><a href="/">Book学术</a> <a href="/search">搜索</a> <a href="/login">登录</a></div>
<div class="crumb"><a href="/">首页</a> &gt; <a href="#">最新文献</a></div>
<h1>%s最新文献_第%d页</h1><div>筛选</div><div>英文 中文</div><ul class="list">
`, jn, page, jn, page)
	abstract := strings.Repeat("Distributed systems trade consistency for availability under partitions; we measure it. ", 20)
	for i, id := range ids {
		doi := fmt.Sprintf("10.9999/synth.%s", id)
		title := fmt.Sprintf("Synthetic Paper %s on Scalable Crawling", id)
		obj, _ := json.Marshal(map[string]any{
			"title": title, "authors": "Ann Lee, Bo Chen", "doi": doi, "DOIUrl": "https://doi.org/" + doi, "url": nil,
			"abstract": abstract, "PeriodicalId": journal, "journal": map[string]any{"name": jn, "volume": "1", "pages": ""},
			"PeriodicalIF": 1.5, "publicationDate": "2024-09-02", "paperid": id,
		})
		fmt.Fprintf(&b, `<li><div class="title">%s 合成论文%s</div>
<div class="meta">%s Pub Date : 2024-09-02 DOI: %s</div>
<div class="authors">Ann Lee, Bo Chen</div>
<div class="json" style="display:none">%s</div>
<div class="cite">引用次数: %d</div></li>
`, html.EscapeString(title), id, html.EscapeString(jn), doi, html.EscapeString(string(obj)), i)
	}
	if last {
		fmt.Fprintf(&b, `</ul><div class="pager">上一页 %d</div>`, page)
	} else {
		fmt.Fprintf(&b, `</ul><div class="pager">上一页 %d %d 下一页</div>`, page, page+1)
	}
	b.WriteString(`
<p>京公网安备 11010802042870号</p><p>京ICP备2023020795号-1</p></body></html>
`)
	return []byte(b.String())
}

// SynthJournal serves pages 1..pages of journal with n synthetic papers
// each.
// The last page's pager has no "next" link.
func (s *Site) SynthJournal(journal int64, pages, n int) {
	for p := 1; p <= pages; p++ {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = SynthID(journal, p, i)
		}
		s.SetPage(journal, p, synthPage(journal, p, ids, p == pages), "")
	}
}

// SetListing serves a journal whose papers, newest first, are ids, perPage
// to a page; pages past the last one answer 404. Calling it again shifts
// the papers as new ones arrive at the top, as the live site does.
func (s *Site) SetListing(journal int64, ids []string, perPage int) {
	pages := (len(ids) + perPage - 1) / perPage
	// Pages are made when asked for (a test that moves a long listing
	// many times asks for a few of its pages each time).
	s.mu.Lock()
	for p := 1; p <= pages; p++ {
		chunk, last := slices.Clone(ids[(p-1)*perPage:min(p*perPage, len(ids))]), p == pages
		s.pages[PagePath(journal, p)] = page{contentType: "text/html; charset=utf-8",
			render: func() []byte { return synthPage(journal, p, chunk, last) }}
	}
	s.mu.Unlock()
	for p := pages + 1; ; p++ {
		s.mu.Lock()
		_, ok := s.pages[PagePath(journal, p)]
		s.mu.Unlock()
		if !ok {
			break
		}
		s.RemovePage(journal, p)
	}
}
