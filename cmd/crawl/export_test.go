package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/internal/exitcode"
)

// crawl export: the formats to standard output or a file (its directory
// made), the filters, and a clear error naming what is wrong: the flag,
// the value, the file and the line.
func TestExportCommand(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "papers.jsonl")
	lines := `{"schema_version":4,"id":"8801","title":"Adaptive Routing","authors":["Ann Lee"],"doi":"10.1000/jns.1","published":"2024-06-03","journal":{"id":501422,"name":"J"},"url":"javascript:alert(1)","source":{"position":1}}
{"schema_version":4,"id":"8802","title":"Older","published":"2023-01-02","journal":{"id":7,"name":"K"},"source":{"position":2}}
`
	if err := os.WriteFile(in, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := crawl(t, "export", "--format", "bibtex", in)
	if code != exitcode.OK || !strings.Contains(out, "@article{lee2024adaptive-8801,") || !strings.Contains(out, "@article{older2023-8802,") ||
		strings.Contains(out, "javascript") || !strings.Contains(errs, "2 papers (bibtex) to standard output, of 2") {
		t.Fatalf("export: exit %d\n%s\n%s", code, out, errs)
	}
	file := filepath.Join(dir, "new", "sub", "papers.ris")
	code, out, errs = crawl(t, "export", "--format", "ris", "--journal", "501422", "--since", "2024-01-01", "-o", file, in)
	data, _ := os.ReadFile(file)
	if code != exitcode.OK || out != "" || strings.Count(string(data), "TY  - JOUR") != 1 || !strings.Contains(string(data), "TI  - Adaptive Routing") {
		t.Fatalf("export -o: exit %d, stdout %q, stderr %s, file:\n%s", code, out, errs, data)
	}
	// An earlier export of the format is replaced.
	if code, _, errs := crawl(t, "export", "--format", "ris", "-o", file, in); code != exitcode.OK {
		t.Errorf("export over an earlier export: exit %d: %s", code, errs)
	}
	// A library of the user's own, and a crawl state's directory.
	mine := filepath.Join(dir, "mine.bib")
	os.WriteFile(mine, []byte("@article{mine2020,\n  title = {My own},\n}\n"), 0o644)
	stateDir := filepath.Join(dir, "state")
	os.MkdirAll(stateDir, 0o755)
	os.WriteFile(filepath.Join(stateDir, "crawl.db"), nil, 0o644)
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(lines+"{not json\n"), 0o644)
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"export", in}, exitcode.Usage, `--format "": expected bibtex, ris or csl-json`},
		{[]string{"export", "--format", "endnote", in}, exitcode.Usage, `--format "endnote": expected bibtex, ris or csl-json`},
		{[]string{"export", "--format", "ris", "--since", "2024-13-01", in}, exitcode.Usage, `--since "2024-13-01": expected a day, YYYY-MM-DD`},
		{[]string{"export", "--format", "ris", "--since", "2024-02-01", "--until", "2024-01-01", in}, exitcode.Usage, "--since 2024-02-01 is after --until 2024-01-01"},
		{[]string{"export", "--format", "ris"}, exitcode.Usage, "expected at least 1 argument"},
		{[]string{"export", "--format", "ris", filepath.Join(dir, "none.jsonl")}, exitcode.Usage, "none.jsonl: no such file"},
		{[]string{"export", "--format", "ris", dir}, exitcode.Usage, "is not a regular file (a directory)"},
		{[]string{"export", "--format", "ris", bad}, exitcode.Fatal, "bad.jsonl:3: not a record"},
		{[]string{"export", "--format", "ris", "-o", dir, in}, exitcode.Usage, "is a directory"},
		{[]string{"export", "--fromat", "ris", in}, exitcode.Usage, "did you mean --format?"},
		// -o never over what it would destroy: an input, a file not an
		// earlier export of the format (records, a crawl state).
		{[]string{"export", "--format", "ris", "-o", in, in}, exitcode.Usage, "is an input too"},
		{[]string{"export", "--format", "ris", "-o", bad, in}, exitcode.Usage, "exists and is not wholly an earlier ris export"},
		{[]string{"export", "--format", "bibtex", "-o", file, in}, exitcode.Usage, "exists and is not wholly an earlier bibtex export"},
		{[]string{"export", "--format", "bibtex", "-o", mine, in}, exitcode.Usage, "exists and is not wholly an earlier bibtex export"},
		{[]string{"export", "--format", "ris", "-o", filepath.Join(stateDir, "new.ris"), in}, exitcode.Usage, "is in a crawl state directory"},
		{[]string{"export", "--format", "ris", "--fetched-since", "2026-02-30", in}, exitcode.Usage, `--fetched-since "2026-02-30": expected a day`},
	} {
		code, _, errs := crawl(t, tt.args...)
		if code != tt.code || !strings.Contains(errs, tt.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tt.args, code, errs, tt.code, tt.want)
		}
	}
}

// A mistyped command gets cobra's suggestion, its indent a few spaces
// (not a tab shown as "?").
func TestMistypedCommandSuggests(t *testing.T) {
	code, _, errs := crawl(t, "backfil", "--pages", "1-")
	if code != exitcode.Usage || !strings.Contains(errs, "Did you mean this?\n    backfill\n") || strings.Contains(errs, "?backfill") {
		t.Errorf("exit %d: %q", code, errs)
	}
}
