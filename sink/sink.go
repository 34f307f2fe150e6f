package sink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/litcrawl/litcrawl/internal/redact"
	"github.com/litcrawl/litcrawl/internal/textsafe"
	"github.com/litcrawl/litcrawl/record"
)

// Sink delivers batches of records (typically one listing page's records).
//
// Write blocks until every record of the batch is durable, and returns nil
// only then: for JSONL the bytes are written and fsynced; for NATS every
// publish acknowledgement arrived; for Kafka every produce was acknowledged
// by all in-sync replicas. A non-nil error means the batch may have been
// delivered in part: the caller must not record it as done, and sending it
// again is safe (JSONL rolls back to its last commit token, queues dedupe on
// the record id or carry it as the message key). Errors that are worth
// retrying wrap ErrRetryable. Write returns promptly with ctx's error when
// ctx is done.
//
// Implementations are safe for concurrent use. Close flushes and releases
// everything; it is idempotent, and Write after Close returns ErrClosed.
type Sink interface {
	Write(ctx context.Context, recs []record.Record) error
	Close() error
}

// Committer is implemented by sinks whose output can be rolled back to a
// durable position. Token returns an opaque token naming the position just
// after the last successful Write. The crawler stores it in the same state
// transaction as the pages whose records were written, and hands it back to
// Restore when the sink is opened again, so a crash between a Write and the
// state commit never leaves records twice.
type Committer interface {
	Token() ([]byte, error)
}

// Restorer rolls a freshly opened sink back to a token from Committer.Token:
// output written after that token is discarded. It must be called before the
// first Write.
type Restorer interface {
	Restore(ctx context.Context, token []byte) error
}

// Describer names a sink for logs and summaries, with secrets redacted.
type Describer interface {
	Describe() string
}

// Unwrapper is implemented by wrappers (Retry, Observe): Unwrap returns
// the sink they wrap.
type Unwrapper interface {
	Unwrap() Sink
}

var (
	// ErrClosed is returned by Write after Close.
	ErrClosed = errors.New("sink: closed")
	// ErrBehind is returned (wrapped) by a Restore that finds the sink
	// short of the token: output the crawl state counts as delivered is
	// not in it (a table made anew, restored from an older backup). Only
	// a run that delivers its pages again may go on from there.
	ErrBehind = errors.New("the sink is behind the crawl state")
)

// Options configure the sinks that Open makes.
type Options struct {
	// Logger receives the sinks' logs; nil discards them.
	Logger *slog.Logger
	// Now is the clock (UTC dates in JSONL paths); nil is time.Now.
	Now func() time.Time
	// Stdout is where "-" writes; nil is os.Stdout.
	Stdout io.Writer
	// Writer names the crawl state whose commits carry the sinks' tokens,
	// the same across its runs: a sink that several crawls share (a
	// database table) keeps each one's position apart by it. Empty when
	// tokens are not kept (a fleet worker).
	Writer string
}

// Log is the options' logger, or one that discards.
func (o Options) Log() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

// Clock is the options' current time.
func (o Options) Clock() time.Time {
	if o.Now == nil {
		return time.Now()
	}
	return o.Now()
}

// URLError says which sink URL is wrong and what was expected.
type URLError struct {
	URL    string // redacted
	Reason string
}

func (e *URLError) Error() string {
	return fmt.Sprintf("sink %q: %s", e.URL, e.Reason)
}

// urlLike is a URL where a path goes: "//…", a scheme of two letters or
// more and a slash ("http:/…", "https://…"), or user information before
// the first slash ("user:pass@host:/x").
var urlLike = regexp.MustCompile(`^(//|[A-Za-z][A-Za-z0-9+.-]+:/|[^/@]*:[^/@]*@)`)

// CheckPath is the one check of the path of a sink that writes files
// (jsonl:PATH, atom:DIR: form is PATH or DIR, what names it, "file path"
// or "directory"): one is
// given, it is no URL (jsonl://…, atom:https://user:pass@host/…: the
// driver would make a directory named after it, password and all), and it
// holds no control characters. The message shows the sink redacted.
func CheckPath(scheme, p, form, what string) error {
	shown := redact.URL(scheme + ":" + p)
	if i := strings.LastIndex(p, "@"); i >= 0 {
		shown = scheme + ":REDACTED" + p[i:] // what comes before an @ may be a password, however it is spelled
	}
	bad := func(reason string) error { return &URLError{URL: shown, Reason: reason} }
	switch {
	case p == "":
		return bad(fmt.Sprintf("expected a %s after %s:", what, scheme))
	case urlLike.MatchString(p):
		return bad(fmt.Sprintf("expected %s:%s, a %s, not a URL", scheme, form, what))
	case strings.ContainsFunc(p, textsafe.Control):
		return bad(fmt.Sprintf("the %s has control characters", what))
	}
	return nil
}

// Describe names any sink for logs.
func Describe(s Sink) string {
	if d, ok := s.(Describer); ok {
		return d.Describe()
	}
	return fmt.Sprintf("%T", s)
}
