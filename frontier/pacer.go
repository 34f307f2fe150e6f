package frontier

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
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
	KV    jetstream.KeyValue
	Delay time.Duration
}

// Wait blocks until a request to host may start.
func (p *Pacer) Wait(ctx context.Context, host string) error {
	if p.Delay <= 0 {
		return nil
	}
	key := strings.NewReplacer(":", "_", "[", "_", "]", "_").Replace(host)
	for {
		now := time.Now()
		var start time.Time
		e, err := p.KV.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			start = now
			_, err = p.KV.Create(ctx, key, []byte(strconv.FormatInt(start.Add(p.Delay).UnixNano(), 10)))
		case err != nil:
			return err
		default:
			next, _ := strconv.ParseInt(string(e.Value()), 10, 64)
			start = time.Unix(0, next)
			if start.Before(now) {
				start = now
			}
			_, err = p.KV.Update(ctx, key, []byte(strconv.FormatInt(start.Add(p.Delay).UnixNano(), 10)), e.Revision())
		}
		if err == nil {
			t := time.NewTimer(time.Until(start))
			defer t.Stop()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
				return nil
			}
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !strings.Contains(err.Error(), "wrong last sequence") {
			return err
		}
		// Another worker took the slot: read again.
	}
}
