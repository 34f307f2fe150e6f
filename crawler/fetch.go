package crawler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	neturl "net/url"
	"sync"
	"time"

	"github.com/gocolly/colly/v2"
)

// Fetched is one fetched page, its bytes as the server sent them.
type Fetched struct {
	URL         string
	Status      int
	Header      http.Header
	ContentType string // as the server sent it, charset included
	Body        []byte
	FetchedAt   time.Time
}

// fetcher runs colly synchronously, one request per call, inside the
// crawler's own bounded pool. Colly is configured so that it does not get in
// the way: every URL may be fetched again (a failed page is really
// refetched), error statuses come back as responses (their status and
// Retry-After are kept), there is no colly body cap (the transport's cap
// fails loudly), robots.txt is the crawler's business, and colly never
// converts charsets (the transport hides the charset from it, so the parser
// decodes each page in exactly one place).
type fetcher struct {
	base    *colly.Collector
	timeout time.Duration

	mu       sync.Mutex
	answered map[string]bool // hosts that sent a response in this fetcher's life
}

// hasAnswered reports whether host has sent any response.
func (f *fetcher) hasAnswered(host string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.answered[host]
}

func newFetcher(rt http.RoundTripper, timeout time.Duration) *fetcher {
	c := colly.NewCollector(colly.AllowURLRevisit(), colly.ParseHTTPErrorResponse(), colly.MaxBodySize(0))
	c.IgnoreRobotsTxt = true
	c.UserAgent = "" // the transport sets it
	c.WithTransport(hideCharset{rt})
	// Colly's client gives up after 10 s by default; the fetch's own
	// context bounds each request to fetch.timeout instead (the client's
	// bound, a second later, is only a backstop, so the error names the
	// fetch timeout).
	c.SetRequestTimeout(timeout + time.Second)
	return &fetcher{base: c, timeout: timeout, answered: map[string]bool{}}
}

// originalContentType carries the server's Content-Type past colly.
const originalContentType = "X-Litcrawl-Content-Type"

// hideCharset moves the charset out of Content-Type so that colly leaves
// the body alone; fetch puts the header back.
type hideCharset struct{ rt http.RoundTripper }

func (h hideCharset) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := h.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		resp.Header.Set(originalContentType, ct)
		if mt, _, err := mime.ParseMediaType(ct); err == nil {
			resp.Header.Set("Content-Type", mt)
		} else {
			resp.Header.Del("Content-Type")
		}
	}
	return resp, nil
}

// fetch gets url within the fetch timeout. A transport failure is a
// *FetchError; an HTTP status, whatever it is, is a Fetched for the caller
// to judge.
func (f *fetcher) fetch(ctx context.Context, url string) (*Fetched, error) {
	fctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	c := f.base.Clone()
	// The host answered once it sent a byte of a response, whatever comes
	// of it (a body over the cap, a gzip bomb, headers over the limit): it
	// is then never taken for a wrong base URL (ErrUnreachable).
	host := hostOf(url)
	c.Context = httptrace.WithClientTrace(fctx, &httptrace.ClientTrace{GotFirstResponseByte: func() {
		f.mu.Lock()
		f.answered[host] = true
		f.mu.Unlock()
	}})
	var out *Fetched
	c.OnResponse(func(r *colly.Response) {
		h := r.Headers.Clone()
		ct := h.Get(originalContentType)
		h.Del(originalContentType)
		h.Set("Content-Type", ct)
		out = &Fetched{URL: r.Request.URL.String(), Status: r.StatusCode, Header: h, ContentType: ct,
			Body: r.Body, FetchedAt: time.Now()}
		f.mu.Lock()
		f.answered[r.Request.URL.Hostname()] = true
		f.mu.Unlock()
	})
	err := c.Visit(url)
	if err == nil && out == nil {
		err = errors.New("no response")
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err() // the caller stopped: not a failure of the page
		}
		if fctx.Err() != nil {
			return nil, &FetchError{URL: url, Err: fmt.Errorf("timeout after %v: %w", f.timeout, err)}
		}
		return nil, asFetchError(url, err)
	}
	return out, nil
}

// hostOf is a URL's host name ("" when it does not parse).
func hostOf(raw string) string {
	u, err := neturl.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// asFetchError keeps a transport FetchError, and otherwise makes one: a
// body cut short is ErrTruncated, anything else a network error (retryable).
func asFetchError(url string, err error) error {
	var fe *FetchError
	if errors.As(err, &fe) {
		return fe
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = fmt.Errorf("%w: %v", ErrTruncated, err)
	}
	return &FetchError{URL: url, Err: err}
}

// judge turns a fetched response into an error for the statuses and bodies
// that are failures. A 2xx HTML body must be complete (end with </html>).
func judge(f *Fetched, now time.Time) error {
	switch {
	case f.Status >= 200 && f.Status < 300:
		if looksHTML(f) && !endsHTML(f.Body) {
			return &FetchError{URL: f.URL, Status: f.Status, Err: fmt.Errorf("%w: the document has no end (no </html>)", ErrTruncated)}
		}
		return nil
	default:
		fe := &FetchError{URL: f.URL, Status: f.Status, Err: errors.New(http.StatusText(f.Status))}
		if d, ok := ParseRetryAfter(f.Header.Get("Retry-After"), now); ok {
			fe.RetryAfter = d
		}
		return fe
	}
}

func looksHTML(f *Fetched) bool {
	mt, _, _ := mime.ParseMediaType(f.ContentType)
	if mt == "text/html" || mt == "application/xhtml+xml" {
		return true
	}
	head := bytes.TrimSpace(f.Body[:min(len(f.Body), 512)])
	return len(head) > 0 && head[0] == '<'
}

func endsHTML(b []byte) bool {
	tail := b[max(0, len(b)-4096):]
	return bytes.Contains(bytes.ToLower(tail), []byte("</html>"))
}
