package backoff

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestDelayStaysUnderItsCeiling(t *testing.T) {
	p := Policy{Base: time.Second, Max: 8 * time.Second}
	for n := range 40 {
		ceiling := min(8*time.Second, time.Second<<min(n, 30))
		if got := p.Ceiling(n); got != ceiling {
			t.Fatalf("Ceiling(%d) = %v, want %v", n, got, ceiling)
		}
		for range 100 {
			if d := p.Delay(n); d < 0 || d >= ceiling {
				t.Fatalf("Delay(%d) = %v outside [0, %v)", n, d, ceiling)
			}
		}
	}
	if d := (Policy{}).Delay(3); d != 0 {
		t.Errorf("a zero policy waits %v", d)
	}
}

func TestSleepIsCancellable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		start := time.Now()
		go func() {
			time.Sleep(time.Second)
			cancel()
		}()
		if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
			t.Fatalf("Sleep = %v, want context.Canceled", err)
		}
		if waited := time.Since(start); waited != time.Second {
			t.Errorf("a cancelled sleep took %v, want 1s", waited)
		}
		if err := Sleep(context.Background(), 2*time.Second); err != nil || time.Since(start) != 3*time.Second {
			t.Errorf("Sleep(2s) = %v after %v", err, time.Since(start))
		}
	})
}

// The one retry loop: retryable failures are tried again up to the bound,
// a permanent one (even wrapping a retryable one) ends it at once, the
// bound's error keeps the last failure, a wait the failure asks for is
// used, and a cancelled wait ends it with ctx's error.
func TestRetryDo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		tries := 0
		r := Retry{Policy: Policy{Base: time.Second, Max: 4 * time.Second}, Attempts: 3}
		err := r.Do(context.Background(), func(context.Context, int) error { tries++; return Retryable(boom) }, nil)
		var ex *Exhausted
		if !errors.As(err, &ex) || ex.Tries != 3 || tries != 3 || !errors.Is(err, boom) || err.Error() != "boom" {
			t.Fatalf("bounded: %v (%d tries)", err, tries)
		}
		tries = 0
		err = r.Do(context.Background(), func(context.Context, int) error { tries++; return Permanent(Retryable(boom)) }, nil)
		if tries != 1 || !errors.Is(err, boom) || IsRetryable(err) {
			t.Fatalf("permanent: %v (%d tries)", err, tries)
		}
		var waits []time.Duration
		r.Wait = func(int, error) time.Duration { return 7 * time.Second }
		start := time.Now()
		r.Do(context.Background(), func(context.Context, int) error { return Retryable(boom) }, func(_ int, _ error, d time.Duration) error {
			waits = append(waits, d)
			return nil
		})
		if len(waits) != 2 || waits[0] != 7*time.Second || time.Since(start) != 14*time.Second {
			t.Fatalf("asked waits: %v in %v", waits, time.Since(start))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		err = Retry{Policy: Policy{Base: time.Hour, Max: time.Hour}, Wait: r.Wait}.Do(ctx, func(context.Context, int) error { return Retryable(boom) }, nil)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("cancelled wait: %v", err)
		}
		tries = 0
		err = Retry{Policy: Policy{Base: time.Second, Max: time.Second}, MaxElapsed: 10 * time.Second, Wait: func(int, error) time.Duration { return 4 * time.Second }}.Do(
			context.Background(), func(context.Context, int) error { tries++; return Retryable(boom) }, nil)
		if !errors.As(err, &ex) || tries != 4 {
			t.Fatalf("max elapsed: %v after %d tries", err, tries)
		}
	})
}
