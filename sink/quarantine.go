package sink

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/litcrawl/litcrawl/internal/redact"
	"github.com/litcrawl/litcrawl/record"
)

// ErrRefused marks a Write error that is the content of a record: the sink
// is up and would take other records, but not this one (PostgreSQL refusing
// a NUL or bad bytes, a message over the broker's size limit, a line over
// the JSONL sink's). errors.Is(err, ErrRefused) tells; it is never
// retryable. A connection, privilege or table-shape failure is no refusal:
// it stops the run, as every record would fail the same way.
var ErrRefused = errors.New("refused for its content")

// Refused marks err as a refusal (ErrRefused); nil stays nil. A refusal is
// never retryable, whatever err wraps.
func Refused(err error) error {
	if err == nil {
		return nil
	}
	return refusedError{err.Error()}
}

type refusedError struct{ msg string }

func (e refusedError) Error() string { return e.msg }
func (e refusedError) Unwrap() error { return ErrRefused }

// Refusal is a record a sink refused for its content, as the quarantine
// keeps it.
type Refusal struct {
	At     time.Time `json:"at"`
	Sink   string    `json:"sink"`   // the sink's name (Describe: redacted)
	Reason string    `json:"reason"` // the sink's error
	Tries  int       `json:"tries"`  // deliveries refused so far
	// Pending is set while crawl quarantine retry delivers the record: the
	// digest of the crawl state's sink token before it did. A later run
	// finds whether that delivery was committed (the token changed since).
	Pending string        `json:"pending,omitempty"`
	Record  record.Record `json:"record"`
	// Page, for a record held back for what the parser found in it (Sink
	// HeldBy), is the page it was read from, to be parsed again.
	Page *HeldPage `json:"page,omitempty"`
}

// HeldBy is the Sink of a refusal that no sink made: a record the quality
// gate held back (quality.hold), for a field that does not look like what
// it is. It was delivered nowhere; crawl quarantine retry --reparse parses
// its page again and delivers it to every sink once it reads right.
const HeldBy = "quality.hold"

// HeldPage is the page a held record was read from: where, when, and its
// bytes, gzip-compressed (Gzip is nil when they compress to more than
// MaxHeldPageBytes: the record is held without them).
type HeldPage struct {
	URL         string `json:"url,omitempty"`
	Capture     string `json:"capture,omitempty"`
	Journal     int64  `json:"journal,omitempty"`
	Page        int    `json:"page,omitempty"`
	ContentType string `json:"content_type,omitempty"`
	FetchedAt   string `json:"fetched_at,omitempty"`
	Gzip        []byte `json:"gzip,omitempty"`
}

// MaxHeldPageBytes bounds a held page's compressed bytes (a listing page
// of 20 papers is about 15 KB compressed).
const MaxHeldPageBytes = 2 << 20

// maxReason bounds the reason a refusal keeps.
const maxReason = 1000

// Quarantine keeps the records sinks refuse, so that one hostile record
// never blocks a sink: Put returns nil only once the refusals are durable.
type Quarantine interface {
	Put(ctx context.Context, rs []Refusal) error
}

// Quarantined wraps s so that a Write it refuses for a record's content
// (ErrRefused) is split, half by half, until each refused record is alone:
// those go to q, the others are delivered (in order), and the Write
// succeeds. onRefused, when set, is told how many were quarantined. Any
// other error is returned as it is. The wrapped sink's abilities are kept.
// The one place a refusal is handled: every driver gets it by returning
// ErrRefused.
func Quarantined(s Sink, q Quarantine, onRefused func(n int)) Sink {
	return wrap(s, func(ctx context.Context, recs []record.Record) error {
		var refused []Refusal
		if err := isolate(ctx, s, recs, &refused); err != nil {
			return err
		}
		if len(refused) == 0 {
			return nil
		}
		if err := q.Put(ctx, refused); err != nil {
			return fmt.Errorf("%s refused %d records, and the quarantine could not keep them: %w", Describe(s), len(refused), err)
		}
		if onRefused != nil {
			onRefused(len(refused))
		}
		return nil
	})
}

// isolate writes recs to s, and when s refuses them, each half again,
// down to single records, which it adds to out.
func isolate(ctx context.Context, s Sink, recs []record.Record, out *[]Refusal) error {
	err := s.Write(ctx, recs)
	if err == nil || !errors.Is(err, ErrRefused) || ctx.Err() != nil {
		return err
	}
	if len(recs) == 1 {
		reason := record.StripControl(redact.Error(err))
		if len(reason) > maxReason {
			reason = reason[:maxReason] + "…"
		}
		*out = append(*out, Refusal{At: time.Now().UTC(), Sink: Describe(s), Reason: reason, Tries: 1, Record: recs[0]})
		return nil
	}
	mid := len(recs) / 2
	if err := isolate(ctx, s, recs[:mid], out); err != nil {
		return err
	}
	return isolate(ctx, s, recs[mid:], out)
}
