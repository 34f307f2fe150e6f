// Package atom is the Atom feed sink driver: atom:DIR keeps, per journal,
// an Atom 1.0 feed (RFC 4287) of the newest papers delivered, for feed
// readers and reference managers, with an OPML list and an HTML page of
// the feeds. Importing the package registers the driver.
//
// The feeds are written with encoding/xml's escaping by hand rather than
// with a feed library: each entry is rendered once and reused in every
// rewrite of its feed (a feed is rewritten whole at each change), an
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
	"hash/fnv"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/litcrawl/litcrawl/internal/atomicfile"
	"github.com/litcrawl/litcrawl/internal/fskind"
	"github.com/litcrawl/litcrawl/internal/fspath"
	"github.com/litcrawl/litcrawl/internal/redact"
	"github.com/litcrawl/litcrawl/internal/suggest"
	"github.com/litcrawl/litcrawl/internal/textsafe"
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
	// maxState bounds a feed's state file as written (maxStateBytes;
	// tests lower it).
	maxState int64
}

func parse(rawURL string) (options, error) {
	o := options{keep: DefaultKeep, title: "Latest papers", maxState: maxStateBytes}
	rest, ok := strings.CutPrefix(rawURL, "atom:")
	if !ok {
		return o, &sink.URLError{URL: redact.URL(rawURL), Reason: "expected atom:DIR"}
	}
	dir, query, _ := strings.Cut(rest, "?")
	// Messages name the directory, not the options: a base URL may hold
	// what redact does not see (percent-encoded user information).
	bad := func(reason string) error { return &sink.URLError{URL: redact.URL("atom:" + dir), Reason: reason} }
	if err := sink.CheckPath("atom", dir, "DIR", "directory"); err != nil {
		return o, err
	}
	if dir == "~" || strings.HasPrefix(dir, "~/") {
		return o, bad("~ is not expanded here: give the directory's full path ($HOME/…)")
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
				hint := ""
				if strings.Contains(v, " ") {
					hint = " (a + in a URL's query is a space)"
				}
				return o, bad(fmt.Sprintf("keep=%q: expected the entries a feed keeps, 1 to %d%s", v, MaxKeep, hint))
			}
			o.keep = n
		case "base":
			u, err := url.Parse(v)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || !validPort(u.Port()) {
				return o, bad(fmt.Sprintf("base=%q: expected the http(s) URL the directory is served at, e.g. https://example.org/feeds (no user, query or fragment)", redact.URL(v)))
			}
			o.base = strings.TrimRight(u.String(), "/")
		case "title":
			// Refused rather than cleaned: what the operator typed is what
			// every feed shows, or the run says why not.
			t := clean(v, true, maxTitle)
			if t == "" || utf8.RuneCountInString(v) > maxTitle || !utf8.ValidString(v) || strings.ContainsFunc(v, textsafe.Unsafe) ||
				t != strings.Join(strings.Fields(v), " ") { // a character XML cannot hold (U+FFFE, …)
				return o, bad(fmt.Sprintf("title: expected the feeds' title on one line, 1 to %d characters of UTF-8 text (no control characters or marks that reorder text)", maxTitle))
			}
			o.title = t
		default:
			return o, bad(fmt.Sprintf("unknown option %q: expected keep, base or title%s", k, suggest.DidYouMean(k, "keep", "base", "title")))
		}
	}
	return o, nil
}

// same is the destination a URL names: the directory as an absolute path
// with its links resolved, and the options. One directory named with
// other options is another sink, which then fails to open (one writer
// per directory) rather than one set of options applying to both.
func same(rawURL string) string {
	o, err := parse(rawURL)
	if err != nil {
		return rawURL
	}
	return fmt.Sprintf("atom:%s?keep=%d&base=%s&title=%s", fspath.Real(o.dir), o.keep, url.QueryEscape(o.base), url.QueryEscape(o.title))
}

// validPort: none, or a TCP port number.
func validPort(p string) bool {
	if p == "" {
		return true
	}
	n, err := strconv.Atoi(p)
	return err == nil && n > 0 && n <= 65535
}

