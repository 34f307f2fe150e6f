package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/litcrawl/litcrawl/crawler"
	"github.com/litcrawl/litcrawl/internal/archive"
	"github.com/litcrawl/litcrawl/internal/config"
	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/internal/redact"
	"github.com/litcrawl/litcrawl/sink"
)

// FetcherConfig is the fetcher the configuration describes.
func FetcherConfig(cfg *config.Config) crawler.Config {
	f := cfg.Fetch
	return crawler.Config{
		BaseURL: cfg.Site.BaseURLWithAuth(), Scheme: cfg.Site.Scheme(), AllowedHosts: cfg.Site.AllowedHosts,
		Concurrency: f.Concurrency, Delay: f.Delay.D(), Jitter: f.Jitter.D(), Timeout: f.Timeout.D(),
		MaxBodyBytes: f.MaxBodyBytes,
		Retry: crawler.RetryPolicy{MaxAttempts: f.Attempts, BackoffBase: f.BackoffBase.D(),
			BackoffMax: f.BackoffMax.D(), MaxRetryAfter: f.MaxRetryAfter.D()},
		BreakerThreshold: f.BreakerThreshold, BreakerCooldown: f.BreakerCooldown.D(), BreakerMaxOpens: f.BreakerMaxOpens,
		MaxCrawlDelay: f.MaxCrawlDelay.D(),
		SlowdownMax:   f.BackoffMax.D(), UserAgent: f.UserAgent, Robots: f.Robots,
		JournalDelays: journalDelays(cfg),
	}
}

// journalDelays are the journals' own fetch.delay longer than the host's.
func journalDelays(cfg *config.Config) map[int64]time.Duration {
	var out map[int64]time.Duration
	for j, d := range cfg.JournalDelays() {
		if out == nil {
			out = map[int64]time.Duration{}
		}
		out[j] = d.D()
	}
	return out
}

// Transport says where fetches go: to the site (live), to the site while
// every exchange is recorded as WARC files (Archive), or nowhere, answered
// from an archive (Offline).
type Transport struct {
	Archive string // record every fetch as WARC files in this directory
	Offline string // answer every fetch from the WARC files of this directory
}

// open makes the transport's http.RoundTripper (nil: live) and a function
// that closes it (once; later calls return nil).
func (t Transport) open(runID string, maxBody int64) (http.RoundTripper, func() error, error) {
	rt, closeRT, err := t.open1(runID, maxBody)
	if err != nil {
		return nil, nil, err
	}
	var once sync.Once
	return rt, func() (err error) {
		once.Do(func() { err = closeRT() })
		return err
	}, nil
}

func (t Transport) open1(runID string, maxBody int64) (http.RoundTripper, func() error, error) {
	switch {
	case t.Archive != "" && t.Offline != "":
		return nil, nil, exitcode.Usagef("--archive and --offline: give one (an offline run fetches nothing to record)")
	case t.Offline != "":
		a, err := archive.Load(t.Offline)
		if err != nil {
			return nil, nil, fmt.Errorf("--offline: %w", err)
		}
		return a, func() error { return nil }, nil
	case t.Archive != "":
		rec, err := archive.NewRecorder(nil, archive.RecorderOptions{Dir: t.Archive, RunID: runID, MaxBody: maxBody})
		if err != nil {
			return nil, nil, fmt.Errorf("--archive: %w", err)
		}
		return rec, rec.Close, nil
	}
	return nil, func() error { return nil }, nil
}

// SinkOptions say how OpenSinks opens the sinks.
type SinkOptions struct {
	// Writer names the crawl state the sinks' tokens are committed with
	// ("" when none is: a fleet worker).
	Writer string
	Stdout io.Writer
	Log    *slog.Logger
	// Metrics observe every sink write; nil: none.
	Metrics *Metrics
	// OnRetry, when set, is called for each failed try retried.
	OnRetry func()
	// Quarantine, when set, keeps the records a sink refuses for their
	// content (sink.Quarantined), and OnQuarantine counts them; nil: a
	// refusal fails the write.
	Quarantine   sink.Quarantine
	OnQuarantine func(n int)
	// PerJournal are the journals whose records go to sinks of their own
	// instead of urls (a configuration's journals[].sinks); Journals,
	// when set, are the only journals the records come from, so that only
	// the sinks they need are opened.
	PerJournal map[int64][]string
	Journals   []int64
}

// OpenSinks opens each sink URL, each retried with the default policy
// (every retry logged), observed by the metrics and, with a quarantine,
// quarantining what it refuses; fanned out behind one sink; standard
// output when there are none. A malformed URL is a usage error
// (exitcode.UsageError: exit 2).
func OpenSinks(ctx context.Context, urls []string, o SinkOptions) (sink.Sink, error) {
	log, m := o.Log, o.Metrics
	opts := sink.Options{Stdout: o.Stdout, Logger: log, Writer: o.Writer}
	retry := sink.DefaultRetry
	retry.Log, retry.OnRetry = log, o.OnRetry
	if len(urls) == 0 {
		urls = []string{sink.Stdout}
	}
	all, others, byJournal := routes(urls, o.PerJournal, o.Journals)
	var sinks []sink.Sink
	for _, u := range all {
		s, err := openRetrying(ctx, u, opts, retry)
		if err != nil {
			for _, o := range sinks {
				o.Close()
			}
			var ue *sink.URLError
			if errors.As(err, &ue) {
				return nil, exitcode.UsageError(fmt.Errorf("sink: %w", err))
			}
			return nil, fmt.Errorf("sink: %w", err)
		}
		s = sink.Retry(m.observe(s), retry)
		if o.Quarantine != nil {
			s = sink.Quarantined(s, o.Quarantine, o.OnQuarantine)
		}
		sinks = append(sinks, s)
	}
	if byJournal == nil {
		return sink.NewMulti(sinks...), nil
	}
	return sink.NewRouted(sinks, others, byJournal), nil
}

