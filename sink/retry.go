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

// Retry wraps a sink so that Writes failing with an ErrRetryable error are
// tried again with backoff, up to the policy's bound; other errors, and
// ctx's end, return at once. Each wait is cancellable. The wrapped sink's
// optional abilities are kept.
func Retry(s Sink, p RetryPolicy) Sink {
	attempts := max(p.Attempts, 1)
	wait := backoff.Policy{Base: p.Base, Max: p.Max}
	return wrap(s, func(ctx context.Context, recs []record.Record) error {
		var err error
		start := time.Now()
		for attempt := range attempts {
			if attempt > 0 {
				if p.MaxElapsed > 0 && time.Since(start) >= p.MaxElapsed {
					return fmt.Errorf("gave up after %d tries in %v: %w", attempt, time.Since(start).Round(time.Second), err)
				}
				if werr := backoff.Sleep(ctx, wait.Delay(attempt-1)); werr != nil {
					return fmt.Errorf("%w (after %d tries, last error: %v)", werr, attempt, err)
				}
			}
			err = s.Write(ctx, recs)
			if err == nil || !errors.Is(err, ErrRetryable) || ctx.Err() != nil {
				return err
			}
			if p.OnRetry != nil && attempt+1 < attempts {
				p.OnRetry()
			}
			if p.Log != nil && attempt+1 < attempts {
				bound := []any{"of", attempts}
				if p.MaxElapsed > 0 {
					bound = []any{"giving_up_after", p.MaxElapsed.String()}
				}
				p.Log.Warn("sink write failed; retrying", append([]any{"sink", Describe(s), "try", attempt + 1}, append(bound, "records", len(recs), "error", err)...)...)
			}
		}
		return fmt.Errorf("gave up after %d tries: %w", attempts, err)
	})
}
