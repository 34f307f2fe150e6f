package config

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/litcrawl/litcrawl/internal/redact"
	"github.com/litcrawl/litcrawl/internal/textsafe"
	"github.com/litcrawl/litcrawl/site"
)

// A rule is one row of the configuration's table: the keys it checks,
// their default and meaning as the reference shows them, and the check
// (nil: any value of the key's type is right). Validate runs the checks
// in the table's order, which is the file's; docs/reference.md's table of
// keys is made from the same rows (Reference, and a test that compares).
type rule struct {
	keys    []string
	def     string
	meaning string
	check   func(c *Config) error
}

// rules is the configuration's table.
var rules = []rule{
	{[]string{"site.base_url"}, "`https://m.booksci.cn`", "the listing site (`user:password@` in it is sent as Basic auth and shown nowhere)", checkBaseURLForm},
	{[]string{"site.first_page"}, "`/literature_d{journal}.htm`", "path of page 1", checkFirstPage},
	{[]string{"site.page_n"}, "`/literature_d{journal}_{page}.htm`", "path of page N", checkPageN},
	{[]string{"site.allowed_hosts"}, "`[m.booksci.cn, booksci.cn]`", "the only hosts fetched, on the base URL's port (80 and 443 when it names none); `host:port` for that port alone; redirects elsewhere are refused", checkAllowedHosts},
	{[]string{"journals"}, "`[501422]` in the shipped file", "journals crawled when `--journal` is not given: an id, or a section with a journal's own settings (below)", (*Config).validateJournalIDs},
	{[]string{"fetch.concurrency"}, "`1`", "requests in flight per host",
		ints("fetch.concurrency", func(c *Config) int { return c.Fetch.Concurrency }, 1, MaxConcurrency, "requests per host")},
	{[]string{"fetch.delay", "fetch.jitter"}, "`1s`, `500ms`", "at least delay plus up to jitter between two requests to a host", all(
		durs("fetch.delay", func(c *Config) Duration { return c.Fetch.Delay }, 0, MaxWait, "a duration from 0 to 1h"),
		durs("fetch.jitter", func(c *Config) Duration { return c.Fetch.Jitter }, 0, MaxWait, "a duration from 0 to 1h"))},
	{[]string{"fetch.timeout"}, "`30s`", "one fetch",
		durs("fetch.timeout", func(c *Config) Duration { return c.Fetch.Timeout }, 1, 10*time.Minute, "a positive duration up to 10m")},
	{[]string{"fetch.max_body_bytes"}, "`8388608`", "a larger response fails the page",
		int64s("fetch.max_body_bytes", func(c *Config) int64 { return c.Fetch.MaxBodyBytes }, 1024, MaxBodyBytes, "bytes")},
	{[]string{"fetch.attempts"}, "`5`", "tries per page in all",
		ints("fetch.attempts", func(c *Config) int { return c.Fetch.Attempts }, 1, MaxAttempts, "tries per page")},
	{[]string{"fetch.backoff_base", "fetch.backoff_max"}, "`1s`, `1m`", "exponential backoff with full jitter between tries", checkBackoff},
	{[]string{"fetch.max_retry_after"}, "`2m`", "a server's `Retry-After` is honoured up to this; a longer one fails the page at once",
		durs("fetch.max_retry_after", func(c *Config) Duration { return c.Fetch.MaxRetryAfter }, 0, MaxWait, "a duration from 0 to 1h")},
	{[]string{"fetch.breaker_threshold", "fetch.breaker_cooldown"}, "`5`, `2m`", "failures in a row before a host cools down, and for how long", all(
		ints("fetch.breaker_threshold", func(c *Config) int { return c.Fetch.BreakerThreshold }, 1, -1, "failures"),
		durs("fetch.breaker_cooldown", func(c *Config) Duration { return c.Fetch.BreakerCooldown }, 1, MaxWait, "a positive duration up to 1h"))},
	{[]string{"fetch.breaker_max_opens"}, "`2`", "after this many cool-downs in a row the host is down: its remaining pages fail at once (`0`: never)",
		func(c *Config) error {
			if n := c.Fetch.BreakerMaxOpens; n < 0 {
				return bad("fetch.breaker_max_opens", n, "0 (never give up on a host) or more openings in a row")
			}
			return nil
		}},
	{[]string{"fetch.max_crawl_delay"}, "`1m`", "a longer robots.txt Crawl-delay is clamped to this",
		durs("fetch.max_crawl_delay", func(c *Config) Duration { return c.Fetch.MaxCrawlDelay }, 0, MaxWait, "a duration from 0 (no cap) to 1h")},
	{[]string{"fetch.user_agent"}, "`litcrawl/0.1 (+…)`", "sent with every request; the robots.txt agent", checkUserAgent},
	{[]string{"fetch.robots"}, "`true`", "honour robots.txt and its Crawl-delay", nil},
	{[]string{"nightly.stop_after_known_pages"}, "`1`", "a nightly walk ends on proof (the papers that began the listing last night, met in order); without a head to prove against (the first walk after a backfill, a state of an earlier version) it stops after this many pages of papers known before the run, and a search for the papers a proof needs gives up after one page more ([the walk](state.md#the-nightly-walk))",
		func(c *Config) error { return c.Nightly.checkKnown("nightly") }},
	{[]string{"nightly.max_pages"}, "`50`", "a nightly walk fetches at most this many pages (at least `stop_after_known_pages`+3); one that stops there says so and leaves a gap, and the next walk carries on from it",
		func(c *Config) error { return c.Nightly.checkMax("nightly") }},
	{[]string{"nightly.audit_pages"}, "`1`", "after its walk, each journal re-reads this many more pages, round the whole listing: every paper listed is delivered within pages ÷ `audit_pages` nights (0: no audit)",
		func(c *Config) error { return c.Nightly.checkAudit("nightly") }},
	{[]string{"backfill.stop_after_repeat_pages"}, "`20`", "an open-ended walk stops after this many pages in a row with no paper new to the run",
		func(c *Config) error { return c.Backfill.checkRepeat("backfill") }},
	{[]string{"backfill.max_pages"}, "`100000`", "an open-ended backfill never goes past page A+max_pages−1 (one that stops there before the listing's end says so in its summary, `incomplete:`, and in `crawl runs show`); `crawl enqueue` publishes at most this many pages a journal",
		func(c *Config) error { return c.Backfill.checkMax("backfill") }},
	{[]string{"parse.max_input_bytes"}, "`67108864`", "`crawl parse` fails on a larger input",
		int64s("parse.max_input_bytes", func(c *Config) int64 { return c.Parse.MaxInputBytes }, 1024, MaxInputBytes, "bytes")},
	{[]string{"quality.min_papers_per_page"}, "`5`", "a run whose parsed pages hold fewer papers on average exits 4", nil},
	{[]string{"quality.min_title_share", "quality.min_doi_share", "quality.min_authors_share", "quality.min_published_share"}, "`0.9`, `0.5`, `0.8`, `0.8`", "a run whose parsed papers have these fields less often exits 4", nil},
	{[]string{"quality.max_implausible_share"}, "`0`", "a run in which more than this share of papers has a field that does not look like what it is (a title that reads as names, authors that are prose, an abstract that is a title line, page furniture in a field, a date outside 1900 to a year ahead, a lost block) exits 4, naming the field and one value; `0`: any such paper alarms",
		func(c *Config) error { return c.Quality.Validate() }}, // the gate's thresholds are the gate's (quality.Thresholds)
	{[]string{"quality.hold"}, "`implausible`", "a record with a finding (a field that does not look like what it is) is held in the quarantine with its page's bytes, not delivered, and the run exits 4; `crawl quarantine retry --reparse` delivers it once the parser reads it right ([revisions](revisions.md#held-records)); `none`: delivered, and alarmed", nil},
	{[]string{"updates.citations"}, "`false`", "a paper whose citation count alone changed is delivered again as its next revision; `false`: the count is brought up to date only with a revision another change makes ([revisions](revisions.md))", nil},
	{[]string{"state_dir"}, "`crawl-state`", "the crawl state (bbolt file `crawl.db`)", checkStateDir},
	{[]string{"shutdown_timeout"}, "`30s`", "after the first SIGINT/SIGTERM, pages in flight finish within this",
		durs("shutdown_timeout", func(c *Config) Duration { return c.ShutdownTimeout }, 0, MaxWait, "a duration from 0 to 1h")},
	{[]string{"frontier.replicas"}, "`0`", "replicas (1 to 5) of the distributed frontier's streams and buckets; `0` keeps what exists and creates with 1; `--replicas` overrides it",
		func(c *Config) error {
			if n := c.Frontier.Replicas; n < 0 || n > MaxReplicas {
				return bad("frontier.replicas", n, fmt.Sprintf("1 to %d replicas (0: as the frontier has them, 1 when created)", MaxReplicas))
			}
			return nil
		}},
	{[]string{"frontier.ack_wait"}, "`0s`", "how long a worker may hold a job without a heartbeat before another worker gets it (1s to 10m); workers heartbeat every third of it; `0s` keeps what the frontier has and creates it with 30s; `--ack-wait` overrides it", checkAckWait},
	{[]string{"sinks"}, "`[]` (stdout)", "sink URLs records go to (see [Sinks](reference.md#sinks)); `--sink` replaces the list",
		func(c *Config) error { return c.checkSinks("sinks", c.Sinks) }},
	// A journal's own settings, after the sections they override (the
	// reference has a section of its own for them).
	{nil, "", "", (*Config).validateJournalSettings},
}

