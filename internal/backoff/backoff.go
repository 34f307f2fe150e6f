// Package backoff is the one retry wait of the project: exponential backoff
// with full jitter, and a sleep that ends early when its context does. The
// crawler's page retries, the sinks' write retries, the fleet pacer and the
// worker's job retries all wait through it.
package backoff

import (
	"context"
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
