package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/internal/citetest"
	"github.com/litcrawl/litcrawl/internal/export"
	"github.com/litcrawl/litcrawl/internal/feedtest"
	"github.com/litcrawl/litcrawl/internal/history"
	"github.com/litcrawl/litcrawl/internal/testsite"
	"github.com/litcrawl/litcrawl/record"
	_ "github.com/litcrawl/litcrawl/sink/atom"
)

// A backfill of three journals of the real site's variety (HTML and
// MathML in abstracts, every author separator, Chinese names, TeX's
// reserved characters in titles, blocks without JSON), exported to
// BibTeX, RIS and CSL-JSON, is read back by the programs researchers
// import them with — pandoc (its readers and citeproc, without a
// warning), bibtexparser and citation-js — with every paper once, under
// its key, its title, Chinese title, DOI and year as the records have
// them; and its Atom feeds carry every paper as a reference manager
// reads one (dc:creator per author, prism:doi), which feedparser reads.
func TestExportsReadBackByTheirReaders(t *testing.T) {
	site := testsite.New()
	journals := []int64{31, 32, 33}
	for _, j := range journals {
		site.VarietyJournal(j, 2)
	}
	e, cfg := siteEnv(t, site, &strings.Builder{})
	dir := t.TempDir()
	out := filepath.Join(dir, "papers.jsonl")
	feeds := filepath.Join(dir, "feeds")
	c := Crawl{Kind: history.Backfill, Journals: journals, From: 1, To: 2, Sinks: []string{"jsonl:" + out, "atom:" + feeds}, StateDir: cfg.StateDir}
	if _, err := e.Crawl(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	recs := readRecords(t, out)
	if len(recs) != 36 {
		t.Fatalf("%d records, want 36 (3 journals, 2 pages of 6)", len(recs))
	}
	keys := export.Keys(recs)
	want := map[string]citetest.Entry{}
	for i, r := range recs {
		want[keys[i]] = citetest.Entry{Key: keys[i], Title: r.Title, OriginalTitle: r.TitleCN, DOI: r.DOI, Authors: len(r.Authors), Year: 2024}
	}
	files := map[string]string{}
	for format, name := range map[string]string{"bibtex": "papers.bib", "ris": "papers.ris", "csl-json": "papers.json"} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := export.Write(f, format, recs); err != nil {
			t.Fatal(err)
		}
		f.Close()
		files[format] = f.Name()
	}
	check := func(reader string, got []citetest.Entry, exact func(citetest.Entry) bool) {
		t.Helper()
		seen := map[string]bool{}
		for _, g := range got {
			w, ok := want[g.Key]
			if reader == "citation-js" {
				// (it numbers the items itself: they are matched by DOI)
				for _, x := range want {
					if x.DOI == g.DOI {
						w, ok, g.Key = x, true, x.Key
					}
				}
			}
			switch {
			case !ok:
				t.Errorf("%s: an entry %q no record gave: %+v", reader, g.Key, g)
			case seen[g.Key]:
				t.Errorf("%s: %q twice", reader, g.Key)
			case g.DOI != w.DOI || g.Year != w.Year || g.Authors != w.Authors:
				t.Errorf("%s: %q read as %+v, want %+v", reader, g.Key, g, w)
			case exact(w) && (g.Title != w.Title || g.OriginalTitle != w.OriginalTitle):
				t.Errorf("%s: %q titles %q / %q, want %q / %q", reader, g.Key, g.Title, g.OriginalTitle, w.Title, w.OriginalTitle)
			}
			seen[g.Key] = true
		}
		if len(seen) != len(want) {
			t.Errorf("%s read %d papers of %d", reader, len(seen), len(want))
		}
	}
	all := func(citetest.Entry) bool { return true }
	check("pandoc (BibTeX)", citetest.Pandoc(t, files["bibtex"], "bibtex"), all)
	check("pandoc (CSL-JSON)", citetest.Pandoc(t, files["csl-json"], "csljson"), all)
	check("citation-js", citetest.CitationJS(t, files["ris"]), all)
	// bibtexparser's convert_to_unicode decodes only part of TeX: \$,
	// \{, \} and \^{} stay as written, so titles with those are not
	// compared (pandoc and citation-js read them above).
	check("bibtexparser", citetest.Bibtexparser(t, files["bibtex"]), func(w citetest.Entry) bool {
		return !strings.ContainsAny(w.Title+w.OriginalTitle, `$\{}^`)
	})

	// The journals' Atom feeds: each paper once, with a dc:creator per
	// author, its DOI as prism:doi and dc:identifier, its journal and
	// day; feedparser reads them cleanly, with the same.
	byDOI := map[string]record.Record{}
	for _, r := range recs {
		byDOI[r.DOI] = r
	}
	var paths []string
	entries := 0
	for _, j := range journals {
		path := filepath.Join(feeds, fmt.Sprintf("%d.atom", j))
		paths = append(paths, path)
		for _, e := range feedtest.Read(t, path).Entries {
			entries++
			r, ok := byDOI[e.DOI]
			if !ok || !slices.Equal(e.Creators, r.Authors) || e.Identifier != "doi:"+r.DOI || e.PublicationName != r.Journal.Name ||
				e.CoverDate != r.Published {
				t.Errorf("feed %d: entry %q: creators %q, DOI %q, identifier %q, journal %q, date %q; the record: %q, %q, %q, %q",
					j, e.Title.Body, e.Creators, e.DOI, e.Identifier, e.PublicationName, e.CoverDate, r.Authors, r.DOI, r.Journal.Name, r.Published)
			}
		}
	}
	if entries != len(recs) {
		t.Errorf("the feeds hold %d entries for %d papers", entries, len(recs))
	}
	for _, p := range feedtest.Feedparser(t, paths...) {
		for i := range p.IDs {
			r := byDOI[p.DOIs[i]]
			if r.ID == "" || !slices.Equal(p.Authors[i], r.Authors) || p.Identifiers[i] != "doi:"+r.DOI || p.CoverDates[i] != r.Published {
				t.Errorf("feedparser read %s entry %d as DOI %q, authors %q, identifier %q, date %q", p.Path, i, p.DOIs[i], p.Authors[i], p.Identifiers[i], p.CoverDates[i])
			}
		}
	}
}
