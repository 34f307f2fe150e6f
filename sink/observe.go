package sink

import (
	"context"
	"time"

	"github.com/litcrawl/litcrawl/record"
)

// Observe wraps a sink so that every Write is reported to f: how many
// records, how long it took, and its error (metrics). The wrapped sink's
// optional abilities are kept.
func Observe(s Sink, f func(records int, took time.Duration, err error)) Sink {
	o := &observed{Sink: s, f: f}
	if _, ok := s.(interface {
		Committer
		Restorer
	}); ok {
		return observedCommitter{o}
	}
	return o
}

type observed struct {
	Sink
	f func(int, time.Duration, error)
}

func (o *observed) Write(ctx context.Context, recs []record.Record) error {
	start := time.Now()
	err := o.Sink.Write(ctx, recs)
	o.f(len(recs), time.Since(start), err)
	return err
}

func (o *observed) Describe() string { return Describe(o.Sink) }

type observedCommitter struct{ *observed }

func (o observedCommitter) Token() ([]byte, error) { return o.Sink.(Committer).Token() }

func (o observedCommitter) Restore(ctx context.Context, token []byte) error {
	return o.Sink.(Restorer).Restore(ctx, token)
}
