package atom_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/internal/feedtest"
	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/sink"
	"github.com/litcrawl/litcrawl/sink/sinktest"
)

// ids is the tag ids of papers with these ids.
func ids(names ...string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = tagPaper + n
	}
	return out
}

func feedIDs(t *testing.T, dir string, journal string) []string {
	t.Helper()
	return feedtest.Read(t, filepath.Join(dir, journal+".atom")).IDs()
}

// mustWrite writes batches to an open sink.
func mustWrite(t *testing.T, s sink.Sink, batches ...[]record.Record) {
	t.Helper()
	for _, b := range batches {
		if err := s.Write(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
}

func token(t *testing.T, s sink.Sink) []byte {
	t.Helper()
	tok, err := s.(sink.Committer).Token()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func restore(t *testing.T, s sink.Sink, tok []byte) {
	t.Helper()
	if err := s.(sink.Restorer).Restore(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
}

// A crawl takes back its own uncommitted writes only: what crawl parse
// (no crawl state) or another crawl state wrote to the directory after
// its last commit stays, and a token of another crawl state restores
// nothing.
func TestRestoreTakesBackOnlyItsOwnWrites(t *testing.T) {
	dir := t.TempDir()
	url := "atom:" + dir
	a := sinktest.Open(t, url, sink.Options{Writer: "state-a"})
	mustWrite(t, a, papers("a", 1, 2, day0))
	tokA := token(t, a)
	a.Close()

	// crawl parse adds a journal and corrects a paper of journal 1.
	p := sinktest.Open(t, url, sink.Options{})
	fixed := papers("a", 1, 1, day0)
	fixed[0].Title = "Fixed by a parser fix"
	mustWrite(t, p, papers("p", 2, 3, day0), fixed)
	p.Close()

	// Another crawl state writes journal 3 and commits.
	b := sinktest.Open(t, url, sink.Options{Writer: "state-b"})
	mustWrite(t, b, papers("b", 3, 2, day0))
	tokB := token(t, b)
	b.Close()

	// Crawl A writes again and is killed before its commit.
	a = sinktest.Open(t, url, sink.Options{Writer: "state-a"})
	mustWrite(t, a, papers("late", 1, 1, day0.AddDate(1, 0, 0)), papers("late", 4, 1, day0))
	a.Close()

	a = sinktest.Open(t, url, sink.Options{Writer: "state-a"})
	restore(t, a, tokA)
	a.Close()
	if got := feedIDs(t, dir, "1"); !slices.Equal(got, ids("a-1", "a-0")) {
		t.Errorf("journal 1 after A's restore: %v, want A's uncommitted paper taken back and the rest kept", got)
	}
	if f := feedtest.Read(t, filepath.Join(dir, "1.atom")); f.Entries[1].Title.Body != "Fixed by a parser fix" {
		t.Errorf("A's restore took back crawl parse's correction: %q", f.Entries[1].Title.Body)
	}
	if got := feedIDs(t, dir, "2"); len(got) != 3 {
		t.Errorf("journal 2 (crawl parse's) after A's restore: %v", got)
	}
	if got := feedIDs(t, dir, "3"); len(got) != 2 {
		t.Errorf("journal 3 (crawl state B's, committed) after A's restore: %v", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "4.atom")); !os.IsNotExist(err) {
		t.Errorf("A's uncommitted new feed is still there: %v", err)
	}
	// B's token restores B's feed, and nothing of A's.
	b = sinktest.Open(t, url, sink.Options{Writer: "state-b"})
	restore(t, b, tokB)
	restore(t, b, tokA) // another state's token: nothing
	b.Close()
	if len(feedIDs(t, dir, "1")) != 2 || len(feedIDs(t, dir, "3")) != 2 {
		t.Errorf("B's restore changed the feeds: %v %v", feedIDs(t, dir, "1"), feedIDs(t, dir, "3"))
	}
}

// A write changes the state and the file of the feeds it changes only:
// the cost of a write does not grow with the journals in the directory.
func TestWriteTouchesItsFeedsOnly(t *testing.T) {
	dir := t.TempDir()
	s := sinktest.Open(t, "atom:"+dir, sink.Options{})
	defer s.Close()
	mustWrite(t, s, papers("a", 11, 3, day0), papers("b", 12, 3, day0))
	stat := func(name string) os.FileInfo {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	state12, feed12 := stat(".litcrawl-atom/12.json"), stat("12.atom")
	mustWrite(t, s, papers("c", 11, 3, day0.AddDate(0, 1, 0)))
	if !os.SameFile(state12, stat(".litcrawl-atom/12.json")) || !os.SameFile(feed12, stat("12.atom")) {
		t.Error("a write to journal 11 rewrote journal 12's state or feed")
	}
	html, _ := os.ReadFile(filepath.Join(dir, "index.html"))
	if !strings.Contains(string(html), "<td>6</td>") {
		t.Errorf("index.html does not count journal 11's 6 papers:\n%s", html)
	}
}

// Papers of one date: a nightly's papers from the listing's first page
// go above every paper the feed had (the site puts its newest first); a
// backfill keeps the listing's order, resumed after a crash or not, and
// undated papers too, however long the walk takes.
func TestNewPapersOfOneDateGoOnTop(t *testing.T) {
	listing := func(prefix string, j int64, pages, per int, date string) []record.Record {
		ps := papers(prefix, j, pages*per, day0)
		for i := range ps {
			ps[i].Published = date
			ps[i].Source = record.Source{Page: 1 + i/per, Position: 1 + i%per}
		}
		return ps
	}
	clock := day0
	opts := sink.Options{Now: func() time.Time { return clock }}
	for _, date := range []string{"2026-01-02", ""} {
		dir := t.TempDir()
		url := "atom:" + dir + "?keep=4"
		night1 := listing("old", 5, 2, 2, date) // old-0 old-1 | old-2 old-3
		s := sinktest.Open(t, url, opts)
		for _, page := range [][]record.Record{night1[:2], night1[2:]} {
			mustWrite(t, s, page)
			clock = clock.Add(time.Minute) // a slow walk
		}
		s.Close()
		if got := feedIDs(t, dir, "5"); !slices.Equal(got, ids("old-0", "old-1", "old-2", "old-3")) {
			t.Errorf("date %q: a backfill's feed %v, want the listing's order", date, got)
		}
		night2 := listing("new", 5, 1, 2, date) // two new papers on page 1
		s = sinktest.Open(t, url, opts)
		mustWrite(t, s, night2)
		s.Close()
		if got := feedIDs(t, dir, "5"); !slices.Equal(got, ids("new-0", "new-1", "old-0", "old-1")) {
			t.Errorf("date %q: after a nightly: %v, want its new papers on top", date, got)
		}
	}
}

// Opening and closing the sink changes no feed and no state (crawl sink check
// opens it): not with another keep, title or base.
func TestOpeningChangesNothing(t *testing.T) {
	dir := t.TempDir()
	write(t, "atom:"+dir, sink.Options{}, papers("a", 7, 5, day0))
	before := snapshot(t, dir)
	s := sinktest.Open(t, "atom:"+dir+"?keep=1&title=Other&base=https://example.org/x", sink.Options{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if after := snapshot(t, dir); !maps.Equal(before, after) {
		t.Errorf("open and close changed the directory")
	}
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			info, _ := d.Info()
			out[p] = string(b) + info.ModTime().String()
		}
		return nil
	})
	return out
}

// A smaller keep after a crash: the restore first brings back what the
// uncommitted writes pushed out, then cuts the feed, so the feed is the
// newest papers committed; the cut holds in the next runs.
func TestSmallerKeepAfterACrash(t *testing.T) {
	dir := t.TempDir()
	a := papers("a", 3, 5, day0)
	b := papers("b", 3, 2, day0.AddDate(0, 1, 0))
	s := sinktest.Open(t, "atom:"+dir+"?keep=5", sink.Options{})
	mustWrite(t, s, a)
	tok := token(t, s)
	mustWrite(t, s, b) // pushes a-0 and a-1 out; never committed
	s.Close()
	s = sinktest.Open(t, "atom:"+dir+"?keep=3", sink.Options{})
	restore(t, s, tok)
	s.Close()
	if got := feedIDs(t, dir, "3"); !slices.Equal(got, ids("a-4", "a-3", "a-2")) {
		t.Errorf("after the restore with keep=3: %v", got)
	}
	s = sinktest.Open(t, "atom:"+dir+"?keep=5", sink.Options{})
	restore(t, s, tok)
	s.Close()
	if got := feedIDs(t, dir, "3"); len(got) != 3 {
		t.Errorf("keep=3's cut did not hold: %v", got)
	}
}

// What a crash leaves is mended at the next run's first change: a feed
// file behind its state is written again, temporary files are removed.
func TestACrashsLeftoversAreMended(t *testing.T) {
	dir := t.TempDir()
	write(t, "atom:"+dir, sink.Options{}, papers("a", 9, 3, day0))
	want, _ := os.ReadFile(filepath.Join(dir, "9.atom"))
	// A crash between the state's save and the feed's: the feed is old.
	os.WriteFile(filepath.Join(dir, "9.atom"), []byte("<feed/>"), 0o644)
	tmp := []string{filepath.Join(dir, ".9.atom.tmp-123"), filepath.Join(dir, ".litcrawl-atom", ".9.json.tmp-456"), filepath.Join(dir, ".index.html.tmp-7")}
	for _, p := range tmp {
		os.WriteFile(p, []byte("half"), 0o644)
	}
	s := sinktest.Open(t, "atom:"+dir, sink.Options{})
	restore(t, s, token(t, s))
	s.Close()
	if got, _ := os.ReadFile(filepath.Join(dir, "9.atom")); !bytes.Equal(got, want) {
		t.Errorf("the feed behind its state was not written again:\n%s", got)
	}
	for _, p := range tmp {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there", p)
		}
	}
}

// Ids that would make a broken or repeated entry id are refused (and
// quarantined), never written; a date far ahead is no date.
func TestOddIDsAndDates(t *testing.T) {
	dir := t.TempDir()
	s := sinktest.Open(t, "atom:"+dir, sink.Options{Now: func() time.Time { return day0 }})
	defer s.Close()
	for _, id := range []string{"id\xff", "id\x85", strings.Repeat("x", 600), "a\x00b"} {
		r := papers("x", 4, 1, day0)
		r[0].ID = id
		if err := s.Write(context.Background(), r); !errors.Is(err, sink.ErrRefused) {
			t.Errorf("id %q: %v, want a refusal", id, err)
		}
	}
	r := papers("far", 4, 7, day0)
	r[6].Published = "1000-01-01T00:30:00+01:00"                             // year 999 in UTC: no date
	r[5].Published = "2025-12-29 10:00:00+08:00"                             // RFC 3339 allows a space for the T
	r[4].DOIURL, r[4].URL = "https://doi.org/"+strings.Repeat("é", 1000), "" // 2,016 bytes, 6,016 escaped
	r[0].Published = "9999-12-31"
	r[1].Published = "2025-12-30t10:00:00z" // RFC 3339 allows lower case
	r[2].DOIURL, r[2].URL = "https://doi.org/"+strings.Repeat("9", 5000), "http://:80/x"
	r[3].DOIURL, r[3].URL = "http://:80/x", "https://example.org/paper/3"
	mustWrite(t, s, r)
	f := feedtest.Read(t, filepath.Join(dir, "4.atom"))
	if f.Updated == "9999-12-31T00:00:00Z" || f.Entries[0].Published == "9999-12-31T00:00:00Z" {
		t.Errorf("a date far ahead holds the feed: updated %s, first %+v", f.Updated, f.Entries[0])
	}
	for _, e := range f.Entries {
		switch e.ID {
		case tagPaper + "far-6":
			if e.Published != "" {
				t.Errorf("a date of year 999 in UTC: published %q, want none", e.Published)
			}
		case tagPaper + "far-1":
			if e.Published != "2025-12-30T10:00:00Z" {
				t.Errorf("a lower-case RFC 3339 date: published %q", e.Published)
			}
		case tagPaper + "far-5":
			if e.Published != "2025-12-29T02:00:00Z" {
				t.Errorf("an RFC 3339 date with a space: published %q", e.Published)
			}
		case tagPaper + "far-2", tagPaper + "far-4":
			if len(e.Links) != 0 {
				t.Errorf("a 5,000-byte link and one without a host are left out: %+v", e.Links)
			}
		case tagPaper + "far-3":
			if len(e.Links) != 1 || !strings.HasPrefix(e.Links[0].Href, "https://") {
				t.Errorf("a link without a host gives way to the paper's page: %+v", e.Links)
			}
		}
	}
}

// Papers of one date that a crawl from page 1 brings from deeper pages (a
// nightly filling in where an earlier walk stopped short, a backfill
// again over a grown listing, a redelivery after a smaller keep) are
// older than the feed's first-page papers: they keep the listing's order
// and never push a newer paper out.
func TestDeeperPagesNeverGoAboveTheHead(t *testing.T) {
	const date = "2026-01-02"
	// at is a paper of journal 5 at page p, position i.
	at := func(id string, p, i int) record.Record {
		r := papers(id, 5, 1, day0)[0]
		r.ID, r.Published, r.Source = id, date, record.Source{Page: p, Position: i}
		return r
	}
	page := func(prefix string, p, per int) []record.Record {
		var rs []record.Record
		for i := 1; i <= per; i++ {
			rs = append(rs, at(fmt.Sprintf("%s%d", prefix, (p-1)*per+i-1), p, i))
		}
		return rs
	}
	for _, tc := range []struct {
		name    string
		keep    int
		runs    [][][]record.Record // runs of writes
		keepNow int                 // keep of the last run (0: keep)
		want    []string
	}{{
		name: "a nightly filling in deep pages",
		keep: 4,
		runs: [][][]record.Record{
			{page("o", 1, 2), page("o", 2, 2)},                         // o0 o1 | o2 o3, walk stopped short
			{{at("n0", 1, 1)}, {at("deep0", 9, 1), at("deep1", 9, 2)}}, // one new on page 1, the rest found where it stopped
		},
		want: []string{"n0", "o0", "o1", "o2"},
	}, {
		name: "a backfill again over a grown listing",
		keep: 5,
		runs: [][][]record.Record{
			{page("o", 1, 2), page("o", 2, 2)},
			{{at("n0", 1, 1)}, {at("o4", 3, 2)}, {at("o5", 4, 1)}}, // o3 moved to page 3 position 1, known
		},
		want: []string{"n0", "o0", "o1", "o2", "o3"},
	}, {
		name:    "everything again after a smaller keep",
		keep:    2,
		keepNow: 6,
		runs: [][][]record.Record{
			{page("o", 1, 3), page("o", 2, 3)},
			{page("o", 1, 3), page("o", 2, 3)}, // --redeliver
		},
		want: []string{"o0", "o1", "o2", "o3", "o4", "o5"},
	}, {
		name: "a replay after a parser fix, then the deeper pages",
		keep: 4,
		runs: [][][]record.Record{
			{page("o", 1, 2), page("o", 2, 2)},
			{page("o", 1, 2), page("o", 3, 2)},
		},
		want: []string{"o0", "o1", "o2", "o3"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for i, run := range tc.runs {
				keep := tc.keep
				if i == len(tc.runs)-1 && tc.keepNow > 0 {
					keep = tc.keepNow
				}
				write(t, fmt.Sprintf("atom:%s?keep=%d", dir, keep), sink.Options{}, run...)
			}
			if got := feedIDs(t, dir, "5"); !slices.Equal(got, ids(tc.want...)) {
				t.Errorf("feed %v\nwant %v", got, ids(tc.want...))
			}
		})
	}
}

// A feed file cut short is written again at the next run's first write,
// even one that changes nothing (the same papers again); index files
// showing what they showed are not rewritten.
func TestAFeedCutShortIsWrittenAgain(t *testing.T) {
	dir := t.TempDir()
	ps := papers("a", 9, 30, day0)
	write(t, "atom:"+dir, sink.Options{}, ps)
	path := filepath.Join(dir, "9.atom")
	want, _ := os.ReadFile(path)
	os.Truncate(path, 400) // past the comment that names its write
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(dir, "index.opml"), old, old)
	write(t, "atom:"+dir, sink.Options{}, ps[:2])
	if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
		t.Errorf("the feed cut short was not written again (%d bytes, want %d)", len(got), len(want))
	}
	if st, _ := os.Stat(filepath.Join(dir, "index.opml")); st.ModTime().After(old.Add(time.Minute)) {
		t.Errorf("index.opml was rewritten though it shows the same")
	}
}

// A feed whose state file is gone, or older than the feed file (deleted,
// restored from a backup), is said in a warning naming the journal.
func TestAFeedAheadOfItsStateIsSaid(t *testing.T) {
	dir := t.TempDir()
	write(t, "atom:"+dir, sink.Options{}, papers("a", 9, 3, day0), papers("b", 10, 3, day0))
	saved, _ := os.ReadFile(filepath.Join(dir, ".litcrawl-atom", "9.json"))
	write(t, "atom:"+dir, sink.Options{}, papers("c", 9, 3, day0.AddDate(0, 1, 0)))
	os.WriteFile(filepath.Join(dir, ".litcrawl-atom", "9.json"), saved, 0o644)
	os.Remove(filepath.Join(dir, ".litcrawl-atom", "10.json"))
	var logs bytes.Buffer
	write(t, "atom:"+dir, sink.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, papers("d", 11, 1, day0))
	if !strings.Contains(logs.String(), "journals=9,10") || !strings.Contains(logs.String(), "--redeliver") {
		t.Errorf("no warning naming journals 9 and 10 with the way back:\n%s", logs.String())
	}
}

// Each fetch of the listing's first page is a head of its own, in one
// open sink: a fleet worker's nightly jobs of several nights, or a replay
// of an archive of several runs (one replay run, pages fetched at other
// times), put each night's new papers on top.
func TestEachFetchOfPageOneIsAHead(t *testing.T) {
	const date = "2026-01-02"
	at := func(id string, i int, run, fetched string) record.Record {
		r := papers(id, 5, 1, day0)[0]
		r.ID, r.Published = id, date
		r.Source = record.Source{Page: 1, Position: i, RunID: run, FetchedAt: fetched}
		return r
	}
	for name, src := range map[string][3][2]string{
		"a worker's jobs of three nights": {{"run-1", "2026-01-02T01:00:00Z"}, {"run-2", "2026-01-03T01:00:00Z"}, {"run-3", "2026-01-04T01:00:00Z"}},
		"a replay of three runs' pages":   {{"replay-x", "2026-01-02T01:00:00Z"}, {"replay-x", "2026-01-03T01:00:00Z"}, {"replay-x", "2026-01-04T01:00:00Z"}},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, "atom:"+dir+"?keep=4", sink.Options{},
				[]record.Record{at("a0", 1, src[0][0], src[0][1]), at("a1", 2, src[0][0], src[0][1])},
				[]record.Record{at("b0", 1, src[1][0], src[1][1])},
				[]record.Record{at("c0", 1, src[2][0], src[2][1]), at("c1", 2, src[2][0], src[2][1])})
			if got := feedIDs(t, dir, "5"); !slices.Equal(got, ids("c0", "c1", "b0", "a0")) {
				t.Errorf("feed %v, want each night's new papers above the last's", got)
			}
		})
	}
}