// routes are the sinks to open (each URL once), those of the records of
// journals without sinks of their own (by index into all; none when no
// journal of the run needs them), and each journal's own (nil when no
// journal has any).
func routes(urls []string, perJournal map[int64][]string, journals []int64) (all []string, others []int, byJournal map[int64][]int) {
	if len(perJournal) == 0 {
		return urls, nil, nil
	}
	// One sink per destination, however its URL is spelled
	// (jsonl:out/p.jsonl and jsonl:./out/p.jsonl are one file): two sinks
	// on one file would each write at their own offset.
	var same []string
	index := func(u string) int {
		k := sink.Same(u)
		if i := slices.Index(same, k); i >= 0 {
			return i
		}
		all, same = append(all, u), append(same, k)
		return len(all) - 1
	}
	add := func(to []int, u string) []int {
		if i := index(u); !slices.Contains(to, i) {
			to = append(to, i)
		}
		return to
	}
	needOthers := journals == nil
	for _, j := range journals {
		if _, own := perJournal[j]; !own {
			needOthers = true
		}
	}
	if needOthers {
		for _, u := range urls {
			others = add(others, u)
		}
	}
	byJournal = map[int64][]int{}
	for _, j := range slices.Sorted(maps.Keys(perJournal)) {
		if journals != nil && !slices.Contains(journals, j) {
			continue
		}
		for _, u := range perJournal[j] {
			byJournal[j] = add(byJournal[j], u)
		}
	}
	return all, others, byJournal
}

// SinkStartWait bounds how long a run waits for a sink that does not answer
// when it starts (a wrong port, a host that is down); a sink that goes away
// mid-run is ridden through for sink.DefaultRetry's 2 minutes.
const SinkStartWait = 15 * time.Second

// openRetrying opens a sink, trying again under the retry policy while the
// error is retryable (a database or broker restarting when the crawl
// starts), each try logged.
func openRetrying(ctx context.Context, u string, opts sink.Options, p sink.RetryPolicy) (s sink.Sink, err error) {
	// A sink that has never answered in this run is not waited for as a
	// restart mid-run is: the start fails within SinkStartWait, naming it.
	start := time.Now()
	p.MaxElapsed = SinkStartWait - 2*time.Second // no try begins later than this
	octx, cancel := context.WithTimeout(ctx, SinkStartWait-500*time.Millisecond)
	defer cancel()
	var last error
	err = p.Do(octx, func() (err error) {
		s, err = sink.Open(octx, u, opts)
		last = err
		return err
	}, func(tries int, err error, _ time.Duration) {
		if p.Log != nil {
			p.Log.Warn("sink not reachable; retrying", "try", tries, "giving_up_after", SinkStartWait.String(), "sink", redact.URL(u), "error", err)
		}
	})
	if err != nil && ctx.Err() == nil && last != nil && time.Since(start) >= p.MaxElapsed { // retried until the bound
		return nil, fmt.Errorf("not answering %v after the start (is it running, and is the URL right?): %w",
			time.Since(start).Round(100*time.Millisecond), last)
	}
	return s, err
}

// restore rolls the sinks back to the token the ledger stored with its
// last commit, so that records written after it (a crash between a write
// and its commit) are not there twice. A sink found behind the token
// (sink.ErrBehind: it lost output the ledger counts as delivered) stops
// the run, unless the run delivers its pages again anyway (redeliverAll:
// --no-resume --redeliver), which puts back what is missing.
//
// Then the sinks' positions are committed as they stand, before the run
// writes anything, when the state holds other ones: a sink the state has
// no position of (a first run, a sink added since, a file moved) would
// otherwise keep what a run killed before its first commit wrote, and the
// rerun would write it again.
func restore(ctx context.Context, l ledger.Ledger, out sink.Sink, redeliverAll bool, log *slog.Logger) error {
	r, ok := out.(sink.Restorer)
	ts, ok2 := l.(ledger.TokenStore)
	if !ok || !ok2 {
		return nil
	}
	tok, err := ts.SinkToken(ctx)
	if err != nil {
		return err
	}
	if tok != nil {
		if m, ok := out.(*sink.Multi); ok {
			m.KeepTokens(tok) // the positions of sinks this run does not open stay
		}
		err = r.Restore(ctx, tok)
		if err != nil && redeliverAll && onlyBehind(err) {
			log.Warn("a sink is behind the crawl state: this run delivers its pages again (--no-resume --redeliver), which puts back what it lacks of them", "error", err)
			err = nil
		}
		if err != nil {
			return fmt.Errorf("restore the sinks to the last commit: %w", err)
		}
	}
	c, ok := out.(sink.Committer)
	if !ok {
		return nil
	}
	now, err := c.Token()
	if err != nil {
		return fmt.Errorf("sink token: %w", err)
	}
	if bytes.Equal(now, tok) {
		return nil
	}
	if _, err := l.Commit(ctx, ledger.Group{SinkToken: now}); err != nil {
		return fmt.Errorf("commit the sinks' positions before the run: %w", err)
	}
	return nil
}

// onlyBehind: every error joined in err is sink.ErrBehind.
func onlyBehind(err error) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !onlyBehind(e) {
				return false
			}
		}
		return true
	}
	return errors.Is(err, sink.ErrBehind)
}
