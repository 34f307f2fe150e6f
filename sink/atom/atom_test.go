package atom_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/internal/browsertest"
	"github.com/litcrawl/litcrawl/internal/feedtest"
	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/sink"
	_ "github.com/litcrawl/litcrawl/sink/atom"
	"github.com/litcrawl/litcrawl/sink/sinktest"
)

const tagPaper = "tag:litcrawl.github.io,2026:paper:"

// keeps is a record as its entry keeps it.
func keeps(r record.Record) record.Record {
	k := record.Record{ID: r.ID, Title: r.Title, DOI: r.DOI, Authors: r.Authors, Abstract: r.Abstract}
	if t, err := time.Parse("2006-01-02", r.Published); err == nil {
		k.Published = t.Format(time.RFC3339)
	} else if _, err := time.Parse(time.RFC3339, r.Published); err == nil {
		k.Published = r.Published
	}
	if r.Journal != nil {
		k.Journal = &record.Journal{ID: r.Journal.ID, Name: r.Journal.Name}
	}
	return k
}

// readFeeds reads every feed of dir back as records (as keeps makes
// them), checking each against RFC 4287 on the way.
func readFeeds(t *testing.T, dir string) []record.Record {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "*.atom"))
	var out []record.Record
	for _, p := range paths {
		j, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(p), ".atom"), 10, 64)
		if err != nil {
			t.Fatalf("feed file %s", p)
		}
		f := feedtest.Read(t, p)
		for _, e := range f.Entries {
			r := record.Record{ID: strings.TrimPrefix(e.ID, tagPaper), Title: e.Title.Body, Published: e.Published}
			if e.Summary != nil {
				r.Abstract = e.Summary.Body
			}
			r.Authors = append(r.Authors, e.Creators...)
			if e.Content != nil {
				for _, l := range strings.Split(e.Content.Body, "\n") {
					if d, ok := strings.CutPrefix(l, "DOI: "); ok {
						r.DOI = d
					}
				}
			}
			r.Journal = &record.Journal{ID: j}
			for _, c := range e.Categories {
				if strings.HasSuffix(c.Scheme, ":journal") {
					r.Journal.Name = c.Term
				}
			}
			out = append(out, r)
		}
	}
	return out
}

func TestAtomConformance(t *testing.T) {
	sinktest.Run(t, func(t *testing.T) sinktest.Destination {
		dir := filepath.Join(t.TempDir(), "feeds")
		return sinktest.Destination{
			Open: func(t *testing.T) sink.Sink { return sinktest.Open(t, "atom:"+dir+"?keep=1000", sink.Options{}) },
			Read: func(t *testing.T) []record.Record { return readFeeds(t, dir) },
		}
	}, sinktest.Features{Restore: true, DedupeByID: true, Latest: true, Keeps: keeps,
		Refuse: func(id string) record.Record { r := sinktest.Records(id, 1)[0]; r.ID, r.Journal = id, nil; return r }})
}

