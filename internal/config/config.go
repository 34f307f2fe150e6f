// Package config loads config.yaml into plain structs: defaults first, then
// the file, then validation that names the key, the value and what is
// expected. Flags override the file (the commands do that); environment
// variables are only for secrets and are read by the parts that need them.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/litcrawl/litcrawl/internal/quality"
	"github.com/litcrawl/litcrawl/site"
)

// MaxConcurrency bounds the requests in flight per host, in the file and
// on the command line.
const MaxConcurrency = 64

// Upper bounds of the other limits: a value past them is a mistake (a
// typo, a unit slip), not a wish.
const (
	MaxBodyBytes  = 256 << 20 // fetch.max_body_bytes
	MaxInputBytes = 1 << 30   // parse.max_input_bytes
	MaxPages      = 1_000_000 // nightly.max_pages, backfill.max_pages
	MaxAuditPages = 1_000     // nightly.audit_pages
	// MaxPageNumber is the highest page number a command takes (--pages).
	MaxPageNumber = 100_000_000
	MaxAttempts   = 20        // fetch.attempts
	MaxWait       = time.Hour // the durations that make the crawl wait
)

// DefaultPath is where the commands look when --config is not given.
const DefaultPath = "config.yaml"

// Config is the whole file.
type Config struct {
	// Site is where the listings are.
	Site Site `yaml:"site"`
	// Journals are the journals crawled when --journal is not given: ids,
	// or sections with a journal's own settings (see Journal).
	Journals []Journal `yaml:"journals"`
	// Fetch is how politely and patiently pages are fetched.
	Fetch Fetch `yaml:"fetch"`
	// Nightly is how far a nightly walk goes.
	Nightly Nightly `yaml:"nightly"`
	// Quality are the alarms on what the parsed records hold.
	Quality Quality `yaml:"quality"`
	// Updates say what makes a known paper's next revision.
	Updates Updates `yaml:"updates"`
	// StateDir holds the crawl state (known papers, page status, tokens).
	StateDir string `yaml:"state_dir"`
	// ShutdownTimeout is how long the pages in flight may take to finish
	// after the first SIGINT/SIGTERM.
	ShutdownTimeout Duration `yaml:"shutdown_timeout"`
	// Sinks are the sink URLs records go to (see the README's sink table);
	// empty means standard output. --sink flags replace the list.
	Sinks []string `yaml:"sinks"`
	// Frontier is the shared frontier of distributed crawling.
	Frontier Frontier `yaml:"frontier"`
	// Backfill bounds open-ended backfills (--pages A-).
	Backfill Backfill `yaml:"backfill"`
	// Parse bounds what crawl parse reads.
	Parse Parse `yaml:"parse"`

	sinkURLs SinkURLs // the drivers sink URLs are checked by (Load's urls)
}

// Backfill bounds the walk of an open-ended page range (--pages A-).
type Backfill struct {
	// StopAfterRepeatPages: stop a journal's open-ended walk after this
	// many fetched pages in a row that add no paper not already seen in
	// this run (a site that answers every page number with the same
	// papers). Skipped pages do not count. Nightly walks obey it too.
	StopAfterRepeatPages int `yaml:"stop_after_repeat_pages" json:"stop_after_repeat_pages"`
	// MaxPages: an open-ended walk never goes past page A+MaxPages-1
	// (crawl enqueue too).
	MaxPages int `yaml:"max_pages" json:"max_pages"`
}

// Updates say what makes a delivered paper's next revision (see
// docs/revisions.md).
type Updates struct {
	// Citations: a change of the citation count alone is a new revision.
	Citations bool `yaml:"citations" json:"citations"`
}

// Parse bounds crawl parse.
type Parse struct {
	// MaxInputBytes is the largest input file (or stream) parsed; a larger
	// one fails with an error naming this key.
	MaxInputBytes int64 `yaml:"max_input_bytes"`
}

// MaxReplicas bounds frontier.replicas (and --replicas): JetStream keeps
// at most five replicas of a stream.
const MaxReplicas = 5

// Bounds of frontier.ack_wait (and --ack-wait).
const (
	MinAckWait = time.Second
	MaxAckWait = 10 * time.Minute
)

// Frontier configures the JetStream resources of distributed crawling.
type Frontier struct {
	// Replicas of the frontier's streams and buckets, 1 to 5 (3 on a
	// three-server cluster survives losing a server). 0, the default,
	// keeps what exists as it is and creates with 1.
	Replicas int `yaml:"replicas"`
	// AckWait is how long a worker may hold a job without a heartbeat
	// before it goes to another: a job held by a dead worker is delivered
	// again within it. Workers heartbeat their jobs every third of it,
	// whatever a page's own waits. 1s to 10m; 0, the default, keeps what
	// the frontier has and creates it with 30s.
	AckWait Duration `yaml:"ack_wait"`
}

