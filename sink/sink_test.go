package sink_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/litcrawl/litcrawl/internal/backoff"
	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/sink"
	_ "github.com/litcrawl/litcrawl/sink/jsonl"
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

var errBrokerAway = errors.Join(errors.New("broker away"), backoff.ErrRetryable)

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

// While a sink retries, each failed try is logged: the wait is seen.
func TestRetryLogsEachRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		f := &flaky{n: 2, err: errBrokerAway}
		retried := 0
		s := sink.Retry(f, sink.RetryPolicy{Attempts: 5, Base: time.Second, Max: 10 * time.Second, Log: slog.New(slog.NewTextHandler(&logs, nil)),
			OnRetry: func() { retried++ }})
		if err := s.Write(context.Background(), sinktest.Records("r", 1)); err != nil {
			t.Fatal(err)
		}
		if retried != 2 {
			t.Errorf("OnRetry called %d times, want 2", retried)
		}
		if n := strings.Count(logs.String(), "sink write failed; waiting "); n != 2 || !strings.Contains(logs.String(), "broker away") {
			t.Errorf("%d retries logged, want 2: %s", n, logs.String())
		}
		// Each says what it waits for and until when, as text and fields.
		if !regexp.MustCompile(`msg="sink write failed; waiting [0-9.]+m?s for \S+, until \d\d:\d\d:\d\d, before trying again" .* wait_seconds=[0-9.]+ until=\d{4}-`).MatchString(logs.String()) {
			t.Errorf("the wait is not said: %s", logs.String())
		}
	})
}

// With MaxElapsed a Write keeps trying through an outage of that length,
// then gives up, saying how long it tried.
func TestRetryForAWhile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &flaky{n: 1000, err: errBrokerAway}
		s := sink.Retry(f, sink.RetryPolicy{Attempts: 1000, MaxElapsed: 2 * time.Minute, Base: time.Second, Max: 15 * time.Second})
		start := time.Now()
		err := s.Write(context.Background(), sinktest.Records("r", 1))
		took := time.Since(start)
		if err == nil || !strings.Contains(err.Error(), "gave up after") || !errors.Is(err, backoff.ErrRetryable) ||
			took < 2*time.Minute || took > 2*time.Minute+15*time.Second || f.calls.Load() < 8 {
			t.Fatalf("err = %v after %v and %d calls", err, took, f.calls.Load())
		}
		// An outage shorter than that is ridden through.
		f2 := &flaky{n: 6, err: errBrokerAway}
		s2 := sink.Retry(f2, sink.DefaultRetry)
		if err := s2.Write(context.Background(), sinktest.Records("r", 1)); err != nil || f2.calls.Load() != 7 {
			t.Fatalf("err = %v after %d calls", err, f2.calls.Load())
		}
	})
}

func TestRetryGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &flaky{n: 100, err: errBrokerAway}
		s := sink.Retry(f, sink.RetryPolicy{Attempts: 4, Base: time.Second, Max: 3 * time.Second})
		err := s.Write(context.Background(), sinktest.Records("r", 1))
		if err == nil || !strings.Contains(err.Error(), "gave up after 4 tries") || !errors.Is(err, backoff.ErrRetryable) {
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

// A Multi write fails when any sink fails, naming it.
func TestMultiFailsWhenOneSinkFails(t *testing.T) {
	good := sinktest.Open(t, "jsonl:"+t.TempDir()+"/x.jsonl", sink.Options{})
	m := sink.NewMulti(good, &flaky{n: 1, err: errors.New("refused")})
	defer m.Close()
	err := m.Write(context.Background(), sinktest.Records("m", 2))
	if err == nil || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), "*sink_test.flaky") {
		t.Fatalf("err = %v", err)
	}
}

func TestRetryKeepsCapabilities(t *testing.T) {
	if _, ok := sink.Retry(&flaky{}, sink.DefaultRetry).(sink.Committer); ok {
		t.Error("a retry wrapper over a plain sink claims to make tokens")
	}
	s := sinktest.Open(t, "jsonl:"+t.TempDir()+"/x.jsonl", sink.Options{})
	defer s.Close()
	wrapped := sink.Observe(sink.Retry(s, sink.DefaultRetry), func(int, time.Duration, error) {})
	if _, ok := wrapped.(sink.Restorer); !ok {
		t.Error("retry and observe wrappers over a JSONL sink lost Restore")
	}
	if sink.Describe(wrapped) != sink.Describe(s) {
		t.Errorf("a wrapper describes itself as %q, the sink as %q", sink.Describe(wrapped), sink.Describe(s))
	}
	if u, ok := wrapped.(sink.Unwrapper); !ok || sink.Describe(u.Unwrap()) != sink.Describe(s) {
		t.Error("a wrapper does not unwrap")
	}
}

