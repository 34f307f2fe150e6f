package crawler

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// Requests to a host start at least the delay apart, robots.txt's
// Crawl-delay raises it, soft blocks slow the host down, and a wait is
// cancellable.
func TestHostLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newHostLimiter(1, 100*time.Millisecond, 0)
		ctx := context.Background()
		start := time.Now()
		var at []time.Duration
		for range 3 {
			release, err := l.acquire(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			at = append(at, time.Since(start))
			release()
		}
		if at[1] != 100*time.Millisecond || at[2] != 200*time.Millisecond {
			t.Fatalf("starts at %v, want 0, 100ms, 200ms", at)
		}
		l.atLeast(2 * time.Second) // Crawl-delay: 2
		r, _ := l.acquire(ctx, nil)
		r()
		before := time.Now()
		r, _ = l.acquire(ctx, nil)
		r()
		if gap := time.Since(before); gap != 2*time.Second {
			t.Errorf("with Crawl-delay 2: waited %v", gap)
		}
		l.slowDown(10 * time.Second) // a soft block: +1s
		r, _ = l.acquire(ctx, nil)
		r()
		before = time.Now()
		r, _ = l.acquire(ctx, nil)
		r()
		if gap := time.Since(before); gap != 3*time.Second {
			t.Errorf("after a soft block: waited %v, want 3s", gap)
		}
		ctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		if _, err := l.acquire(ctx, nil); err == nil {
			t.Error("a wait longer than the context must be cancelled")
		}
	})
}

// At most concurrency requests are in flight at once.
func TestHostLimiterConcurrency(t *testing.T) {
	l := newHostLimiter(2, 0, 0)
	r1, _ := l.acquire(context.Background(), nil)
	_, _ = l.acquire(context.Background(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.acquire(ctx, nil); err == nil {
		t.Fatal("a third request got a slot while two were in flight")
	}
	r1()
	if _, err := l.acquire(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}
