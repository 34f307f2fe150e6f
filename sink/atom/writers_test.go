package atom_test

import (
	"bytes"
	"context"
	"errors"
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

// Opening and closing the sink changes nothing on disk (crawl sink check
// opens it): not with another keep, title or base.
func TestOpeningChangesNothing(t *testing.T) {
	dir := t.TempDir()
	write(t, "atom:"+dir, sink.Options{}, papers("a", 7, 5, day0))
	before := snapshot(t, dir)
	s := sinktest.Open(t, "atom:"+dir+"?keep=1&title=Other&base=https://example.org/x", sink.Options{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if after := snapshot(t, dir); !maps2Equal(before, after) {
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

func maps2Equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
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
	r := papers("far", 4, 2, day0)
	r[0].Published = "9999-12-31"
	mustWrite(t, s, r)
	f := feedtest.Read(t, filepath.Join(dir, "4.atom"))
	if f.Updated == "9999-12-31T00:00:00Z" || f.Entries[0].Published == "9999-12-31T00:00:00Z" {
		t.Errorf("a date far ahead holds the feed: updated %s, first %+v", f.Updated, f.Entries[0])
	}
}
