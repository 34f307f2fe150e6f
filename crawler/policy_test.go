package crawler

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/litcrawl/litcrawl/internal/backoff"
)

func fetchErr(status int, retryAfter time.Duration) error {
	return &FetchError{URL: "https://m.booksci.cn/literature_d1.htm", Status: status, RetryAfter: retryAfter, Err: errors.New(http.StatusText(status))}
}

func TestRetryable(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{fetchErr(500, 0), true},
		{fetchErr(503, 0), true},
		{fetchErr(429, 0), true},
		{fetchErr(408, 0), true},
		{fetchErr(425, 0), true},
		{fetchErr(404, 0), false},
		{fetchErr(403, 0), false},
		{&FetchError{Err: errors.New("connection reset")}, true},
		{&FetchError{Status: 200, Err: ErrSoftBlock}, true},
		{&FetchError{Status: 200, Err: ErrTruncated}, true},
		{&FetchError{Status: 200, Err: ErrBodyTooLarge}, false},
		{&FetchError{Err: ErrOffsite}, false},
		{&FetchError{Err: ErrRobotsDisallowed}, false},
		{errors.New("not a fetch error"), false},
		{fmt.Errorf("wrapped: %w", fetchErr(502, 0)), true},
	}
	for _, tt := range tests {
		if got := backoff.IsRetryable(tt.err); got != tt.want {
			t.Errorf("backoff.IsRetryable(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"120", 2 * time.Minute, true},
		{"0", 0, true},
		{"Wed, 02 Dec 2026 03:00:30 GMT", 30 * time.Second, true},
		{"Wed, 02 Dec 2026 02:00:00 GMT", 0, true}, // in the past
		{"", 0, false},
		{"-5", 0, false},
		{"18446744074", maxRetryAfter, true},             // would overflow to 0.29 s
		{"99999999999999999999999", maxRetryAfter, true}, // beyond int64
		{"-99999999999999999999999", 0, false},
		{"soon", 0, false},
	}
	for _, tt := range tests {
		d, ok := ParseRetryAfter(tt.in, now)
		if d != tt.want || ok != tt.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, d, ok, tt.want, tt.ok)
		}
	}
}

func TestDelay(t *testing.T) {
	p := RetryPolicy{MaxAttempts: 5, BackoffBase: time.Second, BackoffMax: 8 * time.Second, MaxRetryAfter: time.Minute}
	for attempt := 1; attempt <= 6; attempt++ {
		ceiling := min(8*time.Second, time.Second<<(attempt-1))
		for range 200 {
			if d := p.Delay(attempt, fetchErr(503, 0)); d < 0 || d >= ceiling {
				t.Fatalf("attempt %d: delay %v outside [0, %v)", attempt, d, ceiling)
			}
		}
	}
	if d := p.Delay(1, fetchErr(429, 20*time.Second)); d != 20*time.Second {
		t.Errorf("Retry-After 20s: delay %v", d)
	}
	if d := p.Delay(1, fetchErr(429, time.Hour)); d != time.Minute {
		t.Errorf("Retry-After 1h is capped at MaxRetryAfter: delay %v", d)
	}
}

// The retry loop waits as the policy says, in fake time.
func TestRetryWaitsAndStops(t *testing.T) {
	p := RetryPolicy{MaxAttempts: 4, BackoffBase: time.Second, BackoffMax: 4 * time.Second, MaxRetryAfter: time.Minute}
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var at []time.Duration
		err := p.Retry(context.Background(), func(ctx context.Context, attempt int) error {
			at = append(at, time.Since(start))
			if attempt == 2 {
				return fetchErr(429, 10*time.Second) // the server says when
			}
			if attempt < 4 {
				return fetchErr(503, 0)
			}
			return nil
		})
		if err != nil || len(at) != 4 {
			t.Fatalf("err=%v tries=%d", err, len(at))
		}
		if gap := at[2] - at[1]; gap != 10*time.Second {
			t.Errorf("after a 429 with Retry-After 10: waited %v", gap)
		}
		if gap := at[1] - at[0]; gap >= time.Second {
			t.Errorf("first backoff %v, want < 1s", gap)
		}
	})
}

