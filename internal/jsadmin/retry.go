package jsadmin

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/litcrawl/litcrawl/internal/backoff"
)

// RetryWait spaces the tries of a request while a cluster elects a leader
// (the API then answers nothing for a few seconds).
var RetryWait = backoff.Policy{Base: 100 * time.Millisecond, Max: time.Second}

// TryTimeout bounds one try of an administration request: a request made
// while a cluster elects a leader may go unanswered, and is asked again
// rather than waited on until the caller's deadline.
const TryTimeout = 3 * time.Second

// Retry runs op, each try bounded by TryTimeout, until it succeeds, fails
// for good, or ctx ends: a request made while a cluster elects a leader
// goes unanswered or is refused as "temporarily unavailable", and is asked
// again. The last error is returned with ctx's.
func Retry(ctx context.Context, op func(ctx context.Context) error) error {
	r := backoff.Retry{Policy: RetryWait, Retryable: Transient}
	return r.Do(ctx, func(ctx context.Context, _ int) error {
		tctx, cancel := context.WithTimeout(ctx, TryTimeout)
		defer cancel()
		return op(tctx)
	}, nil)
}

// Transient reports whether err may go away by itself: no answer in time,
// no responder, a connection being re-established, or JetStream saying it
// is temporarily unavailable (no leader yet).
func Transient(err error) bool {
	if backoff.IsPermanent(err) {
		return false
	}
	var api *jetstream.APIError
	if errors.As(err, &api) {
		return api.Code == 503 || api.Code == 408 || api.Code == 504
	}
	// No responders is not among them: every server of a cluster with
	// JetStream answers its API, so nobody answering means no JetStream.
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrDisconnected)
}
