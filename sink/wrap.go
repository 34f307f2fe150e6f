package sink

import (
	"context"

	"github.com/litcrawl/litcrawl/record"
)

// wrap returns a sink whose Write is write and whose Close, Describe and
// optional abilities (Committer and Restorer) are inner's: the one place a
// wrapper forwards them. Retry and Observe are wraps.
func wrap(inner Sink, write func(ctx context.Context, recs []record.Record) error) Sink {
	w := &wrapped{inner: inner, write: write}
	if _, ok := inner.(interface {
		Committer
		Restorer
	}); ok {
		return committingWrap{w}
	}
	return w
}

type wrapped struct {
	inner Sink
	write func(context.Context, []record.Record) error
}

func (w *wrapped) Write(ctx context.Context, recs []record.Record) error { return w.write(ctx, recs) }
func (w *wrapped) Close() error                                          { return w.inner.Close() }
func (w *wrapped) Describe() string                                      { return Describe(w.inner) }
func (w *wrapped) Unwrap() Sink                                          { return w.inner }

// committingWrap is a wrap over a sink that makes and restores tokens.
type committingWrap struct{ *wrapped }

func (c committingWrap) Token() ([]byte, error) { return c.inner.(Committer).Token() }

func (c committingWrap) Restore(ctx context.Context, token []byte) error {
	return c.inner.(Restorer).Restore(ctx, token)
}
