// Package atom is the Atom feed sink driver: atom:DIR keeps, per journal,
// an Atom 1.0 feed (RFC 4287) of the newest papers delivered, for feed
// readers and reference managers, with an OPML list and an HTML page of
// the feeds. Importing the package registers the driver.
//
// The feeds are written with encoding/xml's escaping by hand rather than
// with a feed library: each entry is rendered once and reused in every
// rewrite of its feed (a feed is rewritten whole at each commit), an
// entry has several authors and categories with their term attribute, and
// every text element is type="text" so that markup in a title stays text.
package atom

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/litcrawl/litcrawl/internal/atomicfile"
	"github.com/litcrawl/litcrawl/internal/redact"
	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/sink"
)

func init() {
	sink.Register(sink.Driver{Scheme: "atom", Usage: "atom:DIR[?keep=N&base=URL&title=TEXT] (Atom feeds)", Check: check, Open: open, Same: same})
}

// Bounds.
const (
	// DefaultKeep is the entries a feed keeps when keep= is not given.
	DefaultKeep = 100
	// MaxKeep bounds keep=.
	MaxKeep = 10000
	// MaxFeeds bounds the journals (feeds) of one directory: a record of
	// one more is refused (and quarantined).
	MaxFeeds = 1000
	maxTitle = 200
)

// options are what an atom: URL says.
type options struct {
	dir   string
	keep  int
	base  string // the feeds' public URL ("" when not given)
	title string
}

func parse(rawURL string) (options, error) {
	o := options{keep: DefaultKeep, title: "Latest papers"}
	rest, ok := strings.CutPrefix(rawURL, "atom:")
	if !ok {
		return o, &sink.URLError{URL: redact.URL(rawURL), Reason: "expected atom:DIR"}
	}
	dir, query, _ := strings.Cut(rest, "?")
	bad := func(reason string) error { return &sink.URLError{URL: redact.URL(rawURL), Reason: reason} }
	switch {
	case dir == "":
		return o, bad("expected a directory after atom: (atom:DIR)")
	case strings.HasPrefix(dir, "//"):
		return o, bad("expected atom:DIR, a directory path, not a URL (atom://…)")
	case strings.ContainsFunc(dir, func(r rune) bool { return r < ' ' || r == 0x7f }):
		return o, bad("the directory has control characters")
	}
	o.dir = dir
	q, err := url.ParseQuery(query)
	if err != nil {
		return o, bad("the query is not key=value&…: " + err.Error())
	}
	for k, vs := range q {
		if len(vs) != 1 {
			return o, bad(k + " given " + strconv.Itoa(len(vs)) + " times: expected once")
		}
		v := vs[0]
		switch k {
		case "keep":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > MaxKeep {
				return o, bad(fmt.Sprintf("keep=%q: expected the entries a feed keeps, 1 to %d", v, MaxKeep))
			}
			o.keep = n
		case "base":
			u, err := url.Parse(v)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
				return o, bad(fmt.Sprintf("base=%q: expected the http(s) URL the directory is served at, e.g. https://example.org/feeds (no user, query or fragment)", redact.URL(v)))
			}
			o.base = strings.TrimRight(u.String(), "/")
		case "title":
			t := clean(v, true, maxTitle)
			if t == "" || utf8.RuneCountInString(v) > maxTitle {
				return o, bad(fmt.Sprintf("title: expected the feeds' title on one line, 1 to %d characters", maxTitle))
			}
			o.title = t
		default:
			return o, bad(fmt.Sprintf("unknown option %q: expected keep, base or title", k))
		}
	}
	return o, nil
}

// same is the directory a URL names, as an absolute path: one directory
// is one sink, whatever its options.
func same(rawURL string) string {
	o, err := parse(rawURL)
	if err != nil {
		return rawURL
	}
	if abs, err := filepath.Abs(o.dir); err == nil {
		return "atom:" + abs
	}
	return rawURL
}

func check(rawURL string) error {
	_, err := parse(rawURL)
	return err
}