// Site describes the listing site.
type Site struct {
	BaseURL      string   `yaml:"base_url"`
	FirstPage    string   `yaml:"first_page"`    // path template with {journal}
	PageN        string   `yaml:"page_n"`        // path template with {journal} and {page}
	AllowedHosts []string `yaml:"allowed_hosts"` // the only hosts fetched ("host" or "host:port")

	scheme *site.Scheme  // compiled from FirstPage and PageN by Normalize
	auth   *url.Userinfo // user info taken out of BaseURL by Normalize
	authOf string        // the BaseURL it was taken from (a new BaseURL drops it)
}

// BaseURLWithAuth is the base URL with the user info Normalize took out of
// it (for the fetcher only, which sends it as Basic auth and never shows
// it); BaseURL itself never holds a password once validated.
func (s Site) BaseURLWithAuth() string {
	if s.auth == nil || s.authOf != s.BaseURL {
		return s.BaseURL
	}
	u, err := url.Parse(s.BaseURL)
	if err != nil {
		return s.BaseURL
	}
	u.User = s.auth
	return u.String()
}

// Scheme is the site's URL scheme, compiled from first_page and page_n
// by Normalize (site.Default before that).
func (s Site) Scheme() *site.Scheme {
	if s.scheme == nil {
		return site.Default
	}
	return s.scheme
}

// Fetch is the politeness and resilience of fetching.
type Fetch struct {
	Concurrency      int      `yaml:"concurrency"` // per host
	Delay            Duration `yaml:"delay"`
	Jitter           Duration `yaml:"jitter"`
	Timeout          Duration `yaml:"timeout"`
	MaxBodyBytes     int64    `yaml:"max_body_bytes"`
	Attempts         int      `yaml:"attempts"` // tries per page in all
	BackoffBase      Duration `yaml:"backoff_base"`
	BackoffMax       Duration `yaml:"backoff_max"`
	MaxRetryAfter    Duration `yaml:"max_retry_after"`
	UserAgent        string   `yaml:"user_agent"`
	Robots           bool     `yaml:"robots"`
	BreakerThreshold int      `yaml:"breaker_threshold"`
	BreakerCooldown  Duration `yaml:"breaker_cooldown"`
	// BreakerMaxOpens: once a host's breaker has opened this many times in
	// a row, its remaining pages fail at once (exit 3; the next run retries
	// them) instead of waiting a cooldown each.
	BreakerMaxOpens int `yaml:"breaker_max_opens"`
	// MaxCrawlDelay caps robots.txt's Crawl-delay; a larger one is clamped
	// and logged.
	MaxCrawlDelay Duration `yaml:"max_crawl_delay"`
}

// Nightly bounds the nightly walk of each journal.
type Nightly struct {
	// StopAfterKnownPages: stop after this many consecutive pages whose
	// papers were all known before the run began.
	StopAfterKnownPages int `yaml:"stop_after_known_pages" json:"stop_after_known_pages"`
	// MaxPages: a walk fetches at most this many pages; one that reaches
	// it before known papers leaves a mark, and the next walk carries on
	// from there (engine.Walk).
	MaxPages int `yaml:"max_pages" json:"max_pages"`
	// AuditPages: after its walk, each journal re-reads this many more
	// listing pages, from where the last audit stopped, round the whole
	// listing, so that every paper still listed is delivered within
	// pages ÷ audit_pages nights whatever the walks missed (0: no audit).
	AuditPages int `yaml:"audit_pages" json:"audit_pages"`
}

// Quality are the thresholds of the quality gate; the type and its
// bounds live with the gate (quality.Thresholds).
type Quality = quality.Thresholds

// CheckJournal is the rule of a journal id, wherever one enters (the
// file's journals, --journal, a fleet job): a positive number.
func CheckJournal(j int64) error {
	if j <= 0 {
		return errors.New("expected a positive journal id")
	}
	return nil
}

// Duration is a time.Duration written as Go writes it: "1.5s", "2m".
type Duration time.Duration

func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (expected e.g. 500ms, 1.5s, 2m)", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON and MarshalYAML write the duration as it is written in the
// file ("1.5s").
func (d Duration) MarshalJSON() ([]byte, error) { return []byte(`"` + d.D().String() + `"`), nil }

func (d Duration) MarshalYAML() (any, error) { return d.D().String(), nil }

// D is the duration as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Default is the configuration with no file.
func Default() *Config {
	c := &Config{}
	c.setDefaults()
	return c
}

// CheckSinksBy makes the configuration check its sink URLs by urls (see
// SinkURLs) and returns it.
func (c *Config) CheckSinksBy(urls SinkURLs) *Config {
	c.sinkURLs = urls
	return c
}

