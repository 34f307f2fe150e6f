package frontier

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/litcrawl/litcrawl/internal/backoff"
)

// retryWait spaces the tries of a request while a cluster elects a leader
// (the API then answers nothing for a few seconds).
var retryWait = backoff.Policy{Base: 100 * time.Millisecond, Max: time.Second}

// retry runs op, each try bounded by a few seconds, until it succeeds,
// fails for good, or ctx ends: a request made while a cluster elects a
// leader goes unanswered or is refused as "temporarily unavailable", and
// is asked again. The last error is returned with ctx's.
func retry(ctx context.Context, op func(ctx context.Context) error) error {
	r := backoff.Retry{Policy: retryWait, Retryable: transient}
	return r.Do(ctx, func(ctx context.Context, _ int) error {
		tctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		return op(tctx)
	}, nil)
}

// transient reports whether err may go away by itself: no answer in
// time, no responder, a connection being re-established, or JetStream
// saying it is temporarily unavailable (no leader yet).
func transient(err error) bool {
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
