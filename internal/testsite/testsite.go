// Package testsite is a stand-in for the listing site: an http.Handler that
// serves pages under the site's URL scheme (site.Default:
// /literature_d{journal}.htm for page 1, /literature_d{journal}_{page}.htm
// after it; and /robots.txt) and
// injects faults on demand, so crawler tests (and, later, `crawl serve`)
// can reproduce what the real site does on a bad night.
//
// Faults are scripted per path: each request to a path takes the next
// queued fault, and serves the page normally when none is left. Nothing
// here sleeps: a "slow" response blocks until the client gives up.
package testsite

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/litcrawl/litcrawl/site"
)

// FaultKind is what a request meets instead of the page.
type FaultKind int

const (
	Status       FaultKind = iota // an HTTP status (Fault.Status), e.g. 500, 503, 404
	TooMany                       // 429 with Retry-After: Fault.RetryAfter
	Reset                         // the connection is closed without a response
	Truncate                      // half of the page, then the connection is cut
	Hang                          // nothing until the client gives up
	SoftBlock                     // 200 with a verification page instead of the listing
	RedirectAway                  // 302 to another host (Fault.Location)
	Gate                          // tell Fault.Arrived, wait for Fault.Open, then serve the page
	slow                          // wait Fault.delay, then serve the page (profiles only)
)

// Fault is one injected misbehaviour.
type Fault struct {
	Kind       FaultKind
	Status     int    // for Status
	RetryAfter string // for TooMany: seconds or an HTTP date
	Location   string // for RedirectAway
	// For Gate: Arrived is closed when the request arrives; the page is
	// served once Open is closed (or the client gives up).
	Arrived chan struct{}
	Open    <-chan struct{}

	delay time.Duration // for slow
}

// SoftBlockPage is what a soft-blocked request gets: no listing heading, no
// footer, no paper.
const SoftBlockPage = `<!DOCTYPE html><html><head><meta charset="utf-8"><title>安全验证</title></head>
<body><div class="box"><h2>请完成安全验证</h2><p>访问过于频繁，请稍后再试。</p></div></body></html>`

type page struct {
	body        []byte
	contentType string
	status      int           // 0: 200
	header      http.Header   // extra headers (archived responses)
	render      func() []byte // when set, makes body when the page is asked for
}

// Site serves listing pages and injected faults. It is safe for concurrent
// use; pages and faults may be changed while it serves (a nightly test adds
// papers between and during runs).
type Site struct {
	mu     sync.Mutex
	pages  map[string]page    // by path
	faults map[string][]Fault // by path, in order
	hits   map[string]int     // requests by path
	after  map[string]func()  // run once after a path is served
	robots string             // "" means 404

	profile Profile // random faults for pages without scripted ones
	seed    int64

	handlers map[string]http.Handler // by path prefix: pages made on request
	variants map[string]Variant      // synthetic papers shown otherwise (SetVariant)
}

// HandlePrefix serves every path that starts with prefix with h (before
// the pages and the faults), e.g. a journal whose every page number
// answers.
func (s *Site) HandlePrefix(prefix string, h http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.handlers == nil {
		s.handlers = map[string]http.Handler{}
	}
	s.handlers[prefix] = h
}

// SetProfile turns on a fault profile, deterministic for seed.
func (s *Site) SetProfile(p Profile, seed int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.profile, s.seed = p, seed
}

// New returns an empty site.
func New() *Site {
	return &Site{pages: map[string]page{}, faults: map[string][]Fault{}, hits: map[string]int{}, after: map[string]func(){}}
}

// PagePath is the path of a listing page under the site's URL scheme.
func PagePath(journal int64, pageNo int) string { return site.Default.Path(journal, pageNo) }

// SetPage serves body at the page's path; contentType "" is
// "text/html; charset=utf-8".
func (s *Site) SetPage(journal int64, pageNo int, body []byte, contentType string) {
	if contentType == "" {
		contentType = "text/html; charset=utf-8"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pages[PagePath(journal, pageNo)] = page{body: body, contentType: contentType}
}

// SetResponse serves an archived response (status, headers, body) at path.
func (s *Site) SetResponse(path string, status int, header http.Header, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pages[path] = page{body: body, contentType: header.Get("Content-Type"), status: status, header: header}
}

// RemovePage stops serving a page (it then answers 404).
func (s *Site) RemovePage(journal int64, pageNo int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pages, PagePath(journal, pageNo))
}

// LoadDir serves every file below dir named like a listing page under the
// site's URL scheme (literature_d{journal}[_{page}].htm, see
// site.Scheme.ParseFile); it returns how many it loaded.
func (s *Site) LoadDir(dir string) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		journal, pageNo, ok := site.Default.ParseFile(d.Name())
		if !ok {
			return nil
		}
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		s.SetPage(journal, pageNo, body, "text/html")
		n++
		return nil
	})
	return n, err
}