// Validate checks every value, in the order of the file, and names the
// first bad one by its key. It changes nothing (Normalize does).
func (c *Config) Validate() error {
	for _, r := range rules {
		if r.check == nil {
			continue
		}
		if err := r.check(c); err != nil {
			return err
		}
	}
	return nil
}

// Reference is the configuration's table of keys as docs/reference.md
// shows it (markdown).
func Reference() string {
	var b strings.Builder
	b.WriteString("| key | default | meaning |\n| --- | --- | --- |\n")
	for _, r := range rules {
		if len(r.keys) == 0 {
			continue
		}
		keys := make([]string, len(r.keys))
		for i, k := range r.keys {
			keys[i] = "`" + k + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", strings.Join(keys, ", "), r.def, r.meaning)
	}
	return b.String()
}

func bad(key string, v any, want string) error {
	return fmt.Errorf("%s: %v: expected %s", key, v, want)
}

// all runs checks in order.
func all(checks ...func(*Config) error) func(*Config) error {
	return func(c *Config) error {
		for _, check := range checks {
			if err := check(c); err != nil {
				return err
			}
		}
		return nil
	}
}

// ints checks a whole number from lo to hi (hi < 0: no upper bound);
// unit names what it counts.
func ints(key string, get func(*Config) int, lo, hi int, unit string) func(*Config) error {
	return func(c *Config) error {
		v := get(c)
		switch {
		case hi < 0 && v < lo:
			return bad(key, v, fmt.Sprintf("%d or more %s", lo, unit))
		case hi >= 0 && (v < lo || v > hi):
			return bad(key, v, fmt.Sprintf("%d to %d %s", lo, hi, unit))
		}
		return nil
	}
}

func int64s(key string, get func(*Config) int64, lo, hi int64, unit string) func(*Config) error {
	return func(c *Config) error {
		if v := get(c); v < lo || v > hi {
			return bad(key, v, fmt.Sprintf("%d to %d %s", lo, hi, unit))
		}
		return nil
	}
}

// durs checks a duration from lo to hi; want says so in words.
func durs(key string, get func(*Config) Duration, lo, hi time.Duration, want string) func(*Config) error {
	return func(c *Config) error {
		if d := get(c).D(); d < lo || d > hi {
			return bad(key, d, want)
		}
		return nil
	}
}

func checkBaseURLForm(c *Config) error {
	if _, err := site.CheckBaseURL(c.Site.BaseURL); err != nil {
		return fmt.Errorf("site.base_url: %w", err)
	}
	return nil
}

func checkFirstPage(c *Config) error {
	if p := c.Site.FirstPage; !strings.HasPrefix(p, "/") || strings.Count(p, site.JournalVar) != 1 || strings.Contains(p, site.PageVar) {
		return bad("site.first_page", fmt.Sprintf("%q", p), "a path with {journal} once and no {page}, e.g. /literature_d{journal}.htm")
	}
	return nil
}

func checkPageN(c *Config) error {
	if p := c.Site.PageN; !strings.HasPrefix(p, "/") || strings.Count(p, site.JournalVar) != 1 || strings.Count(p, site.PageVar) != 1 {
		return bad("site.page_n", fmt.Sprintf("%q", p), "a path with {journal} and {page} once each, e.g. /literature_d{journal}_{page}.htm")
	}
	if _, err := site.New(c.Site.FirstPage, c.Site.PageN); err != nil {
		return fmt.Errorf("site.first_page/page_n: %w", err)
	}
	return nil
}

// checkAllowedHosts: each a host, and the base URL's host among them
// (else every page fails as off the allowed hosts, which reads as a site
// that never answered).
func checkAllowedHosts(c *Config) error {
	hosts := c.Site.AllowedHosts
	if len(hosts) == 0 {
		return bad("site.allowed_hosts", "[]", "at least the host of site.base_url")
	}
	for i, h := range hosts {
		if !validHost(h) {
			return bad(fmt.Sprintf("site.allowed_hosts[%d]", i), fmt.Sprintf("%q", h), "a host name, or host:port with a port from 1 to 65535")
		}
	}
	u, _ := url.Parse(c.Site.BaseURL) // checked by the row above
	if !slices.ContainsFunc(hosts, func(h string) bool {
		return strings.EqualFold(h, u.Hostname()) || u.Port() != "" && strings.EqualFold(h, u.Host)
	}) {
		return bad("site.base_url", fmt.Sprintf("%q", redact.URL(c.Site.BaseURL)),
			fmt.Sprintf("a host in site.allowed_hosts (%s): add %s to it", strings.Join(hosts, ", "), u.Host))
	}
	return nil
}

func checkBackoff(c *Config) error {
	if f := c.Fetch; f.BackoffBase <= 0 || f.BackoffMax < f.BackoffBase || f.BackoffMax.D() > MaxWait {
		return bad("fetch.backoff_base/backoff_max", fmt.Sprintf("%v/%v", f.BackoffBase.D(), f.BackoffMax.D()), "0 < backoff_base <= backoff_max <= 1h")
	}
	return nil
}

func checkUserAgent(c *Config) error {
	if ua := c.Fetch.UserAgent; strings.TrimSpace(ua) == "" || strings.ContainsFunc(ua, textsafe.Unsafe) {
		return bad("fetch.user_agent", fmt.Sprintf("%q", ua), "a user agent naming the crawler, on one line")
	}
	return nil
}

func checkStateDir(c *Config) error {
	if c.StateDir == "" {
		return bad("state_dir", `""`, "a directory")
	}
	return nil
}

func checkAckWait(c *Config) error {
	if a := c.Frontier.AckWait.D(); a != 0 && (a < MinAckWait || a > MaxAckWait) {
		return bad("frontier.ack_wait", a, fmt.Sprintf("a duration from %v to %v (0: as the frontier has it, 30s when created)", MinAckWait, MaxAckWait))
	}
	return nil
}

// SinkURLs is what the configuration asks of the sink drivers, given to
// it by the caller (sink.Registered, the drivers the binary links): is a
// URL one a driver takes, and which destination does it name (two
// spellings of one file are one sink).
type SinkURLs interface {
	CheckURL(raw string) error
	Same(raw string) string
}

// errNoSinkURLs: a configuration with sink URLs and nothing to check them
// by (a program's mistake, never a user's).
var errNoSinkURLs = errors.New("sink URLs cannot be checked: the configuration was given no sink drivers (config.Load's urls)")

// checkSinks checks a list of sink URLs (key names it): each valid, and
// each destination once, however its URL is spelled.
func (c *Config) checkSinks(key string, urls []string) error {
	if len(urls) > 0 && c.sinkURLs == nil {
		return fmt.Errorf("%s: %w", key, errNoSinkURLs)
	}
	for i, u := range urls {
		if err := c.sinkURLs.CheckURL(u); err != nil {
			return fmt.Errorf("%s[%d]: %w", key, i, err)
		}
		if k := slices.IndexFunc(urls[:i], func(o string) bool { return c.same(o) == c.same(u) }); k >= 0 {
			return fmt.Errorf("%s[%d]: %s: the destination of %s[%d] again: expected each sink once", key, i, redact.URL(u), key, k)
		}
	}
	return nil
}

// same is the destination a sink URL names (the URL itself when the
// configuration was given no drivers).
func (c *Config) same(u string) string {
	if c.sinkURLs == nil {
		return u
	}
	return c.sinkURLs.Same(u)
}

// checkKnown, checkMax and checkAudit are a nightly section's rules; key
// names the section ("nightly", or a journal's:
// "journals[1] (501423).nightly").
func (n Nightly) checkKnown(key string) error {
	if n.StopAfterKnownPages < 1 || n.StopAfterKnownPages > MaxPages {
		return fmt.Errorf("%s.stop_after_known_pages: %d: expected 1 to %d pages", key, n.StopAfterKnownPages, MaxPages)
	}
	return nil
}

func (n Nightly) checkMax(key string) error {
	if least := n.StopAfterKnownPages + 3; n.MaxPages < least || n.MaxPages > MaxPages {
		// A walk that carries on from where the last one stopped spends
		// the pages to known papers, the page before the one it stopped at
		// and that page before it gets a page further.
		return fmt.Errorf("%s.max_pages: %d: expected %d to %d pages (at least %s.stop_after_known_pages + 3, so that a walk that carries on from where the last one stopped gets further)",
			key, n.MaxPages, least, MaxPages, key)
	}
	return nil
}

func (n Nightly) checkAudit(key string) error {
	if n.AuditPages < 0 || n.AuditPages > MaxAuditPages {
		return fmt.Errorf("%s.audit_pages: %d: expected 0 to %d pages (0: no audit; the audit re-reads a listing's every page within pages ÷ audit_pages nights)", key, n.AuditPages, MaxAuditPages)
	}
	return nil
}

// validate checks a nightly section by its rules, naming the first one
// broken.
func (n Nightly) validate(key string) error {
	return cmp.Or(n.checkKnown(key), n.checkMax(key), n.checkAudit(key))
}

// validate checks a backfill section by its rules.
func (b Backfill) validate(key string) error {
	return cmp.Or(b.checkRepeat(key), b.checkMax(key))
}

func (b Backfill) checkRepeat(key string) error {
	if b.StopAfterRepeatPages < 1 {
		return fmt.Errorf("%s.stop_after_repeat_pages: %d: expected 1 or more pages", key, b.StopAfterRepeatPages)
	}
	return nil
}

func (b Backfill) checkMax(key string) error {
	if b.MaxPages < 1 || b.MaxPages > MaxPages {
		return fmt.Errorf("%s.max_pages: %d: expected 1 to %d pages", key, b.MaxPages, MaxPages)
	}
	return nil
}