// atomSink keeps the feeds of one directory.
type atomSink struct {
	sink.Gate // Write, Token and Restore hold it exclusively
	o         options
	log       *slog.Logger
	now       func() time.Time
	unlock    func() error
	st        *state
	dirty     map[string]bool // feeds whose file is behind the state
	index     bool            // the index files are behind the state
}

func open(_ context.Context, rawURL string, opts sink.Options) (sink.Sink, error) {
	o, err := parse(rawURL)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return nil, fmt.Errorf("atom %s: %w", o.dir, err)
	}
	unlock, err := lockDir(o.dir)
	if err != nil {
		return nil, fmt.Errorf("atom %s: %w", o.dir, err)
	}
	st, err := load(o.dir)
	if err != nil {
		unlock()
		return nil, fmt.Errorf("atom: %w", err)
	}
	s := &atomSink{o: o, log: opts.Log(), now: opts.Clock, unlock: unlock, st: st, dirty: map[string]bool{}, index: true}
	// A keep smaller than the last run's trims the feeds now; and the
	// feed files are made again from the state, whatever a crash left.
	for k, f := range st.Feeds {
		if len(f.Entries) > o.keep {
			f.Entries = f.Entries[:o.keep]
		}
		s.dirty[k] = true
	}
	if err := s.flush(); err != nil {
		unlock()
		return nil, err
	}
	return s, nil
}

func (s *atomSink) Describe() string { return "atom:" + s.o.dir }

// TokenKey is the directory's absolute path: however it is spelled, the
// same feeds find their token.
func (s *atomSink) TokenKey() string {
	if abs, err := filepath.Abs(s.o.dir); err == nil {
		return "atom:" + abs
	}
	return s.Describe()
}

// Write adds the records' entries to their journals' feeds (a paper
// already there is replaced), keeps each feed's newest keep entries, saves
// the state and rewrites the feeds it changed, durably, before it
// returns. A record without a journal, or of a journal past MaxFeeds, is
// refused (the batch is refused whole, before anything changes).
func (s *atomSink) Write(ctx context.Context, recs []record.Record) error {
	release, err := s.Enter(ctx, true)
	if err != nil {
		return err
	}
	defer release()
	if len(recs) == 0 {
		return nil
	}
	now := s.now()
	byFeed := map[string][]*entry{}
	var order []string
	for i := range recs {
		r := &recs[i]
		if r.Journal == nil || r.Journal.ID <= 0 {
			return sink.Refused(fmt.Errorf("atom %s: record %q has no journal: a feed is a journal's", s.o.dir, r.ID))
		}
		if strings.TrimSpace(r.ID) == "" {
			return sink.Refused(fmt.Errorf("atom %s: a record without an id", s.o.dir))
		}
		k := strconv.FormatInt(r.Journal.ID, 10)
		if _, ok := byFeed[k]; !ok {
			order = append(order, k)
		}
		byFeed[k] = append(byFeed[k], newEntry(r, now))
	}
	newFeeds := 0
	for _, k := range order {
		if s.st.Feeds[k] == nil {
			newFeeds++
		}
	}
	if len(s.st.Feeds)+newFeeds > MaxFeeds {
		return sink.Refused(fmt.Errorf("atom %s: more than %d journals' feeds in one directory: give other journals a directory of their own (journals[].sinks)", s.o.dir, MaxFeeds))
	}
	// The new feeds, built beside the old ones: the state changes only
	// once the new one is saved.
	next := maps.Clone(s.st.Feeds)
	u := undo{Gen: s.st.Gen + 1, Feeds: map[string]undoFeed{}}
	for _, k := range order {
		old := s.st.Feeds[k]
		f, uf := merge(old, byFeed[k], s.o.keep)
		if old != nil && sameFeed(old, f) {
			continue // older than the feed's newest keep, or the same again
		}
		next[k], u.Feeds[k] = f, uf
	}
	if len(u.Feeds) == 0 {
		// No feed a reader sees changed (a backfill past the newest keep
		// papers): nothing to write, nothing to take back.
		return nil
	}
	st := &state{Version: 1, Gen: s.st.Gen + 1, Feeds: next, Undo: append(slices.Clone(s.st.Undo), u)}
	if len(st.Undo) > maxUndo {
		st.Undo = st.Undo[len(st.Undo)-maxUndo:]
	}
	if err := st.save(s.o.dir); err != nil {
		return fmt.Errorf("atom %s: save: %w", s.o.dir, err)
	}
	s.st = st
	for k := range u.Feeds {
		s.dirty[k] = true
		if uf := u.Feeds[k]; uf.New || uf.Name != st.Feeds[k].Name {
			s.index = true
		}
	}
	return s.flush()
}

