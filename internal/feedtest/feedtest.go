// Package feedtest reads the Atom feeds the atom sink writes, for tests:
// strictly, in Go, checking the RFC 4287 rules readers rely on (Read), and
// with a real feed reader's parser, Python's feedparser (Feedparser).
package feedtest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Feed is an Atom feed as read back.
type Feed struct {
	XMLName   xml.Name `xml:"http://www.w3.org/2005/Atom feed"`
	ID        string   `xml:"id"`
	Title     Text     `xml:"title"`
	Updated   string   `xml:"updated"`
	Authors   []Person `xml:"author"`
	Links     []Link   `xml:"link"`
	Entries   []Entry  `xml:"entry"`
	Generator string   `xml:"generator"`
}

// Entry is one entry.
type Entry struct {
	ID         string     `xml:"id"`
	Title      Text       `xml:"title"`
	Updated    string     `xml:"updated"`
	Published  string     `xml:"published"`
	Authors    []Person   `xml:"author"`
	Links      []Link     `xml:"link"`
	Summary    *Text      `xml:"summary"`
	Content    *Text      `xml:"content"`
	Categories []Category `xml:"category"`
	// What makes the entry a paper to a reference manager: Dublin Core
	// and PRISM.
	Creators        []string `xml:"http://purl.org/dc/elements/1.1/ creator"`
	Identifier      string   `xml:"http://purl.org/dc/elements/1.1/ identifier"`
	DOI             string   `xml:"http://prismstandard.org/namespaces/basic/2.0/ doi"`
	PublicationName string   `xml:"http://prismstandard.org/namespaces/basic/2.0/ publicationName"`
	CoverDate       string   `xml:"http://prismstandard.org/namespaces/basic/2.0/ coverDate"`
	// Inner is the entry's XML as written.
	Inner string `xml:",innerxml"`
}

// Text is a text construct.
type Text struct {
	Type string `xml:"type,attr"`
	Body string `xml:",chardata"`
}

// Person is an author.
type Person struct {
	Name string `xml:"name"`
}

// Link is a link.
type Link struct {
	Rel  string `xml:"rel,attr"`
	Href string `xml:"href,attr"`
}

// Category is a category.
type Category struct {
	Term   string `xml:"term,attr"`
	Scheme string `xml:"scheme,attr"`
}

// IDs are the entries' ids, in the feed's order.
func (f Feed) IDs() []string {
	out := make([]string, len(f.Entries))
	for i, e := range f.Entries {
		out[i] = e.ID
	}
	return out
}

// Read reads the feed at path strictly and checks what RFC 4287 requires
// and readers rely on: the feed's id, title and updated; each entry's id
// (unique), title and updated; times in RFC 3339; an author for each
// entry (its own or the feed's); links absolute; text constructs of type
// text; no element the format does not have (markup from a title would be
// one).
func Read(t testing.TB, path string) Feed {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f Feed
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%s: not an Atom feed: %v", path, err)
	}
	// Every element is one of Atom's, or of an entry's Dublin Core and
	// PRISM elements.
	dec = xml.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		if se, ok := tok.(xml.StartElement); ok {
			if !knownElements[se.Name.Space][se.Name.Local] {
				t.Fatalf("%s: element <%s> (%s) is not Atom's, nor one of Dublin Core's or PRISM's an entry has", path, se.Name.Local, se.Name.Space)
			}
		}
	}
	must, rfc3339 := checks(t, path)
	must("feed id", f.ID)
	must("feed title", f.Title.Body)
	rfc3339("feed updated", f.Updated)
	ids := map[string]bool{}
	for i := range f.Entries {
		checkEntry(t, path, f, i, ids)
	}
	if n := len(f.Entries); n > 0 && f.Updated != f.Entries[0].Updated && f.Updated < f.Entries[0].Updated {
		t.Fatalf("%s: feed updated %s is older than its newest entry %s", path, f.Updated, f.Entries[0].Updated)
	}
	return f
}

// checks are the two checks of a feed's values read from path: a value
// present, a time in RFC 3339.
func checks(t testing.TB, path string) (must, rfc3339 func(what, v string)) {
	must = func(what, v string) {
		if strings.TrimSpace(v) == "" {
			t.Fatalf("%s: %s missing", path, what)
		}
	}
	rfc3339 = func(what, v string) {
		if _, err := time.Parse(time.RFC3339, v); err != nil {
			t.Fatalf("%s: %s %q is not RFC 3339", path, what, v)
		}
	}
	return must, rfc3339
}