// A place the sink writes that is taken by something it cannot replace is
// said when the sink opens (crawl sink check, a run's start), naming the
// path, not at the first write of a run that fetched pages for nothing.
func TestTakenPlacesAreSaidAtOpen(t *testing.T) {
	for _, c := range []struct {
		name string
		make func(t *testing.T, dir string)
		want string // "" opens
	}{
		{"a feed's name taken by a directory", func(t *testing.T, dir string) { mkdir(t, filepath.Join(dir, "7.atom")) }, "7.atom is a directory"},
		{"the index's name taken by a directory", func(t *testing.T, dir string) { mkdir(t, filepath.Join(dir, "index.html")) }, "index.html is a directory"},
		{"the state a link to nothing", func(t *testing.T, dir string) {
			symlink(t, filepath.Join(dir, "gone"), filepath.Join(dir, ".litcrawl-atom"))
		}, ".litcrawl-atom is a symbolic link to something that cannot be used"},
		{"the state a link to a directory", func(t *testing.T, dir string) {
			mkdir(t, filepath.Join(dir, "kept"))
			symlink(t, filepath.Join(dir, "kept"), filepath.Join(dir, ".litcrawl-atom"))
		}, ""},
		{"a feed a link to a file", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "old"), nil, 0o644)
			symlink(t, filepath.Join(dir, "old"), filepath.Join(dir, "7.atom"))
		}, ""},
		{"another directory of another name", func(t *testing.T, dir string) { mkdir(t, filepath.Join(dir, "7.atom.d")) }, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.make(t, dir)
			s, err := sink.Open(context.Background(), "atom:"+dir, sink.Options{})
			if c.want == "" {
				if err != nil {
					t.Fatalf("open: %v", err)
				}
				mustWrite(t, s, papers("a", 7, 2, day0))
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				if got := feedIDs(t, dir, "7"); len(got) != 2 {
					t.Errorf("the feed holds %d entries, want 2", len(got))
				}
				return
			}
			if err == nil {
				s.Close()
				t.Fatalf("open succeeded; want an error saying %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), dir) {
				t.Errorf("open: %v; want it to name %s and say %q", err, dir, c.want)
			}
		})
	}
}

func mkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// A nightly's first page split by the quarantine around a refused record
// (its halves written one after the other, from one fetch) stays one head:
// every new paper of it above the papers the feed had, none cut by keep.
func TestAPageSplitByTheQuarantineStaysInItsHead(t *testing.T) {
	listing := func(prefix string, n, per int) []record.Record {
		ps := papers(prefix, 5, n, day0)
		for i := range ps {
			ps[i].Published = "2026-01-02"
			ps[i].Source = record.Source{Page: 1 + i/per, Position: 1 + i%per, RunID: prefix, FetchedAt: "2026-01-02T03:04:05Z"}
		}
		return ps
	}
	dir := t.TempDir()
	url := "atom:" + dir + "?keep=4"
	write(t, url, sink.Options{}, listing("old", 4, 4))
	night := listing("new", 4, 4)
	s := sinktest.Open(t, url, sink.Options{})
	mustWrite(t, s, night[:1], night[2:]) // new-1 refused; the halves around it
	s.Close()
	if got := feedIDs(t, dir, "5"); !slices.Equal(got, ids("new-0", "new-2", "new-3", "old-0")) {
		t.Errorf("after a split first page: %v, want its papers on top", got)
	}
}

// A feed file that is not its state's, though made at the same write, is
// written again at the next session's first write: a smaller keep's cut
// saved just before a crash (the file still shows the entries cut), and
// base= or title= changed since (every feed shows them, not only those a
// write changes).
func TestAFeedNotItsStatesIsWrittenAgain(t *testing.T) {
	dir := t.TempDir()
	feed := filepath.Join(dir, "7.atom")
	write(t, "atom:"+dir+"?keep=4", sink.Options{}, papers("a", 7, 4, day0))
	before, err := os.ReadFile(feed)
	if err != nil {
		t.Fatal(err)
	}
	write(t, "atom:"+dir+"?keep=2", sink.Options{}, papers("z", 8, 1, day0)) // cuts journal 7's feed to 2
	if err := os.WriteFile(feed, before, 0o644); err != nil {                // as if the crash came before the file was written
		t.Fatal(err)
	}
	write(t, "atom:"+dir+"?keep=2", sink.Options{}, papers("y", 8, 1, day0))
	if got := feedIDs(t, dir, "7"); len(got) != 2 {
		t.Errorf("the cut feed after a crash before its file: %d entries, want 2", len(got))
	}
	write(t, "atom:"+dir+"?keep=2&base=https://new.example.org/f&title=New", sink.Options{}, papers("x", 8, 1, day0))
	b, err := os.ReadFile(feed)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `href="https://new.example.org/f/7.atom"`) || !strings.Contains(string(b), "New: the newest papers") {
		t.Errorf("journal 7's feed after base= and title= changed, with no paper of its own:\n%s", b)
	}
}

