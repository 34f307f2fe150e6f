package sink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/litcrawl/litcrawl/internal/backoff"
	"github.com/litcrawl/litcrawl/record"
)

// RetryPolicy bounds how a failed Write is retried.
type RetryPolicy struct {
	// Attempts is the number of tries at most (1 = no retry).
	Attempts int
	// MaxElapsed, when set, is how long a Write keeps trying: no wait for
	// another try begins later than this after the first try (the last
	// wait may end past it). With it, Attempts is a cap that a long outage
	// should not reach.
	MaxElapsed time.Duration
	// Base and Max bound the exponential backoff; each wait is drawn
	// uniformly from [0, min(Max, Base·2^n)) ("full jitter").
	Base, Max time.Duration
	// Log, when set, is told of every failed try that will be retried, so
	// a sink that is away is seen while the crawl waits for it.
	Log *slog.Logger
	// OnRetry, when set, is called for every failed try that will be
	// retried (a run's summary counts them).
	OnRetry func()
}

// DefaultRetry is what the CLI uses: tries for 2 minutes (a broker or a
// database restarting, a failover), waits growing from up to 0.5 s to up
// to 15 s.
var DefaultRetry = RetryPolicy{Attempts: 40, MaxElapsed: 2 * time.Minute, Base: 500 * time.Millisecond, Max: 15 * time.Second}

// Do calls try until it succeeds, fails with an error that is not
// ErrRetryable, ctx ends, or the policy's bound is reached, waiting with
// backoff between tries. Before each wait, OnRetry and retrying (when set)
// are told of the failed try: its number and error. Each wait is
// cancellable. One loop for every retried sink operation: writes (Retry)
// and opening (the CLI).
func (p RetryPolicy) Do(ctx context.Context, try func() error, retrying func(tries int, err error, wait time.Duration)) error {
	r := backoff.Retry{Policy: backoff.Policy{Base: p.Base, Max: p.Max}, Attempts: max(p.Attempts, 1), MaxElapsed: p.MaxElapsed}
	err := r.Do(ctx, func(context.Context, int) error { return try() }, func(tries int, err error, wait time.Duration) error {
		if p.OnRetry != nil {
			p.OnRetry()
		}
		if retrying != nil {
			retrying(tries, err, wait)
		}
		return nil
	})
	var ex *backoff.Exhausted
	switch {
	case !errors.As(err, &ex):
		return err
	case p.MaxElapsed > 0 && ex.Tries < max(p.Attempts, 1):
		return fmt.Errorf("gave up after %d tries in %v: %w", ex.Tries, ex.Elapsed.Round(time.Second), ex.Err)
	}
	return fmt.Errorf("gave up after %d tries: %w", ex.Tries, ex.Err)
}

// Retry wraps a sink so that Writes failing with an ErrRetryable error are
// tried again under the policy (Do), each retry logged to p.Log. The
// wrapped sink's optional abilities are kept.
func Retry(s Sink, p RetryPolicy) Sink {
	bound := []any{"of", max(p.Attempts, 1)}
	if p.MaxElapsed > 0 {
		bound = []any{"giving_up_after", p.MaxElapsed.String()}
	}
	return wrap(s, func(ctx context.Context, recs []record.Record) error {
		return p.Do(ctx, func() error { return s.Write(ctx, recs) }, func(tries int, err error, wait time.Duration) {
			if p.Log != nil {
				// What the run waits for, and until when: a run that seems
				// stalled on a sink says so.
				until := time.Now().Add(wait)
				p.Log.Warn(fmt.Sprintf("sink write failed; waiting %v for %s, until %s, before trying again", wait.Round(100*time.Millisecond), Describe(s), until.Format(time.TimeOnly)),
					append(append([]any{"sink", Describe(s), "try", tries}, bound...), "records", len(recs), "wait_seconds", wait.Seconds(),
						"until", until.UTC().Format(time.RFC3339), "error", err)...)
			}
		})
	})
}
