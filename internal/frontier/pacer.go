package frontier

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/litcrawl/litcrawl/internal/backoff"
	"github.com/litcrawl/litcrawl/internal/jsadmin"
)

// Pacer makes the per-host request rate a fleet-wide budget: the pace
// bucket holds, per host, the earliest start of the next request; a worker
// takes the slot by advancing it with compare-and-set (a conflict means
// another worker took it: read again), then waits for its slot.
//
// Limits: the spacing is as good as the machines' clocks agree (keep them
// NTP-synchronised); each request costs a round trip to NATS; the delay
// applies to request starts, so slow responses can overlap.
type Pacer struct {
	kv    jetstream.KeyValue
	delay time.Duration
}

// Pacer spaces requests to a host delay apart across the fleet.
func (f *Frontier) Pacer(delay time.Duration) *Pacer { return &Pacer{kv: f.pace, delay: delay} }

// Wait blocks until a request to host may start: its slot is at least the
// pacer's delay after the previous one, or gap when longer (the host's
// Crawl-delay, which then holds fleet-wide too).
func (p *Pacer) Wait(ctx context.Context, host string, gap time.Duration) error {
	delay := max(p.delay, gap)
	if delay <= 0 {
		return nil
	}
	key := strings.NewReplacer(":", "_", "[", "_", "]", "_").Replace(host)
	for {
		now := time.Now()
		var start time.Time
		e, err := p.kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			start = now
			_, err = p.kv.Create(ctx, key, []byte(strconv.FormatInt(start.Add(delay).UnixNano(), 10)))
		case err != nil:
			return err
		default:
			next, _ := strconv.ParseInt(string(e.Value()), 10, 64)
			if start = time.Unix(0, next); start.Before(now) {
				start = now
			}
			_, err = p.kv.Update(ctx, key, []byte(strconv.FormatInt(start.Add(delay).UnixNano(), 10)), e.Revision())
		}
		if err == nil {
			return backoff.Until(ctx, start)
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !jsadmin.WrongLastSequence(err) {
			return err
		}
		// Another worker took the slot: read again.
	}
}
