package testsite

import (
	"cmp"
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
	return synthPage(journal, page, ids, false, nil)
}

// Variant is how the site shows one synthetic paper other than as usual,
// for a test in which the site changes papers after they were listed.
// The zero Variant is the usual paper.
type Variant struct {
	NoJSON         bool   // no embedded JSON (the site adds it days later)
	Title          string // another title (a typo the site fixes later); "": the usual
	NoDOI          bool   // no DOI yet, neither in the JSON nor on the page
	Citations      *int   // another citation count; nil: the usual
	Published      string // another publication date ("2099-01-02": one the parser finds implausible)
	NoCitationLine bool   // no 引用次数 line (a layout that drops it)
}

// SetVariant makes the synthetic paper id show as v from now on (pages
// made by SynthJournal and SetListing are made when asked for).
func (s *Site) SetVariant(id string, v Variant) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.variants == nil {
		s.variants = map[string]Variant{}
	}
	if v == (Variant{}) {
		delete(s.variants, id)
	} else {
		s.variants[id] = v
	}
}

func (s *Site) variant(id string) Variant {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.variants[id]
}

// synthPage makes a page; the last page's pager has no "next" link.
// variant, when set, says how each paper shows.
func synthPage(journal int64, page int, ids []string, last bool, variant func(id string) Variant) []byte {
	var b strings.Builder
	jn := fmt.Sprintf("Synthetic Journal %d", journal)
	fmt.Fprintf(&b, `<!DOCTYPE html><html><head><meta charset="utf-8"><title>%s最新文献_第%d页</title></head><body>
<div class="nav"><a href="/">Book学术</a> <a href="/search">搜索</a> <a href="/login">登录</a></div>
<div class="crumb"><a href="/">首页</a> &gt; <a href="#">最新文献</a></div>
<h1>%s最新文献_第%d页</h1><div>筛选</div><div>英文 中文</div><ul class="list">
`, jn, page, jn, page)
	abstract := strings.Repeat("Distributed systems trade consistency for availability under partitions; we measure it. ", 20)
	for i, id := range ids {
		var v Variant
		if variant != nil {
			v = variant(id)
		}
		doi := fmt.Sprintf("10.9999/synth.%s", id)
		title := cmp.Or(v.Title, fmt.Sprintf("Synthetic Paper %s on Scalable Crawling", id))
		cites := i
		if v.Citations != nil {
			cites = *v.Citations
		}
		date := cmp.Or(v.Published, "2024-09-02")
		fields := map[string]any{
			"title": title, "authors": "Ann Lee, Bo Chen", "doi": doi, "DOIUrl": "https://doi.org/" + doi, "url": nil,
			"abstract": abstract, "PeriodicalId": journal, "journal": map[string]any{"name": jn, "volume": "1", "pages": ""},
			"PeriodicalIF": 1.5, "publicationDate": date, "paperid": id,
		}
		meta := "DOI: " + doi
		if v.NoDOI {
			fields["doi"], fields["DOIUrl"], meta = nil, nil, ""
		}
		obj, _ := json.Marshal(fields)
		jsonDiv := fmt.Sprintf(`<div class="json" style="display:none">%s</div>`, html.EscapeString(string(obj)))
		if v.NoJSON {
			jsonDiv = ""
		}
		citeLine := fmt.Sprintf(`<div class="cite">引用次数: %d</div>`, cites)
		if v.NoCitationLine {
			citeLine = ""
		}
		fmt.Fprintf(&b, `<li><div class="title">%s 合成论文%s</div>
<div class="meta">%s Pub Date : %s %s</div>
<div class="authors">Ann Lee, Bo Chen</div>
%s
%s</li>
`, html.EscapeString(title), id, html.EscapeString(jn), date, meta, jsonDiv, citeLine)
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
		s.mu.Lock()
		s.pages[PagePath(journal, p)] = page{contentType: "text/html; charset=utf-8",
			render: func() []byte { return synthPage(journal, p, ids, p == pages, s.variant) }}
		s.mu.Unlock()
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
			render: func() []byte { return synthPage(journal, p, chunk, last, s.variant) }}
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
