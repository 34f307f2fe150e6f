package main

import (
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/internal/testsite"
)

// With --log-format json every line on stderr is one JSON object, on
// every command: logs, the summary, failures, notices, errors and hints.
func TestJSONLogsAreJSONOnEveryLine(t *testing.T) {
	t.Parallel()
	site := testsite.New()
	site.SynthJournal(1001, 2, 5)
	srv := httptest.NewServer(site)
	defer srv.Close()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"backfill", "--journal", "1001", "--journal", "1002", "--pages", "1-3", "--base-url", srv.URL, "--delay", "0",
			"--state-dir", filepath.Join(dir, "s"), "--sink", "jsonl:" + filepath.Join(dir, "p.jsonl")},
		{"parse", "--summary", "fixtures/edge"},
		{"parse", "--strict", "fixtures/golden"},
		{"parse", "--log-format", "json", "--nosuchflag"},
		{"nosuch"},
		{"state", "rebuild"},
	} {
		args = append(args, "--log-format", "json")
		code, _, errs := crawl(t, args...)
		lines := strings.Split(strings.TrimRight(errs, "\n"), "\n")
		if errs == "" {
			t.Errorf("%v: exit %d, nothing on stderr", args, code)
			continue
		}
		for _, l := range lines {
			var obj map[string]any
			if err := json.Unmarshal([]byte(l), &obj); err != nil || obj["msg"] == nil {
				t.Errorf("%v: a stderr line is not a JSON log object: %q", args, l)
			}
		}
	}
}
