// Command baseline is the benchmark's yardstick: the least a crawler of the
// listing pages can do with plain colly, goquery and encoding/json — no
// retries, no state, no dedupe, no politeness — writing JSONL.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"os"
	"sync"

	"github.com/PuerkitoBio/goquery"
	"github.com/gocolly/colly/v2"

	"github.com/litcrawl/litcrawl/site"
)

func main() {
	base := flag.String("base-url", "http://127.0.0.1:8089", "site")
	journal := flag.Int64("journal", 1001, "journal id")
	pages := flag.Int("pages", 100, "pages 1..N")
	conc := flag.Int("concurrency", 4, "requests at once")
	out := flag.String("out", "baseline.jsonl", "JSONL output")
	flag.Parse()

	f, err := os.Create(*out)
	if err != nil {
		panic(err)
	}
	w := bufio.NewWriter(f)
	var mu sync.Mutex
	c := colly.NewCollector(colly.Async(true), colly.MaxBodySize(0))
	c.Limit(&colly.LimitRule{DomainGlob: "*", Parallelism: *conc})
	c.OnHTML("li", func(e *colly.HTMLElement) {
		raw := e.DOM.Find("div.json").Text()
		var paper map[string]any
		if json.Unmarshal([]byte(raw), &paper) != nil {
			return
		}
		line, _ := json.Marshal(map[string]any{"id": paper["paperid"], "title": paper["title"], "doi": paper["doi"],
			"authors": paper["authors"], "abstract": paper["abstract"], "published": paper["publicationDate"], "url": e.Request.URL.String()})
		mu.Lock()
		w.Write(append(line, '\n'))
		mu.Unlock()
	})
	for p := 1; p <= *pages; p++ {
		c.Visit(site.Default.URL(*base, *journal, p))
	}
	c.Wait()
	w.Flush()
	f.Sync()
	f.Close()
	_ = goquery.NewDocumentFromReader // the HTML goes through goquery inside colly's OnHTML
}
