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
