package sink_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/sink"
	"github.com/litcrawl/litcrawl/sink/sinktest"
)

// flaky fails its first n Writes with err.
type flaky struct {
	n     int32
	err   error
	calls atomic.Int32
}

func (f *flaky) Write(ctx context.Context, recs []record.Record) error {
	if f.calls.Add(1) <= f.n {
		return f.err
	}
	return nil
}
func (f *flaky) Close() error { return nil }

var errBrokerAway = errors.Join(errors.New("broker away"), sink.ErrRetryable)

func TestRetryBacksOffThenSucceeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &flaky{n: 2, err: errBrokerAway}
		s := sink.Retry(f, sink.RetryPolicy{Attempts: 5, Base: time.Second, Max: 10 * time.Second})
		start := time.Now()
		if err := s.Write(context.Background(), sinktest.Records("r", 1)); err != nil {
			t.Fatal(err)
		}
		if f.calls.Load() != 3 {
			t.Errorf("calls = %d, want 3", f.calls.Load())
		}
		// Full jitter: the two waits are below 1s and 2s.
		if waited := time.Since(start); waited >= 3*time.Second {
			t.Errorf("waited %v, more than the backoff allows", waited)
		}
	})
}

func TestRetryGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &flaky{n: 100, err: errBrokerAway}
		s := sink.Retry(f, sink.RetryPolicy{Attempts: 4, Base: time.Second, Max: 3 * time.Second})
		err := s.Write(context.Background(), sinktest.Records("r", 1))
		if err == nil || !strings.Contains(err.Error(), "gave up after 4 tries") || !errors.Is(err, sink.ErrRetryable) {
			t.Fatalf("err = %v", err)
		}
		if f.calls.Load() != 4 {
			t.Errorf("calls = %d, want 4", f.calls.Load())
		}
	})
}

func TestRetryDoesNotRetryPermanentErrors(t *testing.T) {
	f := &flaky{n: 100, err: errors.New("disk full")}
	s := sink.Retry(f, sink.DefaultRetry)
	if err := s.Write(context.Background(), sinktest.Records("r", 1)); err == nil || f.calls.Load() != 1 {
		t.Fatalf("err = %v after %d calls, want the error after 1", err, f.calls.Load())
	}
}

func TestRetryWaitIsCancellable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &flaky{n: 100, err: errBrokerAway}
		s := sink.Retry(f, sink.RetryPolicy{Attempts: 10, Base: time.Hour, Max: time.Hour})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		start := time.Now()
		err := s.Write(ctx, sinktest.Records("r", 1))
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Minute {
			t.Fatalf("err = %v after %v", err, time.Since(start))
		}
	})
}

// A retry wrapper exposes tokens only when the wrapped sink has them.
func TestRetryKeepsCapabilities(t *testing.T) {
	if _, ok := sink.Retry(&flaky{}, sink.DefaultRetry).(sink.Committer); ok {
		t.Error("a retry wrapper over a plain sink claims to make tokens")
	}
	s := openT(t, "jsonl:"+t.TempDir()+"/x.jsonl", sink.Options{})
	defer s.Close()
	if _, ok := sink.Retry(s, sink.DefaultRetry).(sink.Restorer); !ok {
		t.Error("a retry wrapper over a JSONL sink lost Restore")
	}
}

// A Multi write fails when any sink fails, naming it.
func TestMultiFailsWhenOneSinkFails(t *testing.T) {
	good := openT(t, "jsonl:"+t.TempDir()+"/x.jsonl", sink.Options{})
	m := sink.NewMulti(good, &flaky{n: 1, err: errors.New("refused")})
	defer m.Close()
	err := m.Write(context.Background(), sinktest.Records("m", 2))
	if err == nil || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), "*sink_test.flaky") {
		t.Fatalf("err = %v", err)
	}
}