// A paper read once without its JSON (id "doi:…") and later with its id
// (a replay after a parser fix, a redelivery) is one paper, as the ledgers
// have it: one entry, which keeps its id (a reader never shows it twice)
// and takes the later record's texts.
func TestAPaperKnownByItsDOIIsOneEntry(t *testing.T) {
	dir := t.TempDir()
	first := papers("a", 7, 2, day0)
	first[0].ID, first[0].DOI, first[0].Title = "doi:10.5555/JTC.0001", "10.5555/JTC.0001", "Without its JSON"
	later := papers("b", 7, 1, day0)
	later[0].ID, later[0].DOI, later[0].Title = "JTC-0001", "10.5555/jtc.0001", "With its JSON"
	write(t, "atom:"+dir, sink.Options{}, first, later)
	f := feedtest.Read(t, filepath.Join(dir, "7.atom"))
	if len(f.Entries) != 2 {
		t.Fatalf("the feed holds %d entries, want 2: %v", len(f.Entries), f.IDs())
	}
	for _, e := range f.Entries {
		if strings.HasSuffix(e.ID, "JTC.0001") && e.Title.Body != "With its JSON" {
			t.Errorf("the paper's entry %s has title %q, want the later record's", e.ID, e.Title.Body)
		}
	}
	if !slices.Contains(f.IDs(), tagPaper+"doi:10.5555/JTC.0001") {
		t.Errorf("the paper's entry changed its id: %v", f.IDs())
	}
}

