package crawler

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/litcrawl/litcrawl/internal/backoff"
)

// hostLimiter is the politeness of one host: at most concurrency requests
// at once, and at least delay (plus up to jitter, plus any slowdown) between
// the starts of two requests. Every wait is cancellable, unlike colly's
// LimitRule.
type hostLimiter struct {
	sem chan struct{}

	mu       sync.Mutex
	next     time.Time     // earliest start of the next request
	base     time.Duration // the configured delay
	delay    time.Duration // the configured delay, or robots.txt's Crawl-delay if longer
	jitter   time.Duration
	slowdown time.Duration // added after soft blocks; halves on success
}

func newHostLimiter(concurrency int, delay, jitter time.Duration) *hostLimiter {
	return &hostLimiter{sem: make(chan struct{}, max(concurrency, 1)), base: delay, delay: delay, jitter: jitter}
}

// acquire waits for a slot and for the host's next start time; release
// frees the slot. Before it sleeps, waiting (when set) is told how long
// and why: "crawl-delay" (robots.txt's, longer than the configured
// delay), "slowdown" (after soft blocks) or "delay".
func (h *hostLimiter) acquire(ctx context.Context, waiting func(d time.Duration, cause string)) (release func(), err error) {
	select {
	case h.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	h.mu.Lock()
	now := time.Now()
	start := h.next
	if start.Before(now) {
		start = now
	}
	gap := h.delay + h.slowdown
	if h.jitter > 0 {
		gap += rand.N(h.jitter)
	}
	h.next = start.Add(gap)
	cause := "delay"
	switch {
	case h.slowdown > h.delay-h.base && h.slowdown > 0:
		cause = "slowdown"
	case h.delay > h.base:
		cause = "crawl-delay"
	}
	h.mu.Unlock()
	if d := start.Sub(now); waiting != nil && d > 0 {
		waiting(d, cause)
	}
	if err := backoff.Sleep(ctx, start.Sub(now)); err != nil {
		<-h.sem
		return nil, err
	}
	return func() { <-h.sem }, nil
}

// gap is the least time between two requests to the host: the delay (or
// Crawl-delay) and the slowdown, without jitter.
func (h *hostLimiter) gap() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.delay + h.slowdown
}

// atLeast raises the delay (robots.txt's Crawl-delay); raised says it
// did.
func (h *hostLimiter) atLeast(d time.Duration) (raised bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	raised = d > h.delay
	h.delay = max(h.delay, d)
	return raised
}

// slowDown doubles the extra delay after a soft block (capped); success
// halves it.
func (h *hostLimiter) slowDown(limit time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.slowdown = min(max(2*h.slowdown, time.Second), limit)
}

func (h *hostLimiter) recover() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.slowdown /= 2
}
