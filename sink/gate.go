package sink

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/litcrawl/litcrawl/record"
)

// gate is the open/closed state every sink shares: Writes enter it (shared,
// or exclusive for sinks that write one batch at a time), Close shuts it
// once, after the Writes in progress.
type gate struct {
	mu     sync.RWMutex
	closed bool
}

// enter returns ctx's error, or ErrClosed, or a release function that the
// Write must call when done.
func (g *gate) enter(ctx context.Context, exclusive bool) (release func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if exclusive {
		g.mu.Lock()
		if g.closed {
			g.mu.Unlock()
			return nil, ErrClosed
		}
		return g.mu.Unlock, nil
	}
	g.mu.RLock()
	if g.closed {
		g.mu.RUnlock()
		return nil, ErrClosed
	}
	return g.mu.RUnlock, nil
}

// shut runs release once, when no Write is in progress; later calls return
// nil.
func (g *gate) shut(release func() error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	return release()
}

// encodeLines writes recs to buf as JSON lines, without HTML escaping.
func encodeLines(buf *bytes.Buffer, recs []record.Record) error {
	buf.Reset()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	for i := range recs {
		if err := enc.Encode(&recs[i]); err != nil {
			return fmt.Errorf("encode record %s: %w", recs[i].ID, err)
		}
	}
	return nil
}
