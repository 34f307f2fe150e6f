package config_test

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/internal/config"
	"github.com/litcrawl/litcrawl/sink"
	_ "github.com/litcrawl/litcrawl/sink/jsonl"
	_ "github.com/litcrawl/litcrawl/sink/kafka"
	_ "github.com/litcrawl/litcrawl/sink/nats"
)

func write(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoad(t *testing.T) {
	c, err := config.Load(write(t, "sinks:\n  - jsonl:out/papers-{date}.jsonl\n  - nats://127.0.0.1:4222/papers.new?stream=PAPERS\n"), false, sink.Registered{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Sinks, []string{"jsonl:out/papers-{date}.jsonl", "nats://127.0.0.1:4222/papers.new?stream=PAPERS"}) {
		t.Errorf("sinks = %q", c.Sinks)
	}
	if c, err := config.Load(write(t, ""), false, sink.Registered{}); err != nil || len(c.Sinks) != 0 {
		t.Errorf("empty file: %v %+v", err, c)
	}
}

func TestLoadErrorsNameTheKey(t *testing.T) {
	tests := map[string]string{
		"sinks:\n  - jsonl:a\n  - ftp://x\n":                                           "sinks[1]",
		"sinks: \"postgres://u:hunter2@h:1/db?table=p\"\n":                             "sinks: \"postgres://u:REDACTED@h:1/db?table=p\": expected a list",
		"shutdown_timeout: \"nats://u:hunter2@h\"\n":                                   "not a duration",
		"journals: [1001, 1002, 1001]\n":                                               "journals[2]: 1001: listed twice (journals[0])",
		"sinks:\n  - nats://h:1/s\n":                                                   "expected ?stream=NAME",
		"sink:\n  - jsonl:a\n":                                                         "sink: unknown key (line 1); did you mean sinks?",
		"sinks: jsonl:a\n":                                                             "sinks: \"jsonl:a\": expected a list",
		"sinks:\n  - kafka://u:hunter2@h:1/t?zz=1\n":                                   "REDACTED",
		"frontier:\n  replicas: 7\n":                                                   "frontier.replicas: 7: expected 1 to 5 replicas",
		"site:\n  page_n: /l/{journal}.htm\n":                                          "site.page_n",
		"site:\n  first_page: /a/{journal}_2.htm\n  page_n: /a/{journal}_{page}.htm\n": "tell their pages apart",
		"journals: [1]\n---\nfetch:\n  concurency: 9\n":                                "line 3: a second YAML document",
		"fetch:\n  timeout: 24h\n":                                                     "fetch.timeout: 24h0m0s: expected a positive duration up to 10m",
		"fetch:\n  max_body_bytes: 10000000000\n":                                      "fetch.max_body_bytes",
		"fetch:\n  attempts: 1000\n":                                                   "fetch.attempts: 1000",
		"fetch:\n  max_crawl_delay: 48h\n":                                             "fetch.max_crawl_delay",
		"fetch:\n  breaker_max_opens: -1\n":                                            "fetch.breaker_max_opens",
		"backfill:\n  stop_after_repeat_pages: 0\n":                                    "backfill.stop_after_repeat_pages: 0",
		"backfill:\n  max_pages: 0\n":                                                  "backfill.max_pages: 0",
		"nightly:\n  max_pages: 2\n":                                                   "nightly.max_pages: 2: expected 4 to 1000000 pages (at least nightly.stop_after_known_pages + 3",
		"nightly:\n  stop_after_known_pages: 3\n  max_pages: 5\n":                      "nightly.max_pages: 5: expected 6 to",
		"parse:\n  max_input_bytes: 10\n":                                              "parse.max_input_bytes: 10",
		"site:\n  base_url: http://ann:hunter2@h/?q=1\n":                               "ann:REDACTED@h",
		"site:\n  allowed_hosts: [\"a/b\"]\n":                                          "site.allowed_hosts[0]",
		"site:\n  base_url: http://127.0.0.1:99999\n":                                  "a port from 1 to 65535",
		"site:\n  base_url: http://h/?\n":                                              "without query or fragment",
		"site:\n  allowed_hosts: [\"a:b:c\"]\n":                                        "site.allowed_hosts[0]",
		"quality:\n  min_title_share: .nan\n":                                          "quality.min_title_share: NaN",
		"quality:\n  min_papers_per_page: .inf\n":                                      "quality.min_papers_per_page: +Inf",
		"quality:\n  max_implausible_share: 1.5\n":                                     "quality.max_implausible_share: 1.5: expected a share from 0 to 1",
		"quality:\n  max_implausible_share: -0.1\n":                                    "quality.max_implausible_share: -0.1",
		"fetch:\n  user_agent: \"a\\r\\nX-Evil: 1\"\n":                                 "on one line",
		"# " + strings.Repeat("x", 1<<20) + "\n":                                       "larger than 1048576 bytes",
	}
	for text, want := range tests {
		_, err := config.Load(write(t, text), false, sink.Registered{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want it to mention %q", text, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%q: the password leaks: %v", text, err)
		}
	}
}

func TestMissingFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	if c, err := config.Load(missing, true, sink.Registered{}); err != nil || c == nil {
		t.Errorf("optional missing file: %v", err)
	}
	if _, err := config.Load(missing, false, sink.Registered{}); err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Errorf("required missing file: %v", err)
	}
}

