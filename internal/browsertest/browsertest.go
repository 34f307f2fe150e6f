// Package browsertest opens pages in headless Chromium for tests of what a
// person looks at (the HTML report, the fleet's live page): the charts as
// drawn, the page's text, console errors, and requests to other origins.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Chromium finds Debian's chromium (or another Chrome). With CI=true a
// missing browser fails the test; locally it skips, saying how to get it.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no Chromium on PATH: install it (Debian: apt-get install -y chromium) to check the HTML report in a real browser"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Chart is what the page shows of one chart (figure.chart).
type Chart struct {
	ID     string   `json:"id"`
	Series string   `json:"series"`
	Empty  bool     `json:"empty"`
	Paths  int      `json:"paths"`
	Texts  []string `json:"texts"`
	Width  float64  `json:"width"`
	Height float64  `json:"height"`
	Note   string   `json:"note"`
	// Clipped are the texts that reach past the chart's edges (cut off
	// on screen).
	Clipped []string `json:"clipped"`
}

// Page is what a page showed in the browser.
type Page struct {
	Charts []Chart
	// Text is the page's visible text; Refresh its meta refresh, if any.
	Text, Refresh string
	// ConsoleErrors are console errors, warnings and exceptions;
	// Requests the requests to anything but the page's own origin (or
	// file, for a file).
	ConsoleErrors, Requests []string
	PNG                     []byte
}

// Open loads url (file:// or http://) in headless Chromium, waits for its
// footer, and returns what it showed.
func Open(t testing.TB, url string) Page {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(Chromium(t)), chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-gpu", true))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	actx, cancelA := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelA()
	bctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	own := "file://"
	if i := strings.Index(url, "://"); i >= 0 && !strings.HasPrefix(url, "file://") {
		rest := url[i+3:]
		if j := strings.Index(rest, "/"); j >= 0 {
			rest = rest[:j]
		}
		own = url[:i+3] + rest + "/"
	}
	var mu sync.Mutex
	var p Page
	err := chromedp.Listen(bctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value))
				}
				p.ConsoleErrors = append(p.ConsoleErrors, "console."+string(ev.Type)+": "+strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			p.ConsoleErrors = append(p.ConsoleErrors, "exception: "+ev.ExceptionDetails.Text)
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError || ev.Entry.Level == cdplog.EntryLevelWarning {
				p.ConsoleErrors = append(p.ConsoleErrors, "log: "+ev.Entry.Text)
			}
		case *network.EventRequestWillBeSent:
			if u := ev.Request.URL; !strings.HasPrefix(u, own) && !strings.HasPrefix(u, "data:") {
				p.Requests = append(p.Requests, u)
			}
		}
	})
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("footer"))); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	charts, err := chromedp.Run(bctx, chromedp.Evaluate[[]Chart](`[...document.querySelectorAll("figure.chart")].map(f => {
			const svg = f.querySelector("svg");
			const r = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
			return {id: f.id, series: f.dataset.series || "", empty: f.dataset.empty === "true",
				paths: svg ? svg.querySelectorAll("path").length : 0,
				texts: svg ? [...svg.querySelectorAll("text")].map(t => t.textContent) : [],
				width: r.width, height: r.height,
				note: (f.querySelector(".empty") || {textContent: ""}).textContent,
				clipped: svg ? [...svg.querySelectorAll("text")].filter(t => {
					const b = t.getBoundingClientRect();
					return b.width > 0 && (b.left < r.left - 0.5 || b.right > r.right + 0.5 || b.top < r.top - 0.5 || b.bottom > r.bottom + 0.5);
				}).map(t => t.textContent) : []};
		})`))
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	text, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	refresh, err := chromedp.Run(bctx, chromedp.Evaluate[string](`(document.querySelector('meta[http-equiv="refresh"]') || {content: ""}).content`))
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(90))
	if err != nil {
		t.Fatalf("chromium: screenshot: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	p.Charts, p.Text, p.Refresh, p.PNG = charts, text, refresh, png
	return p
}