// checkEntry checks entry i of feed f, read from path (ids: the entry
// ids seen before it).
func checkEntry(t testing.TB, path string, f Feed, i int, ids map[string]bool) {
	t.Helper()
	e := f.Entries[i]
	must, rfc3339 := checks(t, path)
	must("entry id", e.ID)
	if ids[e.ID] {
		t.Fatalf("%s: entry id %s twice", path, e.ID)
	}
	ids[e.ID] = true
	must("entry title of "+e.ID, e.Title.Body)
	rfc3339("updated of "+e.ID, e.Updated)
	if e.Published != "" {
		rfc3339("published of "+e.ID, e.Published)
	}
	if len(e.Authors) == 0 && len(f.Authors) == 0 {
		t.Fatalf("%s: entry %s has no Atom author, nor has the feed", path, e.ID)
	}
	for _, l := range e.Links {
		if !strings.HasPrefix(l.Href, "http://") && !strings.HasPrefix(l.Href, "https://") {
			t.Fatalf("%s: entry %s links to %q", path, e.ID, l.Href)
		}
	}
	for _, tx := range []*Text{&e.Title, e.Summary, e.Content} {
		if tx != nil && tx.Type != "text" {
			t.Fatalf("%s: entry %s has a text of type %q", path, e.ID, tx.Type)
		}
	}
	for _, c := range e.Categories {
		must("category term", c.Term)
	}
	// The authors once: as dc:creator, not as Atom's <author> too
	// (readers read both as authors); the DOI twice, as prism:doi
	// and as a dc:identifier "doi:…"; the cover date the paper's day.
	if len(e.Authors) > 0 && len(e.Creators) > 0 {
		t.Fatalf("%s: entry %s names its authors twice, as <author> and as dc:creator", path, e.ID)
	}
	if (e.DOI == "") != (e.Identifier == "") || e.DOI != "" && e.Identifier != "doi:"+e.DOI {
		t.Fatalf("%s: entry %s: prism:doi %q, dc:identifier %q", path, e.ID, e.DOI, e.Identifier)
	}
	if e.CoverDate != "" && (e.Published == "" || !strings.HasPrefix(e.Published, e.CoverDate) || len(e.CoverDate) != len("2006-01-02")) {
		t.Fatalf("%s: entry %s: prism:coverDate %q, published %q", path, e.ID, e.CoverDate, e.Published)
	}
	// Newest first by the paper's date (an entry revised later keeps
	// its place, and only its <updated> moves on).
	if i > 0 && cmp.Or(f.Entries[i-1].Published, f.Entries[i-1].Updated) < cmp.Or(e.Published, e.Updated) {
		t.Fatalf("%s: entry %s is newer than the one before it", path, e.ID)
	}
}

var knownElements = map[string]map[string]bool{
	"http://www.w3.org/2005/Atom": {"feed": true, "id": true, "title": true, "subtitle": true, "updated": true, "author": true, "name": true,
		"generator": true, "link": true, "entry": true, "published": true, "summary": true, "content": true, "category": true},
	"http://purl.org/dc/elements/1.1/":               {"creator": true, "identifier": true},
	"http://prismstandard.org/namespaces/basic/2.0/": {"doi": true, "publicationName": true, "coverDate": true},
}

// Parsed is what feedparser made of a feed.
type Parsed struct {
	Path    string   `json:"path"`
	Bozo    int      `json:"bozo"`
	Problem string   `json:"problem"`
	Version string   `json:"version"`
	Title   string   `json:"title"`
	IDs     []string `json:"ids"`
	Titles  []string `json:"titles"`
	Authors [][]string
	// The paper's elements as feedparser gives them (prism_doi,
	// prism_publicationname, prism_coverdate, dc_identifier).
	DOIs, Journals, CoverDates, Identifiers []string
}

const script = `
import json, sys, feedparser
out = []
for p in sys.argv[1:]:
    d = feedparser.parse(p)
    out.append({"path": p, "bozo": int(bool(d.bozo)), "problem": str(d.get("bozo_exception", "")), "version": d.version,
                "title": d.feed.get("title", ""), "ids": [e.get("id", "") for e in d.entries],
                "titles": [e.get("title", "") for e in d.entries],
                "Authors": [[a.get("name", "") for a in e.get("authors", [])] for e in d.entries],
                "DOIs": [e.get("prism_doi", "") for e in d.entries],
                "Journals": [e.get("prism_publicationname", "") for e in d.entries],
                "CoverDates": [e.get("prism_coverdate", "") for e in d.entries],
                "Identifiers": [e.get("dc_identifier", "") for e in d.entries]})
print(json.dumps(out))
`

// Feedparser parses the feeds with Python's feedparser (Debian's
// python3-feedparser, run by Debian's python). With CI=true a missing
// feedparser fails the test; locally it skips, saying how to get it.
func Feedparser(t testing.TB, paths ...string) []Parsed {
	t.Helper()
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		python = "python3"
	}
	if err := exec.Command(python, "-c", "import feedparser").Run(); err != nil {
		msg := "Python's feedparser is missing: install it (Debian: apt-get install -y python3-feedparser) to check the feeds with a real feed reader's parser"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	out, err := exec.Command(python, append([]string{"-c", script}, paths...)...).Output()
	if err != nil {
		t.Fatalf("feedparser: %v", err)
	}
	var ps []Parsed
	if err := json.Unmarshal(out, &ps); err != nil {
		t.Fatalf("feedparser's output: %v: %s", err, out)
	}
	for _, p := range ps {
		if p.Bozo != 0 || p.Version != "atom10" {
			t.Fatalf("feedparser on %s: bozo %d (%s), version %q", p.Path, p.Bozo, p.Problem, p.Version)
		}
	}
	return ps
}