func TestFetchAndSiteKeys(t *testing.T) {
	c, err := config.Load(write(t, "fetch:\n  delay: 1.5s\n  concurrency: 3\njournals: [7, 9]\nsite:\n  base_url: http://127.0.0.1:8089\n  allowed_hosts: [127.0.0.1]\n"), false, sink.Registered{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Fetch.Delay.D() != 1500*time.Millisecond || c.Fetch.Concurrency != 3 || !slices.Equal(c.JournalIDs(), []int64{7, 9}) ||
		c.Site.BaseURL != "http://127.0.0.1:8089" || c.Site.FirstPage != "/literature_d{journal}.htm" || c.Fetch.Attempts != 5 {
		t.Errorf("loaded %+v", c)
	}
	d := config.Default()
	if d.Fetch.Concurrency != 1 || d.Fetch.Delay.D() < time.Second || !d.Fetch.Robots {
		t.Errorf("the defaults must be polite: %+v", d.Fetch)
	}
	bad := map[string]string{
		"fetch:\n  delay: soon\n":                       `"soon" is not a duration`,
		"fetch:\n  concurrency: 0\n":                    "fetch.concurrency: 0: expected 1 to 64",
		"fetch:\n  timeout: 0s\n":                       "fetch.timeout",
		"fetch:\n  backoff_base: 2m\n  backoff_max: 1m": "backoff_base <= backoff_max",
		"site:\n  base_url: m.booksci.cn\n":             "site.base_url",
		"site:\n  page_n: /x_{page}.htm\n":              "site.page_n",
		"journals: [-1]\n":                              "journals[0]: -1",
		"fetch:\n  robotz: false\n":                     "fetch.robotz: unknown key (line 2); did you mean fetch.robots?",
	}
	for text, want := range bad {
		if _, err := config.Load(write(t, text), false, sink.Registered{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want it to mention %q", text, err, want)
		}
	}
}

// A password in site.base_url is taken out of the URL: BaseURL (what logs,
// records and reports see) has none; only the fetcher gets it back. A new
// base URL (the --base-url flag) drops it.
func TestBaseURLUserInfoIsKeptOutOfTheURL(t *testing.T) {
	c, err := config.Load(write(t, "site:\n  base_url: https://ann:hunter2@example.org/\n  allowed_hosts: [example.org]\n"), false, sink.Registered{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Site.BaseURL != "https://example.org" || c.Site.BaseURLWithAuth() != "https://ann:hunter2@example.org" {
		t.Errorf("BaseURL %q, with auth %q", c.Site.BaseURL, c.Site.BaseURLWithAuth())
	}
	c.Site.BaseURL, c.Site.AllowedHosts = "http://127.0.0.1:8089", []string{"127.0.0.1"}
	if err := c.Prepare(); err != nil || c.Site.BaseURLWithAuth() != "http://127.0.0.1:8089" {
		t.Errorf("another base URL must not get the first one's password: %q (%v)", c.Site.BaseURLWithAuth(), err)
	}
}

// Validate changes nothing, and names the first bad key in the file's
// order whatever else is bad (the same key on every run).
func TestValidateNeitherMutatesNorWanders(t *testing.T) {
	c := config.Default()
	c.Site.BaseURL = "https://ann:hunter2@example.org/"
	c.Site.AllowedHosts = []string{"example.org"}
	before := *c
	if err := c.Validate(); err != nil || !reflect.DeepEqual(*c, before) {
		t.Fatalf("Validate changed the configuration (%v): %+v", err, c.Site)
	}
	c.Quality.MinAuthorsShare, c.Quality.MinPublishedShare, c.Quality.MaxImplausibleShare = 2, -1, 7
	for range 20 {
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), "quality.min_authors_share: 2:") {
			t.Fatalf("first bad quality key: %v", err)
		}
	}
}

// A file of one document, with or without the "---" marker, loads.
func TestLoadOneDocument(t *testing.T) {
	for _, text := range []string{"---\njournals: [1]\n", "journals: [1]\n", "journals: [1]\n---\n"} {
		if _, err := config.Load(write(t, text), false, sink.Registered{}); err != nil {
			t.Errorf("%q: %v", text, err)
		}
	}
}

// A typo is named by its key path with the nearest valid key; a value of
// the wrong kind says what is expected, never a Go type name.
func TestLoadErrorsSpeakTheFilesLanguage(t *testing.T) {
	for text, want := range map[string]string{
		"fetch:\n  dealy: 1s\n":             "fetch.dealy: unknown key (line 2); did you mean fetch.delay?",
		"fetch:\n  attempts: abc\n":         `fetch.attempts: "abc": expected a whole number`,
		"fetch:\n  delay: \"1\"\n":          `fetch.delay: "1" is not a duration`,
		"journals: 5\n":                     `journals: "5": expected a list`,
		"journals: [1, x]\n":                `journals[1]: "x": expected a journal id, or a section with id:`,
		"fetch: 3\n":                        "fetch: expected a section of keys",
		"quality:\n  min_doi_share: high\n": `quality.min_doi_share: "high": expected a number`,
		// A journal's own settings obey the file's rules, named by the
		// journal's key path.
		"journals: [{id: 5, nightly: {max_pages: 2}}]\n":                         "journals[0] (5).nightly.max_pages: 2: expected 4 to",
		"journals: [{id: 5, backfill: {max_pages: 0}}]\n":                        "journals[0] (5).backfill.max_pages: 0: expected 1 to",
		"journals: [7, {id: 5, sinks: [\"ftp://x\"]}]\n":                         "journals[1] (5).sinks[0]: sink",
		"journals: [{id: 5, sinks: []}]\n":                                       "journals[0] (5).sinks: []: expected at least one sink URL",
		"journals: [{id: 5, fetch: {delay: 2h}}]\n":                              "journals[0] (5).fetch.delay: 2h0m0s: expected a duration from 0 to 1h",
		"journals: [{id: 5, fetch: {delay: x}}]\n":                               `journals[0].fetch.delay: "x" is not a duration`,
		"journals: [{id: 5, fetch: {jitter: 1s}}]\n":                             "journals[0].fetch.jitter: unknown key (line 1); a journal's entry takes id, name",
		"journals: [{id: 5, nightly: {max_pagez: 9}}]\n":                         "did you mean journals[0].nightly.max_pages?",
		"journals: [{name: x}]\n":                                                "journals[0]: no id: expected id: J",
		"sinks: [\"jsonl:a.jsonl\", \"jsonl:./a.jsonl\"]\n":                      "sinks[1]: jsonl:./a.jsonl: the destination of sinks[0] again",
		"journals: [{id: 5, sinks: [\"jsonl:b\", \"jsonl:b\"]}]\n":               "journals[0] (5).sinks[1]: jsonl:b: the destination of journals[0] (5).sinks[0] again",
		"nightly: {stop_after_known_pages: 9223372036854775806, max_pages: 5}\n": "nightly.stop_after_known_pages: 9223372036854775806: expected 1 to",
		"journals: [{id: 5, name: \"a\\u2028b\"}]\n":                             "journals[0] (5).name",
		"site: {base_url: \"http://127.0.0.1:18089\"}\n":                         `site.base_url: "http://127.0.0.1:18089": expected a host in site.allowed_hosts (m.booksci.cn, booksci.cn): add 127.0.0.1:18089 to it`,
		"journals: [5, {id: 5}]\n":                                               "journals[1]: 5: listed twice (journals[0])",
		"journals: [{id: 5, name: \"a\\nb\"}]\n":                                 `journals[0] (5).name: "a\nb": expected a name on one line`,
	} {
		_, err := config.Load(write(t, text), false, sink.Registered{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want %q", text, err, want)
		}
		if err != nil && (strings.Contains(err.Error(), "int64") || strings.Contains(err.Error(), "config.Fetch") || strings.Contains(err.Error(), "!!")) {
			t.Errorf("%q: %v names a Go type", text, err)
		}
	}
}

// The quality gate alarms on any implausible paper unless told otherwise.
func TestImplausibleShareDefault(t *testing.T) {
	if got := config.Default().Quality.MaxImplausibleShare; got != 0 {
		t.Errorf("default quality.max_implausible_share = %v, want 0", got)
	}
	c, err := config.Load(write(t, "quality:\n  max_implausible_share: 0.01\n"), false, sink.Registered{})
	if err != nil || c.Quality.MaxImplausibleShare != 0.01 {
		t.Errorf("%v %+v", err, c.Quality)
	}
}

// A journal's entry overrides the file's settings for it alone; For
// gives the settings in effect, and what the journal sets itself.
func TestJournalSettings(t *testing.T) {
	c, err := config.Load(write(t, `fetch: {delay: 2s}
sinks: [-]
nightly: {max_pages: 30}
journals:
  - 1
  - id: 2
    name: Two
    nightly: {max_pages: 90}
    backfill: {stop_after_repeat_pages: 7}
    sinks: ["jsonl:two.jsonl"]
    fetch: {delay: 1s}
`), false, sink.Registered{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.JournalIDs(), []int64{1, 2}) {
		t.Fatalf("ids %v", c.JournalIDs())
	}
	one, two, other := c.For(1), c.For(2), c.For(3)
	if one.Nightly.MaxPages != 30 || one.Own != nil || !slices.Equal(one.Sinks, []string{"-"}) || one.Fetch.Delay.D() != 2*time.Second {
		t.Errorf("journal 1: %+v", one)
	}
	if two.Name != "Two" || two.Nightly.MaxPages != 90 || two.Nightly.StopAfterKnownPages != 1 || two.Backfill.StopAfterRepeatPages != 7 ||
		two.Backfill.MaxPages != 100_000 || !slices.Equal(two.Sinks, []string{"jsonl:two.jsonl"}) ||
		!slices.Equal(two.Own, []string{"nightly.max_pages", "backfill.stop_after_repeat_pages", "sinks"}) { // its 1s delay is not the one in effect
		t.Errorf("journal 2: %+v", two)
	}
	// The host's delay holds between any two requests: a shorter one of
	// the journal's changes nothing.
	if two.Fetch.Delay.D() != 2*time.Second || c.JournalDelays() != nil {
		t.Errorf("journal 2's delay in effect %v, journal delays %v", two.Fetch.Delay.D(), c.JournalDelays())
	}
	if other.Nightly != c.Nightly || other.Own != nil {
		t.Errorf("a journal with no entry: %+v", other)
	}
	if js := c.JournalSinks(); len(js) != 1 || js[2][0] != "jsonl:two.jsonl" {
		t.Errorf("journal sinks %v", js)
	}
	if all := c.AllSinks(); !slices.Equal(all, []string{"-", "jsonl:two.jsonl"}) {
		t.Errorf("all sinks %v", all)
	}
	c.DropJournalSinks()
	if c.JournalSinks() != nil || !slices.Equal(c.For(2).Sinks, []string{"-"}) {
		t.Errorf("after DropJournalSinks: %v", c.For(2).Sinks)
	}
}

// A whole-number key takes a whole number as YAML writes one: 64.9, 1e1
// or 1.5 are refused, not cut to a whole number without a word.
func TestWholeNumbersAreWrittenWhole(t *testing.T) {
	for text, want := range map[string]string{
		"fetch:\n  concurrency: 64.9\n":   `fetch.concurrency: "64.9": expected a whole number`,
		"fetch:\n  max_body_bytes: 1e6\n": `fetch.max_body_bytes: "1e6": expected a whole number`,
		"journals: [1.5]\n":               `journals[0]: "1.5": expected a journal id`,
		"nightly:\n  max_pages: 50.0\n":   `nightly.max_pages: "50.0": expected a whole number`,
	} {
		if _, err := config.Load(write(t, text), false, sink.Registered{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", text, err, want)
		}
	}
	if c, err := config.Load(write(t, "fetch:\n  concurrency: 0x10\n"), false, sink.Registered{}); err != nil || c.Fetch.Concurrency != 16 {
		t.Errorf("a hexadecimal whole number: %v", err)
	}
}
