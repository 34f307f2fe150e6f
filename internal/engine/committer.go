package engine

import (
	"context"
	"sync"
	"time"

	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/sink"
)

// maxGroupCommit bounds how many pages one commit takes, and how many wait
// for it. Batches average about 7 pages on a fast local crawl; 16 leaves
// room for stalls (an fsync, a slow broker) while bounding the memory the
// waiting pages hold (64 raised a 20,000-page crawl's peak RSS by 2.5 MB
// and saved no CPU).
const maxGroupCommit = 16

// linger is how long a group of asynchronous pages waits for more before
// it is committed with fewer than maxGroupCommit: each group costs an
// fsync of every file sink and two of the state, so fuller groups cost a
// backfill less CPU; a page waits at most this long more to be committed.
const linger = 10 * time.Millisecond

// committer is a run's group committer: it takes the pages waiting to be
// delivered, all those that queued up while the previous commit ran, and
// delivers them in one Deliver (one sink write, one ledger commit). Pages
// are thus delivered and committed in groups whose token covers exactly
// the pages committed with it, with one fsync per group instead of per
// page. The queue bounds the pages delivered but not yet committed (memory,
// and the work a crash throws away).
type committer struct {
	ledger ledger.Ledger
	out    sink.Sink
	q      chan *request
	linger time.Duration

	stopOnce sync.Once
	finished chan struct{}
}

type request struct {
	ctx  context.Context
	item Item
	// done receives the result of a synchronous request; an asynchronous
	// one (done nil) reports to then.
	done chan result
	then func(Delivered, error)
}

type result struct {
	d   Delivered
	err error
}

func startCommitter(l ledger.Ledger, out sink.Sink) *committer {
	return startLingering(l, out, linger)
}

func startLingering(l ledger.Ledger, out sink.Sink, linger time.Duration) *committer {
	c := &committer{ledger: l, out: out, q: make(chan *request, maxGroupCommit), linger: linger, finished: make(chan struct{})}
	go c.loop()
	return c
}

func (c *committer) loop() {
	defer close(c.finished)
	wait := time.NewTimer(time.Hour)
	wait.Stop()
	for req := range c.q {
		batch := []*request{req}
		waiting := false
	drain:
		for len(batch) < maxGroupCommit {
			select {
			case r, ok := <-c.q:
				if !ok {
					break drain
				}
				batch = append(batch, r)
				continue
			default:
			}
			if !lingers(batch) {
				break
			}
			if !waiting {
				wait.Reset(c.linger)
				waiting = true
			}
			select {
			case r, ok := <-c.q:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			case <-wait.C:
				waiting = false
				break drain
			}
		}
		if waiting {
			wait.Stop()
		}
		c.commit(batch)
	}
}

// lingers says whether a group may wait for more pages: only when no one
// waits on it (every page handed over asynchronously, as a backfill's are;
// a walk waits on each page to choose its next).
func lingers(batch []*request) bool {
	for _, r := range batch {
		if r.done != nil {
			return false
		}
	}
	return true
}

func (c *committer) commit(batch []*request) {
	items := make([]Item, len(batch))
	for i, r := range batch {
		items[i] = r.item
	}
	ds, err := Deliver(batch[0].ctx, c.ledger, c.out, items)
	for i, r := range batch {
		var res result
		if err != nil {
			res.err = err
		} else {
			res.d = ds[i]
		}
		if r.done != nil {
			r.done <- res
		} else {
			r.then(res.d, res.err)
		}
	}
}

// deliver hands an item to the committer and waits until it is delivered
// and committed in some group (or failed).
func (c *committer) deliver(ctx context.Context, it Item) (Delivered, error) {
	req := &request{ctx: ctx, item: it, done: make(chan result, 1)}
	select {
	case c.q <- req:
	case <-ctx.Done():
		return Delivered{}, ctx.Err()
	}
	res := <-req.done
	return res.d, res.err
}

// deliverAsync hands an item to the committer and returns: then is called
// from the committer when the item's group is committed or failed.
func (c *committer) deliverAsync(ctx context.Context, it Item, then func(Delivered, error)) error {
	select {
	case c.q <- &request{ctx: ctx, item: it, then: then}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stop delivers what is queued and stops; later calls do nothing.
func (c *committer) stop() {
	c.stopOnce.Do(func() {
		close(c.q)
		<-c.finished
	})
}
