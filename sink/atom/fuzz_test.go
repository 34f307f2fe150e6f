package atom_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/litcrawl/litcrawl/internal/feedtest"
	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/sink"
	"github.com/litcrawl/litcrawl/sink/sinktest"
)

// Hostile records (control characters, broken UTF-8, "]]>", markup, odd
// ids and names) always make a feed that parses strictly as Atom, with
// every entry there, no element but Atom's, and only valid UTF-8 without
// control characters.
func FuzzAtomRecords(f *testing.F) {
	f.Add("p-1", "<script>alert(1)</script>", "]]><![CDATA[", "Ann \x00Lee", "Journal \x1b[31m", "https://doi.org/10.1/x")
	f.Add("doi:10.1000/ä b", "\xff\xfe\xfd", "\u202eevil\u2066", "<b>x</b>", "", "javascript:alert(1)")
	f.Add("id with space\n", "", "", "", "&amp; &#0; &#xD800;", "http://u:p@x/")
	f.Fuzz(func(t *testing.T, id, title, abstract, author, journal, link string) {
		dir := t.TempDir()
		r := sinktest.Records("f", 1)[0]
		r.ID, r.Title, r.TitleCN, r.Abstract, r.Authors, r.DOIURL, r.Subject = id, title, title, abstract, []string{author, author}, link, journal
		r.Journal = &record.Journal{ID: 42, Name: journal}
		s := sinktest.Open(t, "atom:"+dir, sink.Options{})
		err := s.Write(context.Background(), []record.Record{r, r})
		s.Close()
		if errors.Is(err, sink.ErrRefused) {
			return // an id that is only white space
		}
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "42.atom")
		feed := feedtest.Read(t, path)
		if len(feed.Entries) != 1 {
			t.Fatalf("%d entries, want the one paper", len(feed.Entries))
		}
		data, _ := os.ReadFile(path)
		if !utf8.Valid(data) || bytes.ContainsFunc(data, func(r rune) bool { return r < ' ' && r != '\n' || r == 0x7f || r >= 0x80 && r < 0xa0 }) {
			t.Fatalf("the feed holds broken UTF-8 or a control character: %q", data)
		}
	})
}