// Index is a plain-text index of the site: its journals with their page
// counts, and the URL pattern (what crawl serve answers at /).
func (s *Site) Index() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	pages := map[int64]int{}
	for path := range s.pages {
		if j, _, ok := site.Default.ParseFile(strings.TrimPrefix(path, "/")); ok {
			pages[j]++
		}
	}
	journals := make([]int64, 0, len(pages))
	for j := range pages {
		journals = append(journals, j)
	}
	slices.Sort(journals)
	var b strings.Builder
	tmpl := strings.NewReplacer("1234567", "{journal}", "7654321", "{page}")
	fmt.Fprintf(&b, "litcrawl test site\n\nlisting pages: %s (page 1), %s\n\njournal  pages\n",
		tmpl.Replace(site.Default.Path(1234567, 1)), tmpl.Replace(site.Default.Path(1234567, 7654321)))
	for _, j := range journals {
		fmt.Fprintf(&b, "%-8d %d\n", j, pages[j])
	}
	for prefix := range s.handlers {
		fmt.Fprintf(&b, "%s… (made on request)\n", prefix)
	}
	return b.String()
}

// Robots is the robots.txt served ("" when none).
func (s *Site) Robots() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.robots
}

// SetRobots serves text as /robots.txt ("" answers 404).
func (s *Site) SetRobots(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.robots = text
}

// Inject queues faults for the next requests to path.
func (s *Site) Inject(path string, faults ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[path] = append(s.faults[path], faults...)
}

// AfterServe runs f once, after the next normal response of path was made
// and before it is sent (a test changes the site in the middle of a crawl
// with it: the client sees the change on its next request, always).
func (s *Site) AfterServe(path string, f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.after[path] = f
}

// Hits is how many requests path has had.
func (s *Site) Hits(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

func (s *Site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.hits[r.URL.Path]++
	for prefix, h := range s.handlers {
		if strings.HasPrefix(r.URL.Path, prefix) {
			s.mu.Unlock()
			h.ServeHTTP(w, r)
			return
		}
	}
	var fault *Fault
	if q := s.faults[r.URL.Path]; len(q) > 0 {
		fault = &q[0]
		s.faults[r.URL.Path] = q[1:]
	}
	pg, ok := s.pages[r.URL.Path]
	robots := s.robots
	if fault == nil && ok {
		if f, hit := s.profile.decide(s.seed, r.URL.Path, s.hits[r.URL.Path]); hit {
			fault = &f
		}
	}
	s.mu.Unlock()
	if pg.render != nil {
		pg.body = pg.render()
	}

	if fault != nil && fault.Kind == slow {
		select {
		case <-time.After(fault.delay):
		case <-r.Context().Done():
			return
		}
		fault = nil
	}
	if fault != nil && fault.Kind == Gate {
		close(fault.Arrived)
		select {
		case <-fault.Open:
		case <-r.Context().Done():
			return
		}
		fault = nil
	}
	if fault != nil {
		serveFault(w, r, *fault, pg)
		return
	}
	if r.URL.Path == "/robots.txt" {
		if robots == "" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, robots)
		return
	}
	if !ok {
		http.NotFound(w, r)
		return
	}
	for k, vs := range pg.header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	// The page to send is taken; what runs "after" it runs before a byte
	// goes out, so the client cannot ask for the next page first.
	s.mu.Lock()
	f := s.after[r.URL.Path]
	delete(s.after, r.URL.Path)
	s.mu.Unlock()
	if f != nil {
		f()
	}
	w.Header().Set("Content-Type", pg.contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(pg.body)))
	if pg.status != 0 {
		w.WriteHeader(pg.status)
	}
	w.Write(pg.body)
}

func serveFault(w http.ResponseWriter, r *http.Request, f Fault, pg page) {
	switch f.Kind {
	case Status:
		http.Error(w, http.StatusText(f.Status), f.Status)
	case TooMany:
		if f.RetryAfter != "" {
			w.Header().Set("Retry-After", f.RetryAfter)
		}
		http.Error(w, "slow down", http.StatusTooManyRequests)
	case Reset:
		if conn, _, err := hijack(w); err == nil {
			conn.Close()
		}
	case Truncate:
		conn, buf, err := hijack(w)
		if err != nil {
			return
		}
		body := pg.body
		if len(body) == 0 {
			body = []byte(SoftBlockPage)
		}
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: %d\r\n\r\n", len(body))
		buf.Write(body[:len(body)/2])
		buf.Flush()
		conn.Close()
	case Hang:
		<-r.Context().Done()
	case SoftBlock:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, SoftBlockPage)
	case RedirectAway:
		loc := f.Location
		if loc == "" {
			loc = "https://elsewhere.example/literature_d1.htm"
		}
		http.Redirect(w, r, loc, http.StatusFound)
	}
}

func hijack(w http.ResponseWriter) (net.Conn, *bufio.ReadWriter, error) {
	h, ok := w.(http.Hijacker)
	if !ok {
		return nil, nil, fmt.Errorf("cannot hijack")
	}
	return h.Hijack()
}
