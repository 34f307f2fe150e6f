package sink

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/litcrawl/litcrawl/record"
)

// RetryPolicy bounds how a failed Write is retried.
type RetryPolicy struct {
	// Attempts is the number of tries in all (1 = no retry).
	Attempts int
	// Base and Max bound the exponential backoff; each wait is drawn
	// uniformly from [0, min(Max, Base·2^n)) ("full jitter").
	Base, Max time.Duration
}

// DefaultRetry is what the CLI uses: 5 tries over roughly half a minute at
// most.
var DefaultRetry = RetryPolicy{Attempts: 5, Base: 500 * time.Millisecond, Max: 15 * time.Second}

// Retry wraps a sink so that Writes failing with an ErrRetryable error are
// tried again with backoff, up to the policy's bound; other errors, and
// ctx's end, return at once. Each wait is cancellable.
func Retry(s Sink, p RetryPolicy) Sink {
	if p.Attempts < 1 {
		p.Attempts = 1
	}
	r := &retrySink{Sink: s, p: p}
	if _, ok := s.(interface {
		Committer
		Restorer
	}); ok {
		return retryCommitter{r}
	}
	return r
}

// retryCommitter is a retrySink over a sink that makes and restores tokens.
type retryCommitter struct{ *retrySink }

func (r retryCommitter) Token() ([]byte, error) { return r.Sink.(Committer).Token() }

func (r retryCommitter) Restore(ctx context.Context, token []byte) error {
	return r.Sink.(Restorer).Restore(ctx, token)
}

type retrySink struct {
	Sink
	p RetryPolicy
}

func (r *retrySink) Write(ctx context.Context, recs []record.Record) error {
	var err error
	for attempt := 0; attempt < r.p.Attempts; attempt++ {
		if attempt > 0 {
			if werr := sleepCtx(ctx, backoff(r.p, attempt-1)); werr != nil {
				return fmt.Errorf("%w (after %d tries, last error: %v)", werr, attempt, err)
			}
		}
		err = r.Sink.Write(ctx, recs)
		if err == nil || !errors.Is(err, ErrRetryable) || ctx.Err() != nil {
			return err
		}
	}
	return fmt.Errorf("gave up after %d tries: %w", r.p.Attempts, err)
}

func (r *retrySink) Describe() string { return Describe(r.Sink) }

func backoff(p RetryPolicy, n int) time.Duration {
	ceiling := p.Max
	if n < 30 {
		if d := p.Base << n; d > 0 && d < ceiling {
			ceiling = d
		}
	}
	if ceiling <= 0 {
		return 0
	}
	return rand.N(ceiling)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
