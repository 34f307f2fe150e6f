// Package citetest reads the files crawl export writes back with the
// programs researchers import them with, for tests: pandoc (its BibTeX
// and CSL-JSON readers, and citeproc over both), Python's bibtexparser,
// and citation-js (npm) for RIS. Each gives the entries as it read them.
// A program that is missing skips the test with how to install it, or,
// with CI=true, fails it.
package citetest

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Entry is a paper as a reader read it.
type Entry struct {
	Key, Title, OriginalTitle, DOI string
	Authors                        int
	Year                           int
}

func missing(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// cslItem is what pandoc and citation-js give: CSL-JSON.
type cslItem struct {
	ID            string            `json:"id"`
	Title         string            `json:"title"`
	OriginalTitle string            `json:"original-title"`
	DOI           string            `json:"DOI"`
	Author        []json.RawMessage `json:"author"`
	Issued        struct {
		DateParts [][]any `json:"date-parts"`
	} `json:"issued"`
}

func fromCSL(items []cslItem) []Entry {
	out := make([]Entry, len(items))
	for i, it := range items {
		out[i] = Entry{Key: it.ID, Title: it.Title, OriginalTitle: it.OriginalTitle, DOI: it.DOI, Authors: len(it.Author)}
		if len(it.Issued.DateParts) > 0 && len(it.Issued.DateParts[0]) > 0 {
			if y, ok := it.Issued.DateParts[0][0].(float64); ok {
				out[i].Year = int(y)
			}
		}
	}
	return out
}

func pandoc(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("pandoc")
	if err != nil {
		missing(t, "pandoc is missing: install it (Debian: apt-get install -y pandoc) to read the exports back with it")
	}
	return p
}

// Pandoc reads a BibTeX (.bib) or CSL-JSON (.json) file with pandoc's
// reader (from: "bibtex" or "csljson") into CSL-JSON, and renders its
// bibliography with citeproc; any warning of either fails the test.
func Pandoc(t testing.TB, path, from string) []Entry {
	t.Helper()
	bin := pandoc(t)
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "-f", from, "-t", "csljson", path)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("pandoc -f %s %s: %v\n%s", from, path, err, stderr.String())
	}
	var items []cslItem
	if err := json.Unmarshal(out, &items); err != nil {
		t.Fatalf("pandoc's CSL-JSON: %v", err)
	}
	doc := filepath.Join(t.TempDir(), "cite.md")
	if err := os.WriteFile(doc, []byte("---\nnocite: \"[@*]\"\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	cmd = exec.Command(bin, "--citeproc", "--bibliography", path, "-t", "plain", doc)
	cmd.Stderr = &stderr
	rendered, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("pandoc --citeproc --bibliography %s: %v\n%s", path, err, stderr.String())
	}
	if len(bytes.TrimSpace(rendered)) == 0 && len(items) > 0 {
		t.Fatalf("pandoc --citeproc rendered no bibliography for %s", path)
	}
	return fromCSL(items)
}

// bibtexparserScript prints the entries of a BibTeX file as JSON,
// decoded by bibtexparser's own convert_to_unicode.
const bibtexparserScript = `
import json, sys
import bibtexparser
from bibtexparser.bparser import BibTexParser
from bibtexparser.customization import convert_to_unicode
p = BibTexParser(common_strings=True)
p.customization = convert_to_unicode
with open(sys.argv[1], encoding="utf-8") as f:
    db = bibtexparser.load(f, parser=p)
out = []
for e in db.entries:
    out.append({"id": e["ID"], "title": e.get("title", ""), "original-title": e.get("origtitle", ""), "DOI": e.get("doi", ""),
                "author": [{"literal": a} for a in e.get("author", "").split(" and ") if a],
                "issued": {"date-parts": [[int(e["year"])]]} if "year" in e else {}})
json.dump(out, sys.stdout)
`

// Bibtexparser reads a BibTeX file with Python's bibtexparser (Debian's
// python3-bibtexparser), decoding TeX with its convert_to_unicode.
func Bibtexparser(t testing.TB, path string) []Entry {
	t.Helper()
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		python = "python3"
	}
	if err := exec.Command(python, "-c", "import bibtexparser").Run(); err != nil {
		missing(t, "Python's bibtexparser is missing: install it (Debian: apt-get install -y python3-bibtexparser) to read the BibTeX export back with it")
	}
	var stderr bytes.Buffer
	cmd := exec.Command(python, "-c", bibtexparserScript, path)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("bibtexparser on %s: %v\n%s", path, err, stderr.String())
	}
	var items []cslItem
	if err := json.Unmarshal(out, &items); err != nil {
		t.Fatalf("bibtexparser's output: %v", err)
	}
	return fromCSL(items)
}

// CitationJSDir is where citation-js is installed (its node_modules):
// $CITATION_JS_DIR, else ~/.cache/litcrawl/citation-js, where .ci/run
// installs it (npm install --prefix DIR citation-js@0.7).
func CitationJSDir() string {
	if d := os.Getenv("CITATION_JS_DIR"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "litcrawl", "citation-js")
}

// citationJSScript prints the items citation-js reads from a RIS file.
const citationJSScript = `
const Cite = require('citation-js');
const fs = require('fs');
const warnings = [];
console.warn = (...a) => warnings.push(a.join(' '));
const c = new Cite(fs.readFileSync(process.argv[1], 'utf8'), {forceType: '@ris/file'});
if (warnings.length) { process.stderr.write(warnings.join('\n')); process.exit(1); }
process.stdout.write(JSON.stringify(c.data.map(it => ({id: it.id, title: it.title, 'original-title': it['original-title'], DOI: it.DOI, author: it.author || [], issued: it.issued || {}}))));
`

// CitationJS reads a RIS file with citation-js (node and the npm
// package in CitationJSDir); a warning it logs fails the test.
func CitationJS(t testing.TB, path string) []Entry {
	t.Helper()
	node, err := exec.LookPath("node")
	dir := CitationJSDir()
	if _, serr := os.Stat(filepath.Join(dir, "node_modules", "citation-js")); err != nil || serr != nil {
		missing(t, "node or citation-js is missing: install node (Debian: apt-get install -y nodejs npm) and run npm install --prefix "+dir+" citation-js@0.7 (or set CITATION_JS_DIR) to read the RIS export back with it")
	}
	var stderr bytes.Buffer
	cmd := exec.Command(node, "-e", citationJSScript, path)
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(dir, "node_modules"))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || strings.TrimSpace(stderr.String()) != "" {
		t.Fatalf("citation-js on %s: %v\n%s", path, err, stderr.String())
	}
	var items []cslItem
	if err := json.Unmarshal(out, &items); err != nil {
		t.Fatalf("citation-js's output: %v", err)
	}
	return fromCSL(items)
}