// write writes batches to one atom: URL, closing the sink.
func write(t *testing.T, url string, opts sink.Options, batches ...[]record.Record) {
	t.Helper()
	s := sinktest.Open(t, url, opts)
	for _, b := range batches {
		if err := s.Write(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// papers are n records of journal j, one a day from day, newest last.
func papers(prefix string, j int64, n int, day time.Time) []record.Record {
	rs := sinktest.Records(prefix, n)
	for i := range rs {
		rs[i].Journal = &record.Journal{ID: j, Name: fmt.Sprintf("Journal %d <Letters>", j)}
		rs[i].Published = day.AddDate(0, 0, i).Format("2006-01-02")
		rs[i].DOIURL = "https://doi.org/" + rs[i].DOI
		rs[i].Subject = "Chemistry"
	}
	return rs
}

var day0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// A feed per journal, its newest keep papers newest first; a paper
// delivered again replaces its entry; the index files list every feed;
// feedparser reads every file without a complaint.
func TestFeedsPerJournal(t *testing.T) {
	dir := t.TempDir()
	url := "atom:" + dir + "?keep=5&base=https://example.org/feeds/&title=Lab+feeds"
	a, b := papers("a", 11, 8, day0), papers("b", 12, 3, day0)
	fixed := slices.Clone(a[7:])
	fixed[0].Title = "Corrected title"
	write(t, url, sink.Options{}, a[:4], b, a[4:], fixed)

	f := feedtest.Read(t, filepath.Join(dir, "11.atom"))
	want := []string{tagPaper + "a-7", tagPaper + "a-6", tagPaper + "a-5", tagPaper + "a-4", tagPaper + "a-3"}
	if !slices.Equal(f.IDs(), want) {
		t.Fatalf("journal 11's feed holds %v, want its 5 newest, newest first: %v", f.IDs(), want)
	}
	e := f.Entries[0]
	if e.Title.Body != "Corrected title" || e.Published != "2026-01-08T00:00:00Z" || e.Updated != e.Published || f.Updated != e.Updated ||
		len(e.Creators) != 2 || e.Creators[1] != "Théo Pierron" || len(e.Links) != 1 || e.Links[0].Href != "https://doi.org/10.1000/a.7" ||
		len(e.Categories) != 2 || e.Categories[0].Term != "Journal 11 <Letters>" || e.Categories[1].Term != "Chemistry" ||
		!strings.Contains(e.Content.Body, "论文标题") {
		t.Errorf("entry: %+v", e)
	}
	if f.Title.Body != "Journal 11 <Letters>" || f.ID != "tag:litcrawl.github.io,2026:journal:11" ||
		len(f.Links) != 1 || f.Links[0].Href != "https://example.org/feeds/11.atom" {
		t.Errorf("feed: %+v", f)
	}
	if g := feedtest.Read(t, filepath.Join(dir, "12.atom")); len(g.Entries) != 3 {
		t.Errorf("journal 12's feed holds %d entries", len(g.Entries))
	}
	opml, _ := os.ReadFile(filepath.Join(dir, "index.opml"))
	html, _ := os.ReadFile(filepath.Join(dir, "index.html"))
	for _, want := range []string{`xmlUrl="https://example.org/feeds/11.atom"`, `xmlUrl="https://example.org/feeds/12.atom"`, "<title>Lab feeds</title>", `text="Journal 11 &lt;Letters&gt;"`} {
		if !strings.Contains(string(opml), want) {
			t.Errorf("index.opml lacks %s:\n%s", want, opml)
		}
	}
	for _, want := range []string{`href="11.atom"`, `href="12.atom"`, "Journal 11 &lt;Letters&gt;", "default-src 'none'",
		"<b>Zotero</b>: File &rarr; New Feed &rarr; From URL", `import <a href="index.opml">index.opml</a>`} {
		if !strings.Contains(string(html), want) {
			t.Errorf("index.html lacks %s:\n%s", want, html)
		}
	}
	if strings.Contains(string(html), `href="http`) || strings.Contains(string(html), "src=") || strings.Contains(string(html), "url(") {
		t.Errorf("index.html loads something: %s", html)
	}
	ps := feedtest.Feedparser(t, filepath.Join(dir, "11.atom"), filepath.Join(dir, "12.atom"))
	if ps[0].Title != "Journal 11 <Letters>" || !slices.Equal(ps[0].IDs, want) || ps[0].Titles[0] != "Corrected title" ||
		!slices.Equal(ps[0].Authors[0], []string{"Ann Lee", "Théo Pierron"}) {
		t.Errorf("feedparser read %+v", ps[0])
	}
	// What makes an entry a paper to a reference manager, as feedparser
	// reads it: the DOI (PRISM's, and Dublin Core's identifier), the
	// journal and the paper's day.
	if ps[0].DOIs[0] != "10.1000/a.7" || ps[0].Identifiers[0] != "doi:10.1000/a.7" || ps[0].Journals[0] != "Journal 11 <Letters>" ||
		ps[0].CoverDates[0] != "2026-01-08" {
		t.Errorf("feedparser read the paper as DOI %q, identifier %q, journal %q, cover date %q",
			ps[0].DOIs[0], ps[0].Identifiers[0], ps[0].Journals[0], ps[0].CoverDates[0])
	}
}

// A paper without a date keeps the time the feed first had it, however
// often it is delivered again; a feed shrinks to a smaller keep.
func TestUndatedPaperKeepsItsFirstTime(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	r := papers("u", 5, 3, day0)
	r[2].Published = ""
	write(t, "atom:"+dir, sink.Options{Now: clock}, r)
	now = now.Add(48 * time.Hour)
	write(t, "atom:"+dir+"?keep=2", sink.Options{Now: clock}, r[2:])
	f := feedtest.Read(t, filepath.Join(dir, "5.atom"))
	if len(f.Entries) != 2 || f.Entries[0].ID != tagPaper+"u-2" || f.Entries[0].Updated != "2026-12-01T09:00:00Z" || f.Entries[0].Published != "" {
		t.Errorf("entries %+v", f.Entries)
	}
}

// Hostile text stays text: control characters and broken UTF-8 are gone,
// markup is escaped (never an element a reader would run), and a link
// that is not http(s) is dropped.
func TestHostileTextStaysText(t *testing.T) {
	dir := t.TempDir()
	r := papers("h", 7, 1, day0)[0]
	r.Title = "<script>alert(1)</script> ]]> \x00\x1b[31mred\u202e \xff\xfe done"
	r.Abstract = "<![CDATA[ x ]]> <img src=x onerror=alert(1)>"
	r.Authors = []string{"A\u0085B", "<b>Bold</b>"}
	r.DOIURL, r.URL = "javascript:alert(1)", "data:text/html,x"
	write(t, "atom:"+dir, sink.Options{}, []record.Record{r})
	f := feedtest.Read(t, filepath.Join(dir, "7.atom")) // fails on any non-Atom element
	e := f.Entries[0]
	if e.Title.Body != "<script>alert(1)</script> ]]> [31mred \uFFFD done" || len(e.Links) != 0 ||
		e.Summary.Body != r.Abstract || e.Creators[0] != "A B" || e.Creators[1] != "<b>Bold</b>" {
		t.Errorf("entry %+v", e)
	}
	feedtest.Feedparser(t, filepath.Join(dir, "7.atom"))
}

// Bad URLs are refused, naming what is expected.
func TestURLsAreChecked(t *testing.T) {
	for url, want := range map[string]string{
		"atom:":                                    "expected a directory",
		"atom://host/x":                            "not a URL",
		"atom:https://u:pw@x.org/feeds":            "expected atom:DIR, a directory, not a URL",
		"atom:d?keep=0":                            "keep=\"0\": expected the entries a feed keeps, 1 to 10000",
		"atom:d?keep=+5":                           "keep=\" 5\": expected the entries a feed keeps, 1 to 10000 (a + in a URL's query is a space)",
		"atom:d?keep=10001":                        "1 to 10000",
		"atom:d?keep=1&keep=2":                     "keep given 2 times",
		"atom:d?base=ftp://x":                      "base=\"ftp://x\": expected the http(s) URL",
		"atom:d?base=https://u:pw@x.org/f":         "REDACTED",
		"atom:d?title=":                            "title: expected",
		"atom:d?colour=red":                        `unknown option "colour": expected keep, base or title`,
		"atom:d?kep=3":                             `unknown option "kep": expected keep, base or title; did you mean keep?`,
		"atom:d?title=" + strings.Repeat("x", 201): "1 to 200 characters",
		"atom:d?title=a%0Ab":                       "on one line",
		"atom:d?title=%FF%FE":                      "of UTF-8 text",
		"atom:d?title=a%E2%80%AEb":                 "marks that reorder text",
		"atom:d?title=a%EF%BF%BEb":                 "1 to 200 characters of UTF-8 text",
		"atom:~/feeds":                             "~ is not expanded",
		"atom:d?base=https://x.org/f?":             "no user, query or fragment",
		"atom:d?base=https://x.org:99999/f":        "expected the http(s) URL",
		"atom:d?base=https%3A%2F%2Fu%3Apw%40x.org": "REDACTED",
	} {
		err := sink.CheckURL(url)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "pw") {
			t.Errorf("%s: %v, want %q", url, err, want)
		}
	}
}

// One writer per directory: a second sink on it is refused.
func TestOneWriterPerDirectory(t *testing.T) {
	dir := t.TempDir()
	s := sinktest.Open(t, "atom:"+dir, sink.Options{})
	defer s.Close()
	if _, err := sink.Open(context.Background(), "atom:"+dir, sink.Options{}); err == nil || !strings.Contains(err.Error(), "one writer per directory") {
		t.Fatalf("second writer: %v", err)
	}
}

// A crash after writes that were not committed: Restore takes back every
// one of them (a batch split by a refusal is several writes), entries they
// replaced or pushed out come back, and a resumed run ends as a run
// without the crash. A token ahead of the state is said, and the feeds go on.
func TestRestoreTakesBackUncommittedWrites(t *testing.T) {
	dir := t.TempDir()
	url := "atom:" + dir + "?keep=4"
	a, b := papers("a", 3, 4, day0), papers("b", 3, 4, day0.AddDate(0, 1, 0))
	fixed := slices.Clone(a[:1])
	fixed[0].Title = "replaced"

	clean := t.TempDir()
	write(t, "atom:"+clean+"?keep=4", sink.Options{}, a, b[:2], b[2:])

	s := sinktest.Open(t, url, sink.Options{})
	if err := s.Write(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	tok, _ := s.(sink.Committer).Token()
	for _, batch := range [][]record.Record{b[:2], fixed, b[2:]} { // pushes a out, replaces one
		if err := s.Write(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
	}
	s.Close() // the crash: nothing after a's commit was committed

	s2 := sinktest.Open(t, url, sink.Options{})
	if err := s2.(sink.Restorer).Restore(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	if got := feedtest.Read(t, filepath.Join(dir, "3.atom")); !slices.Equal(got.IDs(), []string{tagPaper + "a-3", tagPaper + "a-2", tagPaper + "a-1", tagPaper + "a-0"}) ||
		got.Entries[3].Title.Body == "replaced" {
		t.Fatalf("after Restore: %v", got.IDs())
	}
	for _, batch := range [][]record.Record{b[:2], b[2:]} {
		if err := s2.Write(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
	}
	s2.Close()
	want, _ := os.ReadFile(filepath.Join(clean, "3.atom"))
	got, _ := os.ReadFile(filepath.Join(dir, "3.atom"))
	if string(got) != string(want) {
		t.Errorf("the resumed feed differs from a run without the crash:\n%s\nwant:\n%s", got, want)
	}
	s3 := sinktest.Open(t, url, sink.Options{})
	defer s3.Close()
	// A token ahead of the state (its files deleted or from an older
	// copy): said, and the feeds go on from what they hold.
	if err := s3.(sink.Restorer).Restore(context.Background(), []byte(`{"gen":99}`)); err != nil {
		t.Errorf("a token ahead of the state: %v, want the feeds to go on", err)
	}
	if got := feedtest.Read(t, filepath.Join(dir, "3.atom")); len(got.Entries) != 4 {
		t.Errorf("after a token ahead: %v", got.IDs())
	}
}

// A write that changes no feed (a backfill's papers older than the feed's
// newest keep, or a paper delivered again as it was) writes nothing: the
// feed file stays the same file and the token does not move; the papers
// are not lost for it, as the feed never showed them. A paper delivered
// again with a new title changes its entry.
func TestOlderPapersLeaveTheFeedAlone(t *testing.T) {
	dir := t.TempDir()
	s := sinktest.Open(t, "atom:"+dir+"?keep=3", sink.Options{})
	defer s.Close()
	ps := papers("a", 7, 10, day0)
	if err := s.Write(context.Background(), ps[7:]); err != nil {
		t.Fatal(err)
	}
	tok, _ := s.(sink.Committer).Token()
	path := filepath.Join(dir, "7.atom")
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, batch := range [][]record.Record{ps[4:7], ps[:4], ps[8:]} {
		if err := s.Write(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
	}
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if tok2, _ := s.(sink.Committer).Token(); string(tok2) != string(tok) || !os.SameFile(before, after) {
		t.Errorf("writes that change no feed moved the token (%s to %s) or rewrote the feed (%v)", tok, tok2, !os.SameFile(before, after))
	}
	fixed := slices.Clone(ps[9:])
	fixed[0].Title = "Corrected"
	if err := s.Write(context.Background(), fixed); err != nil {
		t.Fatal(err)
	}
	if f := feedtest.Read(t, path); f.Entries[0].Title.Body != "Corrected" || !slices.Equal(f.IDs(), []string{tagPaper + "a-9", tagPaper + "a-8", tagPaper + "a-7"}) {
		t.Errorf("after a corrected paper: %v, first title %q", f.IDs(), f.Entries[0].Title.Body)
	}
}

// Papers of one date are in the order the listing had them when the feed
// first had them (the site's order, not their ids'); a paper delivered
// again from another place on the listing keeps its place.
func TestPapersOfOneDateKeepTheListingsOrder(t *testing.T) {
	dir := t.TempDir()
	ps := papers("p", 5, 6, day0)
	for i := range ps {
		ps[i].Published = "2026-03-01"
		ps[i].Source = record.Source{Page: 1 + i/3, Position: 3 - i%3} // p-2 p-1 p-0 on page 1, p-5 p-4 p-3 on page 2
	}
	again := slices.Clone(ps[:1])
	again[0].Source = record.Source{Page: 2, Position: 3} // pushed down by newer papers
	write(t, "atom:"+dir, sink.Options{}, ps[:3], ps[3:], again)
	want := []string{tagPaper + "p-2", tagPaper + "p-1", tagPaper + "p-0", tagPaper + "p-5", tagPaper + "p-4", tagPaper + "p-3"}
	if got := feedtest.Read(t, filepath.Join(dir, "5.atom")).IDs(); !slices.Equal(got, want) {
		t.Errorf("feed order %v, want the listing's %v", got, want)
	}
}

// A feed's state read back from disk is checked as a record is: a link
// edited into it that a reader must not open (javascript:), a DOI that
// is none and control characters in its texts never reach the feed.
func TestAnEditedStateIsCheckedAsARecord(t *testing.T) {
	dir := t.TempDir()
	rs := papers("e", 7, 2, day0)
	write(t, "atom:"+dir, sink.Options{}, rs)
	path := filepath.Join(dir, ".litcrawl-atom", "7.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(data), `"link":"https://doi.org/`+rs[1].DOI+`"`, `"link":"javascript:alert(document.cookie)"`, 1)
	edited = strings.Replace(edited, `"doi":"`+rs[1].DOI+`"`, `"doi":"javascript:alert(1)"`, 1)
	title, _ := json.Marshal(rs[1].Title)
	edited = strings.Replace(edited, `"title":`+string(title), `"title":"Edited\u001b[31m title"`, 1)
	name, _ := json.Marshal(rs[1].Journal.Name)
	edited = strings.Replace(edited, `"name":`+string(name), `"name":"Evil\u0001\u001b]0;pwn\u0007 \u202eName"`, 1)
	if !strings.Contains(edited, "Edited") || !strings.Contains(edited, "Evil") || strings.Count(edited, "javascript:") != 2 {
		t.Fatalf("the state file did not hold what the test edits:\n%s", data)
	}
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	// Another journal's write rewrites the index files, naming journal
	// 7's feed as its state says; then journal 7's rewrites its feed.
	write(t, "atom:"+dir, sink.Options{}, papers("g", 8, 1, day0))
	index, _ := os.ReadFile(filepath.Join(dir, "index.html"))
	opml, _ := os.ReadFile(filepath.Join(dir, "index.opml"))
	if !strings.Contains(string(index), "Evil") || strings.ContainsAny(string(index)+string(opml), "\x01\x07\x1b\u202e") {
		t.Errorf("the edited name reached the index files:\n%s\n%s", index, opml)
	}
	write(t, "atom:"+dir, sink.Options{}, papers("f", 7, 1, day0.AddDate(0, 0, 5)))
	feed, err := os.ReadFile(filepath.Join(dir, "7.atom"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(feed), "javascript:") || strings.ContainsAny(string(feed), "\x01\x07\x1b\u202e") {
		t.Errorf("the edited state reached the feed:\n%s", feed)
	}
	f := feedtest.Read(t, filepath.Join(dir, "7.atom"))
	var e *feedtest.Entry
	for i := range f.Entries {
		if strings.HasPrefix(f.Entries[i].Title.Body, "Edited") {
			e = &f.Entries[i]
		}
	}
	if e == nil || e.Title.Body != "Edited[31m title" || len(e.Links) != 0 || e.DOI != "" || e.Identifier != "" {
		t.Errorf("the edited entry: %+v\n%s", e, feed)
	}
	feedtest.Feedparser(t, filepath.Join(dir, "7.atom"))
}

// index.html, opened in a browser, lists every feed and says how to
// subscribe in Zotero and in a feed reader, loading nothing and raising
// no console error.
func TestIndexPageInBrowser(t *testing.T) {
	dir := t.TempDir()
	write(t, "atom:"+dir+"?title=Lab+feeds", sink.Options{}, append(papers("a", 11, 3, day0), papers("b", 12, 2, day0)...))
	p := browsertest.Open(t, "file://"+filepath.Join(dir, "index.html"))
	for _, want := range []string{"Lab feeds", "Journal 11 <Letters>", "11.atom", "12.atom", "Subscribe", "Zotero: File → New Feed → From URL", "index.opml"} {
		if !strings.Contains(p.Text, want) {
			t.Errorf("index.html shows no %q:\n%s", want, p.Text)
		}
	}
	if len(p.ConsoleErrors) > 0 || len(p.Requests) > 0 {
		t.Errorf("console errors %q, requests %q", p.ConsoleErrors, p.Requests)
	}
}
