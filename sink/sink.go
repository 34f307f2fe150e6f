package sink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"time"

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

var (
	// ErrClosed is returned by Write after Close.
	ErrClosed = errors.New("sink: closed")
	// ErrRetryable marks errors worth retrying (a broker that is away, a
	// timeout); errors.Is(err, ErrRetryable) tells.
	ErrRetryable = errors.New("retryable")
)

// retryable wraps err so that errors.Is(err, ErrRetryable) holds.
func retryable(err error) error {
	if err == nil || errors.Is(err, ErrRetryable) {
		return err
	}
	return retryableError{err}
}

type retryableError struct{ err error }

func (e retryableError) Error() string { return e.err.Error() }
func (e retryableError) Unwrap() []error {
	return []error{e.err, ErrRetryable}
}

// Options configure the sinks that Open makes.
type Options struct {
	// Logger receives the sinks' logs; nil discards them.
	Logger *slog.Logger
	// Now is the clock (UTC dates in JSONL paths); nil is time.Now.
	Now func() time.Time
	// Stdout is where "-" writes; nil is os.Stdout.
	Stdout io.Writer
}

func (o Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

func (o Options) now() time.Time {
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

// Open makes the sink a URL names:
//
//	jsonl:PATH           append JSON lines to PATH ({date} becomes the UTC date)
//	-, jsonl:-           JSON lines on standard output
//	nats://HOST:PORT/SUBJECT?stream=NAME&…   NATS JetStream (tls:// for TLS)
//	kafka://HOST:PORT[,HOST:PORT]/TOPIC?…    Kafka
//
// A bad URL fails here, naming the URL (redacted) and what is expected.
func Open(ctx context.Context, rawURL string, opts Options) (Sink, error) {
	if err := CheckURL(rawURL); err != nil {
		return nil, err
	}
	switch {
	case rawURL == "-" || rawURL == "jsonl:-":
		return newStdout(opts), nil
	case strings.HasPrefix(rawURL, "jsonl:"):
		return openJSONL(strings.TrimPrefix(rawURL, "jsonl:"), opts)
	case strings.HasPrefix(rawURL, "nats://") || strings.HasPrefix(rawURL, "tls://"):
		return openNATS(ctx, rawURL, opts)
	case strings.HasPrefix(rawURL, "kafka://"):
		return openKafka(ctx, rawURL, opts)
	}
	panic("unreachable: CheckURL accepted " + Redact(rawURL))
}

// CheckURL checks a sink URL's form without opening anything (no file is
// created, no broker is contacted), so configuration can be checked at start.
func CheckURL(rawURL string) error {
	var err error
	switch {
	case rawURL == "-" || rawURL == "jsonl:-":
	case strings.HasPrefix(rawURL, "jsonl:"):
		p := strings.TrimPrefix(rawURL, "jsonl:")
		switch {
		case p == "":
			err = &URLError{URL: rawURL, Reason: "expected a file path after jsonl:"}
		case strings.Count(p, datePlaceholder) > 1:
			err = &URLError{URL: rawURL, Reason: "{date} may appear once"}
		}
	case strings.HasPrefix(rawURL, "nats://") || strings.HasPrefix(rawURL, "tls://"):
		_, err = parseNATSURL(rawURL)
	case strings.HasPrefix(rawURL, "kafka://"):
		_, err = parseKafkaURL(rawURL)
	default:
		err = &URLError{URL: Redact(rawURL), Reason: "expected jsonl:PATH, - (stdout), nats://HOST:PORT/SUBJECT?stream=NAME or kafka://HOST:PORT/TOPIC"}
	}
	return err
}

// Redact hides the password (or token) in a URL's userinfo, for logs and
// errors. Strings that are not URLs with userinfo come back unchanged.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		if i := strings.Index(raw, "@"); i >= 0 && strings.Contains(raw[:i], "://") {
			// Unparseable but holding userinfo: drop it whole.
			return raw[:strings.Index(raw, "://")+3] + "REDACTED@" + raw[i+1:]
		}
		return raw
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "REDACTED")
	} else {
		u.User = url.User("REDACTED")
	}
	return u.String()
}