func check(rawURL string) error {
	_, err := parse(rawURL)
	return err
}

// atomSink keeps the feeds of one directory.
type atomSink struct {
	sink.Gate // Write, Token and Restore hold it exclusively
	o         options
	writer    string // the crawl state whose tokens it gives (sink.Options.Writer)
	log       *slog.Logger
	now       func() time.Time
	unlock    func() error
	feeds     map[string]*feed  // by journal id, in decimal
	gen       uint64            // the directory's write count: the newest feed's Gen
	begun     bool              // the files were checked against the state (begin)
	trimmed   bool              // the feeds were cut to keep (trim)
	headed    map[string]string // by feed, the fetch of page 1 whose head was written last (epochFor)
	dirty     map[string]bool   // feeds whose file is behind the state
	index     bool              // the index files may be behind the state
	// lastOPML and lastHTML are the index files as last written.
	lastOPML, lastHTML []byte
}

// open reads the feeds' state and checks that the directory can be
// written; it changes no feed and no state (crawl sink check opens the
// sink too), making only the directory and its lock file: the files are
// checked and mended at the first Write or Restore (begin).
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
	if err := writable(o.dir); err != nil {
		unlock()
		return nil, fmt.Errorf("atom %s: %w", o.dir, err)
	}
	if err := placesFree(o.dir); err != nil {
		unlock()
		return nil, fmt.Errorf("atom %s: %w", o.dir, err)
	}
	feeds, err := loadFeeds(o.dir)
	if err != nil {
		unlock()
		return nil, fmt.Errorf("atom: %w", err)
	}
	s := &atomSink{o: o, writer: opts.Writer, log: opts.Log(), now: opts.Clock, unlock: unlock, feeds: feeds,
		headed: map[string]string{}, dirty: map[string]bool{}}
	s.gen = s.maxGen()
	return s, nil
}

