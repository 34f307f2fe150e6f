package crawler

import (
	"context"
	"errors"
	"time"

	"github.com/litcrawl/litcrawl/internal/backoff"
)

// RetryPolicy bounds the retries of one page.
type RetryPolicy struct {
	// MaxAttempts is the number of tries in all.
	MaxAttempts int
	// BackoffBase and BackoffMax bound exponential backoff with full jitter:
	// the wait before try n+1 is drawn from [0, min(BackoffMax, BackoffBase·2^(n-1))).
	BackoffBase, BackoffMax time.Duration
	// MaxRetryAfter caps a server's Retry-After (a hostile or broken server
	// must not park the crawl for a day).
	MaxRetryAfter time.Duration
}

// Delay is the wait after failed try number attempt (1-based). A
// Retry-After from the server wins over the backoff, capped.
func (p RetryPolicy) Delay(attempt int, err error) time.Duration {
	var fe *FetchError
	if errors.As(err, &fe) && fe.RetryAfter > 0 {
		return min(fe.RetryAfter, p.MaxRetryAfter)
	}
	return backoff.Policy{Base: p.BackoffBase, Max: p.BackoffMax}.Delay(attempt - 1)
}

// Retry runs try until it succeeds, fails permanently (IsRetryable is
// false), the policy's attempts run out, or ctx ends. Each wait is
// cancellable. It returns the last error.
func (p RetryPolicy) Retry(ctx context.Context, try func(ctx context.Context, attempt int) error) error {
	var err error
	for attempt := 1; attempt <= max(p.MaxAttempts, 1); attempt++ {
		if err = try(ctx, attempt); err == nil || !IsRetryable(err) {
			return err
		}
		if attempt == p.MaxAttempts {
			break
		}
		if werr := backoff.Sleep(ctx, p.Delay(attempt, err)); werr != nil {
			return werr
		}
	}
	return err
}