func TestRetryStopsOnPermanentAndAttempts(t *testing.T) {
	p := RetryPolicy{MaxAttempts: 3, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond}
	tries := 0
	err := p.Retry(context.Background(), func(context.Context, int) error { tries++; return fetchErr(404, 0) })
	if tries != 1 || !errors.As(err, new(*FetchError)) {
		t.Errorf("404: %d tries, err %v", tries, err)
	}
	synctest.Test(t, func(t *testing.T) {
		tries = 0
		err := p.Retry(context.Background(), func(context.Context, int) error { tries++; return fetchErr(503, 0) })
		if tries != 3 || !backoff.IsRetryable(err) {
			t.Errorf("503 forever: %d tries, err %v", tries, err)
		}
	})
}

func TestRetryWaitIsCancellable(t *testing.T) {
	p := RetryPolicy{MaxAttempts: 3, BackoffBase: time.Hour, BackoffMax: time.Hour, MaxRetryAfter: time.Hour}
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		start := time.Now()
		err := p.Retry(ctx, func(context.Context, int) error { return fetchErr(429, time.Hour) })
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Minute {
			t.Errorf("err=%v after %v", err, time.Since(start))
		}
	})
}

func TestBreaker(t *testing.T) {
	b := &Breaker{Threshold: 3, Cooldown: 30 * time.Second}
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	const h = "m.booksci.cn"
	for i := range 3 {
		if g, _ := b.Allow(h, now); g != Go {
			t.Fatalf("closed circuit refused request %d", i)
		}
		b.Failure(h, now)
	}
	if g, wait := b.Allow(h, now.Add(10*time.Second)); g != Wait || wait != 20*time.Second || b.State(h, now) != "open" {
		t.Fatalf("open circuit: gate=%v wait=%v state=%s", g, wait, b.State(h, now))
	}
	later := now.Add(31 * time.Second)
	if g, _ := b.Allow(h, later); g != Go {
		t.Fatal("after the cooldown one probe must go")
	}
	if g, _ := b.Allow(h, later); g != Wait {
		t.Fatal("only one probe at a time")
	}
	b.Failure(h, later) // the probe failed: open again
	if g, _ := b.Allow(h, later.Add(time.Second)); g != Wait {
		t.Fatal("a failed probe must reopen the circuit")
	}
	b.Allow(h, later.Add(31*time.Second))
	b.Success(h)
	if g, _ := b.Allow(h, later.Add(31*time.Second)); g != Go || b.State(h, later) != "closed" {
		t.Fatal("a good probe must close the circuit")
	}
	if g, _ := b.Allow("booksci.cn", now.Add(time.Second)); g != Go {
		t.Error("circuits are per host")
	}
}

// A host whose circuit opened MaxOpens times in a row is down: its
// requests fail at once instead of waiting a cooldown each, and a request
// that comes after a cooldown still probes it; a success brings it back.
func TestBreakerDownAfterMaxOpens(t *testing.T) {
	b := &Breaker{Threshold: 2, Cooldown: time.Minute, MaxOpens: 2}
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	const h = "m.booksci.cn"
	b.Failure(h, now)
	b.Failure(h, now) // opens (1)
	if g, wait := b.Allow(h, now.Add(time.Second)); g != Wait || wait != 59*time.Second {
		t.Fatalf("after the first opening: gate=%v wait=%v, want a wait", g, wait)
	}
	probe := now.Add(time.Minute)
	if g, _ := b.Allow(h, probe); g != Go {
		t.Fatal("after the cooldown one probe must go")
	}
	b.Failure(h, probe) // the probe failed: opens (2)
	if g, _ := b.Allow(h, probe.Add(time.Second)); g != Down || b.State(h, probe) != "down" {
		t.Fatalf("after %d openings in a row: gate=%v state=%s, want down", b.MaxOpens, g, b.State(h, probe))
	}
	again := probe.Add(time.Minute)
	if g, _ := b.Allow(h, again); g != Go {
		t.Fatal("a down host is still probed once a cooldown has passed")
	}
	if g, _ := b.Allow(h, again); g != Down {
		t.Fatal("while the probe is out, the others fail at once")
	}
	b.Success(h)
	if g, _ := b.Allow(h, again); g != Go || b.Opens(h) != 0 {
		t.Fatal("a success must bring the host back")
	}
}