// merge is feed old with entries es (a paper already there replaced, its
// first-seen time kept when it has no date), newest first, cut to keep;
// and the undo record that takes it back.
func merge(old *feed, es []*entry, keep int) (*feed, undoFeed) {
	var uf undoFeed
	f := &feed{}
	if old == nil {
		uf.New = true
	} else {
		f.Name, uf.Name = old.Name, old.Name
		f.Entries = slices.Clone(old.Entries)
	}
	at := make(map[string]int, len(f.Entries))
	for i, e := range f.Entries {
		at[e.ID] = i
	}
	added := map[string]bool{}
	for _, e := range es {
		if e.Journal != "" {
			f.Name = e.Journal
		}
		i, ok := at[e.ID]
		switch {
		case !ok:
			at[e.ID] = len(f.Entries)
			f.Entries = append(f.Entries, e)
			added[e.ID] = true
		default:
			prev := f.Entries[i]
			if e.Published == "" && prev.Published == "" {
				e.Updated = prev.Updated // the time the feed first had it
			}
			e.Rank = cmp.Or(prev.Rank, e.Rank) // where the listing had it then
			if !added[e.ID] {
				if !slices.ContainsFunc(uf.Removed, func(r *entry) bool { return r.ID == e.ID }) {
					uf.Removed = append(uf.Removed, prev)
				}
			}
			f.Entries[i] = e
		}
	}
	slices.SortFunc(f.Entries, newer)
	if len(f.Entries) > keep {
		for _, e := range f.Entries[keep:] {
			switch {
			case added[e.ID]:
				delete(added, e.ID) // in and out in one write
			case !slices.ContainsFunc(uf.Removed, func(r *entry) bool { return r.ID == e.ID }):
				uf.Removed = append(uf.Removed, e)
			}
		}
		f.Entries = f.Entries[:keep]
	}
	for _, e := range f.Entries {
		e.fill()
	}
	uf.Added = slices.Sorted(maps.Keys(added))
	return f, uf
}

// sameFeed reports whether feeds a and b show the same: the same name
// and the same entries, in order.
func sameFeed(a, b *feed) bool {
	if a.Name != b.Name || len(a.Entries) != len(b.Entries) {
		return false
	}
	for i, e := range a.Entries {
		if f := b.Entries[i]; e != f {
			e.render()
			f.render()
			if !bytes.Equal(e.line, f.line) {
				return false
			}
		}
	}
	return true
}

// atomToken is the sink's commit token: the directory and the write
// count its state had.
type atomToken struct {
	Dir string `json:"dir"`
	Gen uint64 `json:"gen"`
}

func (s *atomSink) Token() ([]byte, error) {
	release, err := s.Enter(context.Background(), true)
	if err != nil {
		return nil, err
	}
	defer release()
	abs, _ := filepath.Abs(s.o.dir)
	return json.Marshal(atomToken{Dir: abs, Gen: s.st.Gen})
}

