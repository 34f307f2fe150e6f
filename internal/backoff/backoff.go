// Package backoff is the one retry policy of the project: exponential
// backoff with full jitter, a sleep that ends early when its context does,
// the one way to say an error is worth another try (ErrRetryable,
// Permanent), and the one retry loop (Retry.Do). The crawler's page
// retries, the sinks' write and open retries, the fleet's requests, its
// pacer and the worker's job retries all go through it.
package backoff

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Policy bounds exponential backoff with full jitter: the wait before retry
// n (0-based) is drawn uniformly from [0, min(Max, Base·2^n)).
type Policy struct {
	Base, Max time.Duration
}

// Ceiling is the upper bound of the wait before retry n (0-based).
func (p Policy) Ceiling(n int) time.Duration {
	ceiling := p.Max
	if n >= 0 && n < 30 {
		if d := p.Base << n; d > 0 && d < ceiling {
			ceiling = d
		}
	}
	return max(ceiling, 0)
}

// Delay is the wait before retry n (0-based), drawn with full jitter.
func (p Policy) Delay(n int) time.Duration {
	c := p.Ceiling(n)
	if c <= 0 {
		return 0
	}
	return rand.N(c)
}

// Sleep waits d, or until ctx ends, whichever comes first; it returns ctx's
// error when ctx ended. A d of zero or less returns at once (with ctx's
// error, if any).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Until waits until the time at, or until ctx ends.
func Until(ctx context.Context, at time.Time) error { return Sleep(ctx, time.Until(at)) }

// ErrRetryable marks an error worth another try: errors.Is(err,
// ErrRetryable) tells, Retryable marks one. An error that says it is
// permanent (a Permanent() bool method anywhere in its chain, as Permanent
// makes) is never retried, whatever else it wraps. The one way the
// crawler's fetches, the sinks and the fleet say which failure passes.
var ErrRetryable = errors.New("retryable")

// Retryable marks err as worth another try (nil stays nil).
func Retryable(err error) error {
	if err == nil || errors.Is(err, ErrRetryable) {
		return err
	}
	return retryable{err}
}

type retryable struct{ err error }

func (e retryable) Error() string   { return e.err.Error() }
func (e retryable) Unwrap() []error { return []error{e.err, ErrRetryable} }

// Permanent marks err as not worth another try (nil stays nil).
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

type permanent struct{ err error }

func (e permanent) Error() string   { return e.err.Error() }
func (e permanent) Unwrap() error   { return e.err }
func (e permanent) Permanent() bool { return true }

// IsPermanent says whether anything in err's chain says it is permanent.
func IsPermanent(err error) bool {
	var p interface{ Permanent() bool }
	return errors.As(err, &p) && p.Permanent()
}

// IsRetryable says whether err is worth another try: marked retryable, and
// nothing in its chain permanent.
func IsRetryable(err error) bool { return errors.Is(err, ErrRetryable) && !IsPermanent(err) }

// Retry is the one retry loop: a bounded number of tries, spaced by the
// policy's backoff (or by a wait the failure asks for), each wait
// cancellable.
type Retry struct {
	Policy
	// Attempts bounds the tries (0: until ctx ends).
	Attempts int
	// MaxElapsed, when set, bounds the time spent: no wait for another try
	// begins later than this after the first try.
	MaxElapsed time.Duration
	// Retryable says whether a failure is worth another try (nil:
	// IsRetryable).
	Retryable func(error) bool
	// Wait, when set, is the wait after try attempt (1-based) failed with
	// err (a server's Retry-After); else the policy's backoff.
	Wait func(attempt int, err error) time.Duration
}

// Exhausted is the error of a Do whose bound ran out: the last failure,
// with the tries made and the time they took. Its text is the last
// failure's.
type Exhausted struct {
	Tries   int
	Elapsed time.Duration
	Err     error
}

func (e *Exhausted) Error() string { return e.Err.Error() }
func (e *Exhausted) Unwrap() error { return e.Err }

// Do calls try until it succeeds, fails with an error that is not worth
// another try, ctx ends, or the bound runs out (an *Exhausted). Before each
// wait, retrying (when set) is told of the failed try, its error and the
// wait; an error it returns ends Do with that error. A wait cut by ctx
// returns ctx's error with the last failure.
func (r Retry) Do(ctx context.Context, try func(ctx context.Context, attempt int) error, retrying func(attempt int, err error, wait time.Duration) error) error {
	again := r.Retryable
	if again == nil {
		again = IsRetryable
	}
	start := time.Now()
	for attempt := 1; ; attempt++ {
		err := try(ctx, attempt)
		if err == nil || !again(err) || ctx.Err() != nil {
			return err
		}
		if r.Attempts > 0 && attempt >= r.Attempts || r.MaxElapsed > 0 && time.Since(start) >= r.MaxElapsed {
			return &Exhausted{Tries: attempt, Elapsed: time.Since(start), Err: err}
		}
		wait := r.Delay(attempt - 1)
		if r.Wait != nil {
			wait = r.Wait(attempt, err)
		}
		if retrying != nil {
			if rerr := retrying(attempt, err, wait); rerr != nil {
				return rerr
			}
		}
		if werr := Sleep(ctx, wait); werr != nil {
			return fmt.Errorf("%w (after %d tries, last error: %v)", werr, attempt, err)
		}
	}
}