// Two papers with ids of their own stay two entries, even when a DOI moves
// from one to the other (a site's correction): only an id read without
// the JSON ("doi:…") is matched by its DOI.
func TestADOIMovedBetweenPapersKeepsThemApart(t *testing.T) {
	dir := t.TempDir()
	first := papers("a", 7, 1, day0)
	first[0].ID, first[0].DOI, first[0].Title = "1001", "10.1109/conf.2025", "First paper"
	fixed := papers("b", 7, 2, day0)
	fixed[0].ID, fixed[0].DOI, fixed[0].Title = "1001", "10.1109/conf.2025x", "First paper"
	fixed[1].ID, fixed[1].DOI, fixed[1].Title = "1002", "10.1109/conf.2025", "Second paper"
	write(t, "atom:"+dir, sink.Options{}, first, fixed)
	f := feedtest.Read(t, filepath.Join(dir, "7.atom"))
	titles := map[string]string{}
	for _, e := range f.Entries {
		titles[strings.TrimPrefix(e.ID, tagPaper)] = e.Title.Body
	}
	if len(titles) != 2 || titles["1001"] != "First paper" || titles["1002"] != "Second paper" {
		t.Errorf("entries %v, want 1001 and 1002 each with its own title", titles)
	}
}

// A first write refused whole (a record of no journal) makes no feed and
// no index listing none.
func TestARefusedFirstWriteMakesNoIndex(t *testing.T) {
	dir := t.TempDir()
	s := sinktest.Open(t, "atom:"+dir, sink.Options{})
	r := papers("x", 4, 1, day0)
	r[0].Journal = nil
	if err := s.Write(context.Background(), r); !errors.Is(err, sink.ErrRefused) {
		t.Fatalf("a record of no journal: %v, want a refusal", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"index.html", "index.opml"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("%s written with no feed", name)
		}
	}
}