// The defaults target the real site politely: one request at a time per
// host, at least a second apart.
func (c *Config) setDefaults() {
	c.Site = Site{
		BaseURL:      "https://m.booksci.cn",
		FirstPage:    "/literature_d{journal}.htm",
		PageN:        "/literature_d{journal}_{page}.htm",
		AllowedHosts: []string{"m.booksci.cn", "booksci.cn"},
	}
	c.Fetch = Fetch{
		Concurrency: 1, Delay: Duration(time.Second), Jitter: Duration(500 * time.Millisecond),
		Timeout: Duration(30 * time.Second), MaxBodyBytes: 8 << 20, Attempts: 5,
		BackoffBase: Duration(time.Second), BackoffMax: Duration(time.Minute), MaxRetryAfter: Duration(2 * time.Minute),
		UserAgent: "litcrawl/0.1 (+https://github.com/litcrawl/litcrawl)", Robots: true,
		BreakerThreshold: 5, BreakerCooldown: Duration(2 * time.Minute), BreakerMaxOpens: 2,
		MaxCrawlDelay: Duration(time.Minute),
	}
	c.Backfill = Backfill{StopAfterRepeatPages: 20, MaxPages: 100_000}
	c.Parse = Parse{MaxInputBytes: 64 << 20}
	c.Nightly = Nightly{StopAfterKnownPages: 1, MaxPages: 50, AuditPages: 1}
	c.Quality = Quality{MinPapersPerPage: 5, MinTitleShare: 0.9, MinDOIShare: 0.5, MinAuthorsShare: 0.8, MinPublishedShare: 0.8, Hold: quality.HoldImplausible}
	c.StateDir = "crawl-state"
	c.ShutdownTimeout = Duration(30 * time.Second)
}

// Prepare makes a configuration ready for use: Validate, then Normalize.
// Load does it; a command does it again after its flags changed values.
func (c *Config) Prepare() error {
	if err := c.Validate(); err != nil {
		return err
	}
	c.Normalize()
	return nil
}

// Normalize puts a valid configuration in the form the rest of the program
// uses: the user info of site.base_url is taken out of it (sent as Basic
// auth by the fetcher, shown nowhere: BaseURLWithAuth), and the URL scheme
// is compiled (Scheme). It changes nothing else.
func (c *Config) Normalize() {
	if u, err := url.Parse(c.Site.BaseURL); err == nil && u.User != nil {
		c.Site.auth, u.User = u.User, nil
		c.Site.BaseURL = strings.TrimRight(u.String(), "/")
		c.Site.authOf = c.Site.BaseURL
	}
	if scheme, err := site.New(c.Site.FirstPage, c.Site.PageN); err == nil {
		c.Site.scheme = scheme
	}
}

// validHost: a host name or IP, or host:port with a port from 1 to 65535.
func validHost(h string) bool {
	host := h
	if hh, port, err := net.SplitHostPort(h); err == nil {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return false
		}
		host = hh
	}
	host = strings.Trim(host, "[]")
	if net.ParseIP(host) != nil {
		return true
	}
	return host != "" && !strings.ContainsFunc(host, func(r rune) bool {
		return !(r == '-' || r == '.' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	})
}

// maxConfigBytes bounds config.yaml: a configuration is a few KB.
const maxConfigBytes = 1 << 20

// Load reads path. A missing file is an error unless optional is true (the
// default path may be absent: defaults apply). Unknown keys are errors, so a
// typo never silently falls back to a default.
//
// urls checks the sink URLs (the file's and the journals'): the drivers
// the program links (sink.Registered); the configuration keeps it for the
// checks after the flags changed values (Prepare).
func Load(path string, optional bool, urls SinkURLs) (*Config, error) {
	data, err := readSmall(path, maxConfigBytes)
	if errors.Is(err, os.ErrNotExist) && optional {
		return Default().CheckSinksBy(urls), nil
	}
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if err := checkKeys(&doc); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	c := Default().CheckSinksBy(urls)
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	// One document only: a second one (after "---") would otherwise be
	// ignored, unknown keys and all.
	for {
		var extra yaml.Node
		err := dec.Decode(&extra)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("config %s: after the first document: %w", path, err)
		}
		if len(extra.Content) == 1 && extra.Content[0].Tag == "!!null" {
			continue // an empty document ("---" at the end)
		}
		line := extra.Line
		if len(extra.Content) > 0 {
			line = extra.Content[0].Line
		}
		return nil, fmt.Errorf("config %s: line %d: a second YAML document (after ---): expected one document; merge it into the first", path, line)
	}
	if err := c.Prepare(); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// readSmall reads a regular file of at most max bytes.
func readSmall(path string, max int64) ([]byte, error) {
	if info, err := os.Stat(path); err != nil {
		return nil, err
	} else if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path) // a FIFO would block the open
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(data)) > max {
		return nil, fmt.Errorf("%s: larger than %d bytes: not a configuration file", path, max)
	}
	return data, err
}