// Two JSONL files behind one Multi behave like one sink, and both files
// hold everything.
func TestMultiConformance(t *testing.T) {
	sinktest.Run(t, func(t *testing.T) sinktest.Destination {
		dir := t.TempDir()
		a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b #1?.jsonl")
		return sinktest.Destination{
			Open: func(t *testing.T) sink.Sink {
				return sink.NewMulti(sinktest.Open(t, "jsonl:"+a, sink.Options{}), sinktest.Open(t, "jsonl:"+b, sink.Options{}))
			},
			Read: func(t *testing.T) []record.Record {
				ra, rb := sinktest.ReadJSONL(t, a), sinktest.ReadJSONL(t, b)
				if len(ra) != len(rb) {
					t.Fatalf("fan-out: %d records in one file, %d in the other", len(ra), len(rb))
				}
				return ra
			},
		}
	}, sinktest.Features{Ordered: false, Restore: true, Refuse: func(id string) record.Record { return sinktest.Oversized(id, sink.MaxLine) }})
}

// A Multi's token is bound to each sink by its URL: the sinks given in
// another order, or with one dropped or added, each get their own
// position back, and a dropped sink's file is not touched.
func TestMultiTokenIsBoundToTheSinkURL(t *testing.T) {
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl"), filepath.Join(dir, "c.jsonl")
	ctx := context.Background()
	open := func(paths ...string) *sink.Multi {
		var ss []sink.Sink
		for _, p := range paths {
			ss = append(ss, sinktest.Open(t, "jsonl:"+p, sink.Options{}))
		}
		return sink.NewMulti(ss...)
	}
	m := open(a, b)
	if err := m.Write(ctx, sinktest.Records("x", 2)); err != nil {
		t.Fatal(err)
	}
	tok, err := m.Token()
	if err != nil {
		t.Fatal(err)
	}
	m.Write(ctx, sinktest.Records("uncommitted", 1)) // a crash before the commit
	m.Close()
	f, _ := os.OpenFile(a, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("{\"id\":\"not-a-sink-now\"}\n") // a's owner adds a line of their own
	f.Close()

	m = open(c, b) // a is no longer a sink; c is new and first
	if err := m.Restore(ctx, tok); err != nil {
		t.Fatal(err)
	}
	m.Close()
	if got := sinktest.ReadJSONL(t, a); len(got) != 4 {
		t.Errorf("a, no longer a sink, has %d lines after the restore; want its 4 untouched", len(got))
	}
	if got := sinktest.ReadJSONL(t, b); len(got) != 2 {
		t.Errorf("b has %d records after the restore, want the 2 committed", len(got))
	}

	// A token of the older form (by position) is still read.
	old, _ := json.Marshal(map[string]json.RawMessage{"1": mustJSON(t, map[string]any{"path": b, "offset": 0})})
	m = open(a, b)
	if err := m.Restore(ctx, old); err != nil {
		t.Fatal(err)
	}
	m.Close()
	if got := sinktest.ReadJSONL(t, b); len(got) != 0 {
		t.Errorf("an old positional token was not applied to b: %d records", len(got))
	}
}

// The same file spelled another way ("./b.jsonl", an absolute path) is
// the same sink: its token is found, and a crash's extra records are cut.
func TestMultiTokenFindsTheFileHoweverSpelled(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	m := sink.NewMulti(sinktest.Open(t, "jsonl:"+filepath.Join(dir, "b.jsonl"), sink.Options{}))
	m.Write(ctx, sinktest.Records("x", 2))
	tok, _ := m.Token()
	m.Write(ctx, sinktest.Records("uncommitted", 1))
	m.Close()
	m = sink.NewMulti(sinktest.Open(t, "jsonl:"+dir+"/./b.jsonl", sink.Options{}))
	if err := m.Restore(ctx, tok); err != nil {
		t.Fatal(err)
	}
	m.Close()
	if got := sinktest.ReadJSONL(t, filepath.Join(dir, "b.jsonl")); len(got) != 2 {
		t.Errorf("%d records after the restore, want the 2 committed", len(got))
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Drivers register by scheme; an unknown scheme is refused with the shapes
// the linked drivers take, and a password in it never shows.
func TestRegistry(t *testing.T) {
	if got := sink.Schemes(); !slices.Contains(got, "jsonl") {
		t.Fatalf("schemes %v lack jsonl (its package registers it)", got)
	}
	err := sink.CheckURL("ftp://user:hunter2@host/x")
	var ue *sink.URLError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "expected jsonl:PATH, - (stdout)") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("unknown scheme: %v", err)
	}
	if err := sink.CheckURL("-"); err != nil {
		t.Errorf("- (stdout): %v", err)
	}
	// Schemes are case-insensitive; the driver sees them in lower case.
	path := filepath.Join(t.TempDir(), "upper.jsonl")
	s := sinktest.Open(t, "JSONL:"+path, sink.Options{})
	if err := s.Write(context.Background(), sinktest.Records("u", 1)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if got := sinktest.ReadJSONL(t, path); len(got) != 1 || sink.Scheme("JSONL:x") != "jsonl" || sink.Scheme("-") != "jsonl" {
		t.Errorf("JSONL: wrote %d records to %s", len(got), path)
	}
	defer func() {
		if recover() == nil {
			t.Error("a second driver for jsonl was accepted")
		}
	}()
	sink.Register(sink.Driver{Scheme: "jsonl", Check: func(string) error { return nil },
		Open: func(context.Context, string, sink.Options) (sink.Sink, error) { return nil, nil }})
}

// One encoding: no HTML escaping, no newline, the same for every sink.
func TestMarshal(t *testing.T) {
	r := sinktest.Records("enc", 1)[0]
	b, err := sink.Marshal(&r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "<fast> &") || strings.Contains(string(b), `\u003c`) || strings.HasSuffix(string(b), "\n") {
		t.Errorf("Marshal = %s", b)
	}
	var buf bytes.Buffer
	if err := sink.EncodeLines(&buf, []record.Record{r, r}); err != nil || buf.String() != string(b)+"\n"+string(b)+"\n" {
		t.Errorf("EncodeLines = %q (%v)", buf.String(), err)
	}
}

type keepAll struct{ rs []sink.Refusal }

func (k *keepAll) Put(_ context.Context, rs []sink.Refusal) error {
	k.rs = append(k.rs, rs...)
	return nil
}

// Several refused records in one batch, first and last among them, are
// each isolated and quarantined, and the others delivered in order; an
// error that is no refusal (a closed sink) is returned, nothing
// quarantined.
func TestQuarantinedIsolatesEveryRefusedRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.jsonl")
	s := sinktest.Open(t, "jsonl:"+path, sink.Options{})
	recs := sinktest.Records("r", 8)
	for _, i := range []int{0, 3, 4, 7} {
		recs[i] = sinktest.Oversized(recs[i].ID, sink.MaxLine)
	}
	q := &keepAll{}
	n := 0
	qs := sink.Quarantined(s, q, func(k int) { n += k })
	if err := qs.Write(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range q.rs {
		ids = append(ids, r.Record.ID)
	}
	if !slices.Equal(ids, []string{"r-0", "r-3", "r-4", "r-7"}) || n != 4 {
		t.Errorf("quarantined %v (counted %d)", ids, n)
	}
	var got []string
	for _, r := range sinktest.ReadJSONL(t, path) {
		got = append(got, r.ID)
	}
	if !slices.Equal(got, []string{"r-1", "r-2", "r-5", "r-6"}) {
		t.Errorf("delivered %v", got)
	}
	s.Close()
	if err := qs.Write(context.Background(), recs[1:2]); !errors.Is(err, sink.ErrClosed) || len(q.rs) != 4 {
		t.Errorf("a closed sink: %v, %d quarantined", err, len(q.rs))
	}
}

// MergeTokens keeps the positions of the sinks the new token does not
// name, and takes the new token's for those it does.
func TestMergeTokens(t *testing.T) {
	got, err := sink.MergeTokens([]byte(`{"sinks":{"a":1,"b":2}}`), []byte(`{"sinks":{"b":3}}`))
	if err != nil || string(got) != `{"sinks":{"a":1,"b":3}}` {
		t.Errorf("merged %s, %v", got, err)
	}
	if got, _ := sink.MergeTokens(nil, []byte(`{"sinks":{"b":3}}`)); string(got) != `{"sinks":{"b":3}}` {
		t.Errorf("with no earlier token: %s", got)
	}
}