// Restore takes back the writes made after the token (a crash between a
// write and its commit), so that the run that resumes leaves the feeds as
// a run without the crash would. It never takes back a committed write:
// when the writes after the token are more than it kept undo records for,
// their entries stay (a paper delivered again replaces its entry). A
// state behind the token (the state file lost or restored from an older
// backup) is sink.ErrBehind.
func (s *atomSink) Restore(ctx context.Context, token []byte) error {
	release, err := s.Enter(ctx, true)
	if err != nil {
		return err
	}
	defer release()
	var t atomToken
	if err := json.Unmarshal(token, &t); err != nil {
		return fmt.Errorf("atom %s: restore: bad token: %w", s.o.dir, err)
	}
	if abs, _ := filepath.Abs(s.o.dir); t.Dir != "" && filepath.Clean(t.Dir) != abs {
		s.log.Warn("atom sink: the token names another directory; nothing restored", "dir", s.o.dir, "token_dir", t.Dir)
		return nil
	}
	st := s.st
	if t.Gen > st.Gen {
		return fmt.Errorf("atom %s: the feeds' state is at write %d, the crawl state counts %d (%s lost or restored from an older copy): %w",
			s.o.dir, st.Gen, t.Gen, stateName, sink.ErrBehind)
	}
	if t.Gen == st.Gen {
		return nil
	}
	next := &state{Version: 1, Gen: st.Gen, Feeds: maps.Clone(st.Feeds), Undo: slices.Clone(st.Undo)}
	for next.Gen > t.Gen && len(next.Undo) > 0 && next.Undo[len(next.Undo)-1].Gen == next.Gen {
		u := next.Undo[len(next.Undo)-1]
		next.Undo = next.Undo[:len(next.Undo)-1]
		for k, uf := range u.Feeds {
			if uf.New {
				delete(next.Feeds, k)
				continue
			}
			f := next.Feeds[k]
			if f == nil {
				continue
			}
			back := &feed{Name: uf.Name}
			added := map[string]bool{}
			for _, id := range uf.Added {
				added[id] = true
			}
			for _, e := range f.Entries {
				if !added[e.ID] && !slices.ContainsFunc(uf.Removed, func(r *entry) bool { return r.ID == e.ID }) {
					back.Entries = append(back.Entries, e)
				}
			}
			back.Entries = append(back.Entries, uf.Removed...)
			slices.SortFunc(back.Entries, newer)
			if len(back.Entries) > s.o.keep {
				back.Entries = back.Entries[:s.o.keep]
			}
			next.Feeds[k] = back
		}
		next.Gen--
	}
	if next.Gen != t.Gen {
		s.log.Warn("atom sink: some writes after the last commit could not be taken back; their entries stay (a paper delivered again replaces its entry)",
			"dir", s.o.dir, "writes", next.Gen-t.Gen)
		next.Gen = t.Gen
	}
	next.Undo = nil
	if err := next.save(s.o.dir); err != nil {
		return fmt.Errorf("atom %s: save: %w", s.o.dir, err)
	}
	for k := range st.Feeds {
		s.dirty[k] = true
	}
	s.st, s.index = next, true
	return s.flush()
}

func (s *atomSink) Close() error {
	return s.Shut(func() error {
		err := s.flush()
		if uerr := s.unlock(); err == nil {
			err = uerr
		}
		return err
	})
}

// flush rewrites the feed files behind the state, and the index files,
// each durably.
func (s *atomSink) flush() error {
	for _, k := range slices.Sorted(maps.Keys(s.dirty)) {
		path := filepath.Join(s.o.dir, k+".atom")
		f := s.st.Feeds[k]
		if f == nil {
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("atom %s: %w", s.o.dir, err)
			}
			delete(s.dirty, k)
			continue
		}
		if err := atomicfile.Write(path, func(w *bufio.Writer) error { return s.writeFeed(w, k, f) }); err != nil {
			return fmt.Errorf("atom %s: %w", path, err)
		}
		delete(s.dirty, k)
	}
	if !s.index {
		return nil
	}
	if err := atomicfile.Write(filepath.Join(s.o.dir, "index.opml"), s.writeOPML); err != nil {
		return fmt.Errorf("atom %s: index.opml: %w", s.o.dir, err)
	}
	if err := atomicfile.Write(filepath.Join(s.o.dir, "index.html"), s.writeHTML); err != nil {
		return fmt.Errorf("atom %s: index.html: %w", s.o.dir, err)
	}
	s.index = false
	return nil
}

// feedTitle is a journal's feed title: its name, or its id.
func feedTitle(k string, f *feed) string {
	if f.Name != "" {
		return f.Name
	}
	return "Journal " + k
}

// feedURL is where a feed is read from: under the base URL, or relative
// to the index files.
func (s *atomSink) feedURL(k string) string {
	if s.o.base != "" {
		return s.o.base + "/" + k + ".atom"
	}
	return k + ".atom"
}

