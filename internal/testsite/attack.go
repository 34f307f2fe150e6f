package testsite

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// The journals of the attack profile: each answers like a hostile or
// broken site in one way. A crawl of all of them ends (exit 3: some pages
// fail), delivers the control and repeat papers once each and the two
// papers of the hostile-JSON page, and nothing else.
const (
	AttackControl    int64 = 9001 // 3 ordinary pages of 5 papers
	AttackRepeat     int64 = 9002 // every page number: the same 5 papers and a "next" link
	AttackJSON       int64 = 9003 // page 1: adverts, tracking and login objects, author lists and odd author types
	AttackBomb       int64 = 9004 // page 1: a gzip bomb (64 MiB of zeros in 64 KiB)
	AttackHuge       int64 = 9005 // page 1: 10,000 papers (larger than the default body cap)
	AttackRedirect   int64 = 9006 // page 1: a redirect to another port of this host; page 2: to another host
	AttackSlow       int64 = 9007 // page 1: headers, then a byte a second (slowloris)
	AttackRetryAfter int64 = 9008 // page 1: 429 with Retry-After: 86400
	AttackDown       int64 = 9009 // every page: 503 for ever
)

// AttackJournals are the attack profile's journals, the dead host last (its
// breaker would fail the journals after it too: circuits are per host).
var AttackJournals = []int64{AttackControl, AttackRepeat, AttackJSON, AttackBomb, AttackHuge, AttackRedirect,
	AttackSlow, AttackRetryAfter, AttackDown}

// AttackRobots is the attack profile's robots.txt: a Crawl-delay of a day.
const AttackRobots = "User-agent: *\nCrawl-delay: 86400\nDisallow: /private/\n"

// SetAttack serves the attack profile's journals and robots.txt.
func (s *Site) SetAttack() {
	s.SetRobots(AttackRobots)
	s.SynthJournal(AttackControl, 3, 5)

	repeat := SynthPage(AttackRepeat, 1, []string{"R1", "R2", "R3", "R4", "R5"})
	s.HandlePrefix(fmt.Sprintf("/literature_d%d", AttackRepeat), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(repeat)
	}))

	s.SetPage(AttackJSON, 1, hostileJSONPage(), "")

	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	zeros := make([]byte, 1<<20)
	for range 64 {
		zw.Write(zeros)
	}
	zw.Close()
	s.SetResponse(PagePath(AttackBomb, 1), 200, http.Header{"Content-Type": {"text/html; charset=utf-8"}, "Content-Encoding": {"gzip"}}, bomb.Bytes())

	// 10,000 papers (about 30 MB): a 20-paper page sent 500 times over.
	twenty := Synth(AttackHuge, 1, 20)
	s.HandlePrefix(PagePath(AttackHuge, 1), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		for range 500 {
			if _, err := w.Write(twenty); err != nil {
				return
			}
		}
	}))

	s.HandlePrefix(PagePath(AttackRedirect, 1), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, port, _ := net.SplitHostPort(r.Host)
		other := "1"
		if port == "1" {
			other = "2"
		}
		http.Redirect(w, r, "http://"+net.JoinHostPort(host, other)+PagePath(AttackRedirect, 1), http.StatusFound)
	}))
	s.SetResponse(PagePath(AttackRedirect, 2), http.StatusFound, http.Header{"Location": {"http://elsewhere.example" + PagePath(AttackRedirect, 2)}}, nil)

	s.HandlePrefix(PagePath(AttackSlow, 1), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		for _, b := range []byte("<html><body>" + strings.Repeat(" ", 3600)) {
			w.Write([]byte{b})
			w.(http.Flusher).Flush()
			select {
			case <-time.After(time.Second):
			case <-r.Context().Done():
				return
			}
		}
	}))

	s.SetResponse(PagePath(AttackRetryAfter, 1), http.StatusTooManyRequests, http.Header{"Retry-After": {"86400"}, "Content-Type": {"text/plain"}}, []byte("slow down"))

	s.HandlePrefix(fmt.Sprintf("/literature_d%d", AttackDown), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
}

// hostileJSONPage is a listing page of two papers among JSON objects that
// are not papers: an advert in a data- attribute, a tracking object with a
// title and a DOI, a login prompt; one paper gives its authors as a list,
// the other as a number.
func hostileJSONPage() []byte {
	j := AttackJSON
	return fmt.Appendf(nil, `<!DOCTYPE html><html><head><meta charset="utf-8"><title>Attack Journal %d最新文献</title></head><body>
<h1>Attack Journal %d最新文献</h1>
<script type="application/json" id="track">{"title":"Listing page view","doi":"10.0000/track.001","event":"pv"}</script>
<div class="login" data-prompt='{"title":"Please sign in to save papers","paperid":"LOGIN","action":"/login"}'>登录</div>
<ul class="list">
<li><div class="title">Robust Parsing of Listing Pages 列表页的稳健解析</div>
<div class="meta">Attack Journal %d Pub Date : 2024-10-01 DOI: 10.5555/atk.0001</div>
<div class="authors">Ann Lee, Bo Chen</div>
<div class="json" style="display:none">{"title":"Robust Parsing of Listing Pages","authors":["Ann Lee","Bo Chen"],"doi":"10.5555/atk.0001","abstract":"We parse listing pages robustly, whatever their markup.","PeriodicalId":%d,"journal":{"name":"Attack Journal %d","volume":"3","pages":"1-9"},"publicationDate":"2024-10-01","paperid":"ATK-0001"}</div>
<div class="ad" data-ad='{"title":"Buy cheap pills","paperid":"TRAP-AD"}'>广告</div>
</li>
<li><div class="title">Counting Authors When the Data Lies</div>
<div class="meta">Attack Journal %d Pub Date : 2024-10-02 DOI: 10.5555/atk.0002</div>
<div class="authors">Cy Dee, Ed Fox, Flo Gray</div>
<div class="abstract">Authors given as a number in the data must not push the visible names into the abstract.</div>
<div class="json" style="display:none">{"title":"Counting Authors When the Data Lies","authors":42,"doi":"10.5555/atk.0002","PeriodicalId":%d,"publicationDate":"2024-10-02","paperid":"ATK-0002"}</div>
</li>
</ul>
<div class="pager">上一页 1</div>
<p>京公网安备 11010802042870号</p></body></html>
`, j, j, j, j, j, j, j)
}
