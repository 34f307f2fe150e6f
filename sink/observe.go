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
	return wrap(s, func(ctx context.Context, recs []record.Record) error {
		start := time.Now()
		err := s.Write(ctx, recs)
		f(len(recs), time.Since(start), err)
		return err
	})
}
