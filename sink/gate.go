package sink

import (
	"context"
	"sync"
)

// Gate is the open/closed state every sink shares: Writes enter it (shared,
// or exclusive for sinks that write one batch at a time), Close shuts it
// once, after the Writes in progress. Drivers embed it.
type Gate struct {
	mu     sync.RWMutex
	closed bool
}

// Enter returns ctx's error, or ErrClosed, or a release function that the
// Write must call when done.
func (g *Gate) Enter(ctx context.Context, exclusive bool) (release func(), err error) {
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

// Shut runs release once, when no Write is in progress; later calls return
// nil.
func (g *Gate) Shut(release func() error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	return release()
}