// updated is a feed's time: its newest entry's (entries are newest
// first), or the Unix epoch for a feed without one.
func updated(f *feed) string {
	u := "1970-01-01T00:00:00Z"
	for _, e := range f.Entries {
		u = max(u, e.Updated)
	}
	return u
}

func (s *atomSink) writeFeed(w *bufio.Writer, k string, f *feed) error {
	var b bytes.Buffer
	title := feedTitle(k, f)
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?>` + "\n" + `<feed xmlns="http://www.w3.org/2005/Atom">` + "\n")
	element(&b, "id", "", tagID("journal", k))
	element(&b, "title", ` type="text"`, title)
	element(&b, "subtitle", ` type="text"`, fmt.Sprintf("%s: the newest papers of journal %s, newest first (%s)", s.o.title, k, title))
	element(&b, "updated", "", updated(f))
	b.WriteString("    <author><name>")
	escape(&b, title)
	b.WriteString("</name></author>\n")
	b.WriteString(`    <generator uri="https://github.com/litcrawl/litcrawl">litcrawl</generator>` + "\n")
	if s.o.base != "" {
		b.WriteString(`    <link rel="self" type="application/atom+xml" href="`)
		escape(&b, s.feedURL(k))
		b.WriteString("\"/>\n")
	}
	w.Write(b.Bytes())
	for _, e := range f.Entries {
		e.render()
		w.Write(e.xml)
	}
	_, err := w.WriteString("</feed>\n")
	return err
}

func (s *atomSink) writeOPML(w *bufio.Writer) error {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?>` + "\n" + `<opml version="2.0">` + "\n  <head>\n")
	element(&b, "title", "", s.o.title)
	b.WriteString("  </head>\n  <body>\n")
	for _, k := range s.feedKeys() {
		t := feedTitle(k, s.st.Feeds[k])
		b.WriteString(`    <outline type="rss" text="`)
		escape(&b, t)
		b.WriteString(`" title="`)
		escape(&b, t)
		b.WriteString(`" xmlUrl="`)
		escape(&b, s.feedURL(k))
		b.WriteString("\"/>\n")
	}
	b.WriteString("  </body>\n</opml>\n")
	_, err := w.Write(b.Bytes())
	return err
}

// feedKeys are the feeds by journal id, in number order.
func (s *atomSink) feedKeys() []string {
	return slices.SortedFunc(maps.Keys(s.st.Feeds), func(a, b string) int {
		x, _ := strconv.ParseInt(a, 10, 64)
		y, _ := strconv.ParseInt(b, 10, 64)
		return int(max(min(x-y, 1), -1))
	})
}

var indexPage = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;color:#222}td,th{padding:.3rem .8rem .3rem 0;text-align:left}code{font-size:.9em}</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p>One Atom feed per journal, the newest {{.Keep}} papers of each, newest first. Paste a feed's address into a feed reader or a reference manager (Zotero: New Feed from URL); <a href="index.opml">index.opml</a> subscribes to all of them at once.</p>
<table>
<thead><tr><th>Journal</th><th>Feed</th><th>Papers</th><th>Newest</th></tr></thead>
<tbody>
{{- range .Feeds}}
<tr><td>{{.Title}}</td><td><a href="{{.URL}}" type="application/atom+xml">{{.File}}</a></td><td>{{.Entries}}</td><td>{{.Updated}}</td></tr>
{{- end}}
</tbody>
</table>
</body>
</html>
`))

func (s *atomSink) writeHTML(w *bufio.Writer) error {
	type row struct {
		Title, File, Updated string
		URL                  template.URL
		Entries              int
	}
	var rows []row
	for _, k := range s.feedKeys() {
		f := s.st.Feeds[k]
		rows = append(rows, row{Title: feedTitle(k, f), File: k + ".atom", URL: template.URL(k + ".atom"), Entries: len(f.Entries), Updated: updated(f)})
	}
	return indexPage.Execute(w, struct {
		Title string
		Keep  int
		Feeds []row
	}{s.o.title, s.o.keep, rows})
}
