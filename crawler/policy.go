package crawler

import (
	"context"
	"errors"
	"fmt"
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
	// MaxRetryAfter is the longest Retry-After a server may ask for: a
	// page whose server asks for more fails at once (the next run tries it
	// again), so a hostile or broken server cannot park the crawl for a
	// day, nor cost (attempts − 1) × a long wait a page.
	MaxRetryAfter time.Duration
}

// ErrRetryAfterTooLong: the server asked to wait longer than the policy's
// MaxRetryAfter. Permanent for this run.
var ErrRetryAfterTooLong = errors.New("the server's Retry-After is beyond fetch.max_retry_after")

// tooLongError is a retryable fetch error whose server asked for too long
// a wait: it is no longer worth retrying in this run.
type tooLongError struct {
	err       error
	asked, at time.Duration
}

func (e *tooLongError) Error() string {
	return fmt.Sprintf("%v (Retry-After %v is beyond fetch.max_retry_after %v: left for the next run)", e.err, e.asked, e.at)
}
func (e *tooLongError) Unwrap() []error { return []error{e.err, ErrRetryAfterTooLong} }

// Permanent marks it as not worth retrying (see FetchError.Retryable).
func (e *tooLongError) Permanent() bool { return true }

// Delay is the wait after failed try number attempt (1-based). A
// Retry-After from the server (or a cooling circuit's wait) wins over the
// backoff, capped at MaxRetryAfter.
func (p RetryPolicy) Delay(attempt int, err error) time.Duration {
	var fe *FetchError
	if errors.As(err, &fe) && fe.RetryAfter > 0 {
		return min(fe.RetryAfter, p.MaxRetryAfter)
	}
	return backoff.Policy{Base: p.BackoffBase, Max: p.BackoffMax}.Delay(attempt - 1)
}

// Retry runs try until it succeeds, fails permanently (IsRetryable is
// false), the policy's attempts run out, or ctx ends (backoff.Retry.Do).
// A Retry-After beyond MaxRetryAfter ends it at once. It returns the last
// error.
func (p RetryPolicy) Retry(ctx context.Context, try func(ctx context.Context, attempt int) error) error {
	return p.RetryWaiting(ctx, try, nil)
}

// RetryWaiting is Retry, and tells waiting (when set) of each wait before
// another try: the error that caused it and how long it is.
func (p RetryPolicy) RetryWaiting(ctx context.Context, try func(ctx context.Context, attempt int) error, waiting func(err error, wait time.Duration)) error {
	r := backoff.Retry{Attempts: max(p.MaxAttempts, 1), Wait: p.Delay}
	var retrying func(int, error, time.Duration) error
	if waiting != nil {
		retrying = func(_ int, err error, wait time.Duration) error { waiting(err, wait); return nil }
	}
	err := r.Do(ctx, func(ctx context.Context, attempt int) error {
		err := try(ctx, attempt)
		var fe *FetchError
		if backoff.IsRetryable(err) && errors.As(err, &fe) && fe.Status != 0 && fe.RetryAfter > p.MaxRetryAfter {
			return &tooLongError{err: err, asked: fe.RetryAfter, at: p.MaxRetryAfter}
		}
		return err
	}, retrying)
	var ex *backoff.Exhausted
	if errors.As(err, &ex) {
		return ex.Err
	}
	return err
}