// placesFree says why a file the sink writes could not be put in dir,
// checked at open so that crawl sink check and a run's start say it, not
// the first write: dir must be listable (a crash's leftovers are found by
// listing it), its state directory a directory (a link to one is fine, a
// link to nothing is not), and a feed's or an index's name must not be
// taken by a directory, pipe or device (a file, or a link, is replaced).
func placesFree(dir string) error {
	sd := filepath.Join(dir, stateDir)
	if info, err := os.Lstat(sd); err == nil && info.Mode().Type() == fs.ModeSymlink {
		if _, err := os.Stat(sd); err != nil {
			return fmt.Errorf("%s is a symbolic link to something that cannot be used (%v): remove it, or make its target a directory", sd, errors.Unwrap(err))
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("cannot list the directory: %w", err)
	}
	for _, de := range ents {
		name, t := de.Name(), de.Type()
		k, isFeed := strings.CutSuffix(name, ".atom")
		if !(isFeed && journalKey(k)) && name != "index.opml" && name != "index.html" {
			continue
		}
		if t.IsRegular() || t == fs.ModeSymlink {
			continue
		}
		return fmt.Errorf("%s is %s, where the sink writes a file: move it away", filepath.Join(dir, name), fskind.Of(t))
	}
	return nil
}

func (s *atomSink) maxGen() uint64 {
	var g uint64
	for _, f := range s.feeds {
		g = max(g, f.Gen)
	}
	return g
}

func (s *atomSink) Describe() string { return "atom:" + s.o.dir }

// TokenKey is the directory's absolute path: however it is spelled, the
// same feeds find their token.
func (s *atomSink) TokenKey() string { return "atom:" + fspath.Real(s.o.dir) }

// begin mends the files at the first change of the session: a feed file
// behind its state (a crash between the two) or cut short is marked to be
// written again, the temporary files a crash left are removed, and a
// feed file ahead of its state, or without one (the state deleted or
// restored from an older copy), is said: the feed goes on from its state.
func (s *atomSink) begin() {
	if s.begun {
		return
	}
	s.begun, s.index = true, true
	s.lastOPML, _ = os.ReadFile(filepath.Join(s.o.dir, "index.opml"))
	s.lastHTML, _ = os.ReadFile(filepath.Join(s.o.dir, "index.html"))
	for k, f := range s.feeds {
		if readStamp(filepath.Join(s.o.dir, k+".atom")) != s.stampOf(f) {
			s.dirty[k] = true
		}
	}
	var behind []string
	for _, dir := range []string{s.o.dir, filepath.Join(s.o.dir, stateDir)} {
		ents, _ := os.ReadDir(dir)
		for _, de := range ents {
			if k, ok := strings.CutSuffix(de.Name(), ".atom"); ok && dir == s.o.dir && journalKey(k) {
				if f := s.feeds[k]; f == nil || readStamp(filepath.Join(dir, de.Name())).gen > f.Gen {
					behind = append(behind, k)
				}
			}
			base, _, ok := strings.Cut(strings.TrimPrefix(de.Name(), "."), ".tmp-")
			if !ok || !strings.HasPrefix(de.Name(), ".") || !de.Type().IsRegular() {
				continue
			}
			k, _ := strings.CutSuffix(base, ".atom")
			j, _ := strings.CutSuffix(base, ".json")
			if base == "index.opml" || base == "index.html" || journalKey(k) || journalKey(j) {
				os.Remove(filepath.Join(dir, de.Name()))
			}
		}
	}
	if len(behind) > 0 {
		slices.SortFunc(behind, byNumber)
		s.log.Warn(fmt.Sprintf("atom sink: the state of %d feeds in %s is missing or older than the feed file (deleted or restored from an older copy): those feeds go on from their state, and the next paper of such a journal starts its feed again. To put back the papers delivered before, run crawl backfill --no-resume --redeliver --pages 1-5 --journal J --sink atom:DIR",
			len(behind), filepath.Join(s.o.dir, stateDir)), "dir", s.o.dir, "journals", strings.Join(behind[:min(len(behind), 20)], ","))
	}
}

// stamp is what a feed file was made from, as its first comment says: the
// write, how many entries, and the options it was rendered with (base=
// and title=). A file whose stamp is not its state's is written again: a
// crash between saving a feed's state and writing its file (a write's, or
// a smaller keep's cut, which keeps the write's number), or options
// changed since (every feed shows them).
type stamp struct {
	gen     uint64
	entries int
	opts    string
}

// readStamp is the stamp of the whole feed file at path; zero for a file
// missing, cut short or not made by the sink, and only the write for one
// made before stamps said more.
func readStamp(path string) stamp {
	f, err := os.Open(path)
	if err != nil {
		return stamp{}
	}
	defer f.Close()
	tail := []byte("</feed>\n")
	end := make([]byte, len(tail))
	if st, err := f.Stat(); err != nil || st.Size() < int64(len(tail)) {
		return stamp{}
	} else if _, err := f.ReadAt(end, st.Size()-int64(len(tail))); err != nil || !bytes.Equal(end, tail) {
		return stamp{}
	}
	head := make([]byte, 256)
	n, _ := io.ReadFull(f, head)
	_, rest, ok := bytes.Cut(head[:n], []byte(genComment))
	if !ok {
		return stamp{}
	}
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	st := stamp{entries: -1}
	fmt.Sscanf(string(line), "%d, %d entries, options %s -->", &st.gen, &st.entries, &st.opts)
	return st
}

// stampOf is the stamp feed f's file has when it is current.
func (s *atomSink) stampOf(f *feed) stamp {
	h := fnv.New64a()
	h.Write([]byte(s.o.base + "\n" + s.o.title))
	return stamp{gen: f.Gen, entries: len(f.Entries), opts: fmt.Sprintf("%016x", h.Sum64())}
}

// genComment begins the comment that says which write made a feed file.
const genComment = "<!-- litcrawl feed state, write "

// trim cuts the feeds to keep once in a session, after a Restore's undo
// (so that what it brings back is what the run without the crash had):
// a keep smaller than the last run's holds from then on.
func (s *atomSink) trim() error {
	if s.trimmed {
		return nil
	}
	s.trimmed = true
	for _, k := range slices.Sorted(maps.Keys(s.feeds)) {
		f := s.feeds[k]
		if len(f.Entries) <= s.o.keep {
			continue
		}
		g := *f
		g.Entries = f.Entries[:s.o.keep:s.o.keep]
		if err := g.save(s.o.dir, k, s.o.maxState); err != nil {
			return fmt.Errorf("atom %s: save: %w", s.o.dir, err)
		}
		s.feeds[k], s.dirty[k], s.index = &g, true, true
	}
	return nil
}

// Write adds the records' entries to their journals' feeds (a paper
// already there is replaced), keeps each feed's newest keep entries, saves
// the state of the feeds it changed and rewrites them, durably, before it
// returns; a write that changes no feed writes nothing. A record without
// a journal or a valid id, or of a journal past MaxFeeds, is refused (the
// batch is refused whole, before anything changes).
func (s *atomSink) Write(ctx context.Context, recs []record.Record) error {
	release, err := s.Enter(ctx, true)
	if err != nil {
		return err
	}
	defer release()
	if len(recs) == 0 {
		return nil
	}
	s.begin()
	if err := s.trim(); err != nil {
		return err
	}
	now := s.now().UTC().Truncate(time.Second)
	byFeed := map[string][]*entry{}
	var order []string
	for i := range recs {
		r := &recs[i]
		if r.Journal == nil || r.Journal.ID <= 0 {
			return sink.Refused(fmt.Errorf("atom %s: record %s has no journal: a feed is a journal's", s.o.dir, strconv.Quote(textsafe.Cut(r.ID, 200))))
		}
		if !validID(r.ID) {
			return sink.Refused(fmt.Errorf("atom %s: record id %s: expected 1 to %d bytes of text without control characters", s.o.dir, strconv.Quote(textsafe.Cut(r.ID, 200)), maxIDBytes))
		}
		k := strconv.FormatInt(r.Journal.ID, 10)
		if _, ok := byFeed[k]; !ok {
			order = append(order, k)
		}
		byFeed[k] = append(byFeed[k], newEntry(r, now))
	}
	newFeeds := 0
	for _, k := range order {
		if s.feeds[k] == nil {
			newFeeds++
		}
	}
	if len(s.feeds)+newFeeds > MaxFeeds {
		return sink.Refused(fmt.Errorf("atom %s: more than %d journals' feeds in one directory: give other journals a directory of their own (journals[].sinks)", s.o.dir, MaxFeeds))
	}
	gen := s.gen + 1
	changed := map[string]*feed{}
	heads := map[string]string{}
	for _, k := range order {
		old := s.feeds[k]
		epoch, epochAt, head, inHead := s.epochFor(k, old, byFeed[k], now)
		f, u := merge(old, byFeed[k], s.o.keep, epoch, epochAt, inHead, now.Format(time.RFC3339))
		if head != "" {
			heads[k] = head
		}
		if old != nil && sameFeed(old, f) {
			continue // older than the feed's newest keep, or the same again
		}
		f.Gen, u.Gen, u.Writer = gen, gen, s.writer
		if old != nil {
			u.PrevGen = old.Gen
			f.Undo = slices.Clone(old.Undo)
		}
		f.Undo = append(f.Undo, u)
		if len(f.Undo) > maxUndo {
			f.Undo = f.Undo[len(f.Undo)-maxUndo:]
		}
		changed[k] = f
	}
	if len(changed) == 0 {
		maps.Copy(s.headed, heads) // the head was the feed as it was
		// No feed a reader sees changed (a backfill past the newest keep
		// papers): nothing to write, nothing to take back; only files
		// begin found behind their state are written again.
		if len(s.dirty) > 0 {
			return s.flush()
		}
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(changed)) {
		f := changed[k]
		if err := f.save(s.o.dir, k, s.o.maxState); err != nil {
			if errors.Is(err, errStateTooBig) {
				return sink.Refused(fmt.Errorf("atom %s: journal %s's feed would need a state of more than %d MiB: lower keep= or give the journal a directory of its own",
					s.o.dir, k, s.o.maxState>>20))
			}
			return fmt.Errorf("atom %s: save: %w", s.o.dir, err)
		}
		// Saved: the write is in the state (a crash from here on is taken
		// back by Restore, as the crawl has not committed it).
		s.feeds[k], s.gen, s.dirty[k], s.index = f, gen, true, true
	}
	maps.Copy(s.headed, heads)
	return s.flush()
}

// epochFor is the epoch of a write's entries of feed k, and the fetch
// of the listing's first page it is the head of ("" when it is none): a
// write of papers from a fetch of page 1 that the feed has not had the
// head of (a run's, a fleet job's, an archived page's; the session's for
// pages read from files) opens a new epoch, and its papers new to the
// feed go above every paper the feed had, dates aside (merge). Papers of
// other pages keep the listing's order among the feed's (a backfill
// going on, resumed after a crash or not, a nightly filling in where an
// earlier walk stopped short): they are older than the head that a walk
// from page 1 found known. A later write of the same fetch of page 1 (a
// page split by the quarantine around a refused record, its halves written
// one after the other) is in the head it began: inHead, in its epoch.
func (s *atomSink) epochFor(k string, old *feed, es []*entry, now time.Time) (epoch int, at string, head string, inHead bool) {
	at = now.Format(time.RFC3339)
	if i := slices.IndexFunc(es, onFirstPage); i >= 0 {
		if s.headed[k] != es[i].fetch {
			head = es[i].fetch
		} else {
			inHead = old != nil
		}
	}
	switch {
	case old == nil:
		return 1, at, head, head != ""
	case head != "":
		return old.Epoch + 1, at, head, true
	}
	return old.Epoch, cmp.Or(old.EpochAt, at), "", inHead
}

// onFirstPage reports whether e was on the listing's first page.
func onFirstPage(e *entry) bool { return e.Rank > 0 && e.Rank < 2*rankPage }

// merge is feed old with entries es (a paper already there replaced,
// keeping its place: epoch, listing rank and, without a date, its time),
// newest first, cut to keep; and the undo record that takes it back. In
// a head write (epochFor) the first page's papers new to the feed that
// the listing shows above every first-page paper the feed already has
// take the new epoch; every other new paper takes epoch 0, under every
// head of its date, in the listing's order. A later revision of a paper
// the feed has is revised at now (its <updated>), in its place.
func merge(old *feed, es []*entry, keep, epoch int, epochAt string, head bool, now string) (*feed, undo) {
	var u undo
	f := &feed{Epoch: epoch, EpochAt: epochAt}
	if old == nil {
		u.New = true
	} else {
		f.Name, u.Name, u.Epoch, u.EpochAt = old.Name, old.Name, old.Epoch, old.EpochAt
		f.Entries = slices.Clone(old.Entries)
	}
	x := newEntryIndex(f)
	anchor := int64(math.MaxInt64) // the first-page paper the feed has that the listing shows first
	for _, e := range es {
		if _, ok := x.find(e); ok && onFirstPage(e) {
			anchor = min(anchor, e.Rank)
		}
	}
	m := mergeUndo{u: &u, removed: map[string]bool{}, added: map[string]bool{}}
	for _, e := range es {
		if e.Journal != "" {
			f.Name = e.Journal
		}
		e.Epoch = 0
		if head && onFirstPage(e) && e.Rank < anchor {
			e.Epoch = epoch
		}
		if e.Published == "" {
			e.Updated = epochAt
		}
		if i, ok := x.find(e); ok {
			m.replace(x, i, e, now)
		} else {
			x.add(e)
			m.added[e.ID] = true
		}
	}
	slices.SortFunc(f.Entries, newer)
	if len(f.Entries) > keep {
		for _, e := range f.Entries[keep:] {
			m.drop(e)
		}
		f.Entries = f.Entries[:keep:keep]
	}
	for _, e := range f.Entries {
		e.fill()
	}
	u.Added = slices.Sorted(maps.Keys(m.added))
	return f, u
}

// entryIndex finds a feed's entries. A paper is found by its id, or by its
// DOI when one of the two was read without its JSON (id "doi:…": one
// paper, as the ledgers have it): found so, it keeps its entry's id, so a
// reader never shows it twice. Two papers that both have an id of their
// own stay two, even when a DOI moved from one to the other.
type entryIndex struct {
	f     *feed
	at    map[string]int   // by id
	byDOI map[string][]int // by DOI key, checked again at each use (an entry's DOI may change)
}

func newEntryIndex(f *feed) *entryIndex {
	x := &entryIndex{f: f, at: make(map[string]int, len(f.Entries)), byDOI: map[string][]int{}}
	for i, e := range f.Entries {
		x.at[e.ID] = i
		if k := e.doiKey(); k != "" {
			x.byDOI[k] = append(x.byDOI[k], i)
		}
	}
	return x
}

// find is the place of e's paper in the feed.
func (x *entryIndex) find(e *entry) (int, bool) {
	if i, ok := x.at[e.ID]; ok {
		return i, true
	}
	k := e.doiKey()
	if k == "" {
		return 0, false
	}
	for _, i := range x.byDOI[k] {
		o := x.f.Entries[i]
		if (strings.HasPrefix(e.ID, "doi:") || strings.HasPrefix(o.ID, "doi:")) && o.doiKey() == k {
			return i, true
		}
	}
	return 0, false
}

// add appends a paper new to the feed.
func (x *entryIndex) add(e *entry) {
	x.at[e.ID] = len(x.f.Entries)
	if k := e.doiKey(); k != "" {
		x.byDOI[k] = append(x.byDOI[k], len(x.f.Entries))
	}
	x.f.Entries = append(x.f.Entries, e)
}

// mergeUndo is what a merge records to take it back: the entries it
// replaced or cut (removed, once each) and those it added.
type mergeUndo struct {
	u              *undo
	removed, added map[string]bool
}

// replace puts e in the place of the feed's entry i (its paper), keeping
// that entry's id, epoch, listing rank and, without a date, its time. A
// later revision of the paper is revised at now.
func (m mergeUndo) replace(x *entryIndex, i int, e *entry, now string) {
	prev := x.f.Entries[i]
	e.ID = prev.ID
	e.Revised = prev.Revised
	if e.rec != nil && e.rec.Revision > 1 {
		e.Revised = max(now, prev.Revised)
	}
	e.Epoch, e.Rank = prev.Epoch, cmp.Or(prev.Rank, e.Rank)
	if e.Published == "" && prev.Published == "" {
		e.Updated = prev.Updated // the time the feed first had it
	}
	if !m.added[e.ID] && !m.removed[e.ID] {
		m.removed[e.ID] = true
		m.u.Removed = append(m.u.Removed, prev)
	}
	x.f.Entries[i] = e
	if k := e.doiKey(); k != "" && !slices.Contains(x.byDOI[k], i) {
		x.byDOI[k] = append(x.byDOI[k], i)
	}
}

// drop records an entry cut from the feed (beyond keep).
func (m mergeUndo) drop(e *entry) {
	switch {
	case m.added[e.ID]:
		delete(m.added, e.ID) // in and out in one write
	case !m.removed[e.ID]:
		m.removed[e.ID] = true
		m.u.Removed = append(m.u.Removed, e)
	}
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

// atomToken is the sink's commit token: the directory, its write count,
// and the crawl state the writes were for.
type atomToken struct {
	Dir    string `json:"dir"`
	Gen    uint64 `json:"gen"`
	Writer string `json:"writer,omitempty"`
}

func (s *atomSink) Token() ([]byte, error) {
	release, err := s.Enter(context.Background(), true)
	if err != nil {
		return nil, err
	}
	defer release()
	return json.Marshal(atomToken{Dir: fspath.Real(s.o.dir), Gen: s.gen, Writer: s.writer})
}

// Restore takes back this crawl's writes made after the token (a crash
// between a write and its commit), so that the run that resumes leaves
// the feeds as a run without the crash would. It takes back only the
// crawl state's own writes, newest first, feed by feed, and stops at a
// write of another (a crawl state, crawl parse or replay sharing the
// directory): that write and what came before it stay. It never takes
// back a committed write. A state behind the token (its files deleted or
// restored from an older copy) is said and the feeds go on from what
// they hold: a feed is a window on the newest papers, not their archive.
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
	switch {
	case t.Dir != "" && filepath.Clean(t.Dir) != fspath.Real(s.o.dir):
		s.log.Warn("atom sink: the token names another directory; nothing restored", "dir", s.o.dir, "token_dir", t.Dir)
		return nil
	case t.Writer != s.writer:
		s.log.Warn("atom sink: the token is of another crawl state; nothing restored", "dir", s.o.dir)
		return nil
	}
	s.begin()
	if t.Gen > s.gen {
		s.log.Warn(fmt.Sprintf("atom sink: the feeds' state in %s is at write %d, the crawl state counts %d: it was deleted or restored from an older copy. The feeds go on from what they hold; to put back the papers delivered before, run crawl backfill --no-resume --redeliver --pages 1-5 --sink atom:DIR",
			filepath.Join(s.o.dir, stateDir), s.gen, t.Gen), "dir", s.o.dir, "state_writes", s.gen, "token_writes", t.Gen)
		if err := s.trim(); err != nil {
			return err
		}
		return s.flush()
	}
	left := 0
	for _, k := range slices.Sorted(maps.Keys(s.feeds)) {
		f, back := s.feeds[k], false
		for f != nil && f.Gen > t.Gen {
			n := len(f.Undo)
			if n == 0 || f.Undo[n-1].Gen != f.Gen || f.Undo[n-1].Writer != s.writer {
				left++
				break
			}
			f, back = undone(f), true
		}
		if !back {
			continue
		}
		if f == nil {
			delete(s.feeds, k)
			if err := os.Remove(statePath(s.o.dir, k)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("atom %s: %w", s.o.dir, err)
			}
		} else {
			if err := f.save(s.o.dir, k, s.o.maxState); err != nil {
				return fmt.Errorf("atom %s: save: %w", s.o.dir, err)
			}
			s.feeds[k] = f
		}
		s.dirty[k], s.index = true, true
	}
	if left > 0 {
		s.log.Warn("atom sink: some writes after the last commit could not be taken back (another crawl wrote the feed since, or more writes than undo records were kept); their entries stay (a paper delivered again replaces its entry)",
			"dir", s.o.dir, "feeds", left)
	}
	if err := atomicfile.SyncDir(filepath.Join(s.o.dir, stateDir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("atom %s: %w", s.o.dir, err)
	}
	s.gen = s.maxGen()
	if err := s.trim(); err != nil {
		return err
	}
	return s.flush()
}

// undone is f with its last write taken back (nil: the write made it).
func undone(f *feed) *feed {
	u := f.Undo[len(f.Undo)-1]
	if u.New {
		return nil
	}
	back := &feed{Name: u.Name, Gen: u.PrevGen, Epoch: u.Epoch, EpochAt: u.EpochAt, Undo: f.Undo[: len(f.Undo)-1 : len(f.Undo)-1]}
	added := map[string]bool{}
	for _, id := range u.Added {
		added[id] = true
	}
	for _, e := range u.Removed {
		added[e.ID] = true // the entry that replaced it goes too
	}
	for _, e := range f.Entries {
		if !added[e.ID] {
			back.Entries = append(back.Entries, e)
		}
	}
	back.Entries = append(back.Entries, u.Removed...)
	slices.SortFunc(back.Entries, newer)
	return back
}

func (s *atomSink) Close() error {
	return s.Shut(func() error {
		var err error
		if s.begun {
			err = s.flush()
		}
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
		f := s.feeds[k]
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
	// Each index file is written when what it shows changed (a feed's
	// count or newest time, a new feed, a name).
	for _, ix := range []struct {
		name string
		fill func(*bufio.Writer) error
		last *[]byte
	}{{"index.opml", s.writeOPML, &s.lastOPML}, {"index.html", s.writeHTML, &s.lastHTML}} {
		if len(s.feeds) == 0 && *ix.last == nil {
			continue // no feed yet (a first write refused): no index listing none
		}
		var b bytes.Buffer
		w := bufio.NewWriter(&b)
		if err := ix.fill(w); err != nil {
			return fmt.Errorf("atom %s: %s: %w", s.o.dir, ix.name, err)
		}
		w.Flush()
		if bytes.Equal(b.Bytes(), *ix.last) {
			continue
		}
		if err := atomicfile.Write(filepath.Join(s.o.dir, ix.name), func(w *bufio.Writer) error { _, err := w.Write(b.Bytes()); return err }); err != nil {
			return fmt.Errorf("atom %s: %s: %w", s.o.dir, ix.name, err)
		}
		*ix.last = b.Bytes()
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
		u = max(u, e.Updated, e.Revised)
	}
	return u
}

// The namespaces of an entry's paper elements (renderPaper): Dublin
// Core's elements and PRISM's basic vocabulary, as journals' feeds use
// them.
const (
	nsDC    = "http://purl.org/dc/elements/1.1/"
	nsPRISM = "http://prismstandard.org/namespaces/basic/2.0/"
)

func (s *atomSink) writeFeed(w *bufio.Writer, k string, f *feed) error {
	var b bytes.Buffer
	title := feedTitle(k, f)
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?>` + "\n")
	st := s.stampOf(f)
	fmt.Fprintf(&b, "%s%d, %d entries, options %s -->\n", genComment, st.gen, st.entries, st.opts)
	b.WriteString(`<feed xmlns="http://www.w3.org/2005/Atom" xmlns:dc="` + nsDC + `" xmlns:prism="` + nsPRISM + `">` + "\n")
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
		t := feedTitle(k, s.feeds[k])
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
	return slices.SortedFunc(maps.Keys(s.feeds), byNumber)
}

// byNumber orders journal keys by their number.
func byNumber(a, b string) int {
	x, _ := strconv.ParseInt(a, 10, 64)
	y, _ := strconv.ParseInt(b, 10, 64)
	return cmp.Compare(x, y)
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
<p>One Atom feed per journal, the newest {{.Keep}} papers of each, newest first. Each paper carries its authors, DOI, journal and date as reference managers read them.</p>
<h2>Subscribe</h2>
<ul>
<li><b>Zotero</b>: File &rarr; New Feed &rarr; From URL&hellip;, then paste a feed's address (copy the link from the table). Its papers come in as journal articles; &ldquo;Add to My Library&rdquo; keeps one.</li>
<li><b>A feed reader</b> (Thunderbird, NetNewsWire, Feedly&hellip;): add a feed's address, or import <a href="index.opml">index.opml</a> to subscribe to all of them at once.</li>
<li>A reader fetches a feed by its address: serve this folder over HTTP where the reader can reach it. On one machine, from the folder above this one: <code>python3 -m http.server 8000 --bind 127.0.0.1 --directory {{.Dir}}</code>; a feed's address is then <code>http://127.0.0.1:8000/</code> and its file name.</li>
</ul>
<table>
<thead><tr><th>Journal</th><th>Feed</th><th>Papers</th><th>Newest</th></tr></thead>
<tbody>
{{- range .Feeds}}
<tr><td>{{.Title}}</td><td><a href="{{.URL}}" type="application/atom+xml">{{.File}}</a></td><td>{{.Entries}}</td><td>{{.Updated}}</td></tr>
{{- end}}
</tbody>
</table>
<footer><p>Written by litcrawl at each crawl that changes a feed.</p></footer>
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
		f := s.feeds[k]
		rows = append(rows, row{Title: feedTitle(k, f), File: k + ".atom", URL: template.URL(k + ".atom"), Entries: len(f.Entries), Updated: updated(f)})
	}
	return indexPage.Execute(w, struct {
		Title, Dir string
		Keep       int
		Feeds      []row
	}{s.o.title, filepath.Base(fspath.Real(s.o.dir)), s.o.keep, rows})
}
