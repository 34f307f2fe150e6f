package app

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/internal/config"
	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/internal/state"
	"github.com/litcrawl/litcrawl/sink"
	_ "github.com/litcrawl/litcrawl/sink/jsonl"
	_ "github.com/litcrawl/litcrawl/sink/kafka"
	"github.com/litcrawl/litcrawl/sink/quarantine"
	"github.com/litcrawl/litcrawl/sink/sinktest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A retry killed between marking its records and rewriting the quarantine
// is settled by the next run: records whose delivery was committed (the
// state's token moved on from the one they were marked with) leave the
// quarantine; the others stay, to be retried, and are not delivered twice.
func TestPendingRetryIsSettled(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Commit(ctx, ledger.Group{SinkToken: []byte(`{"sinks":{"a":1}}`)}); err != nil {
		t.Fatal(err)
	}
	tok, _ := st.SinkToken(ctx)
	recs := sinktest.Records("p", 3)
	path := filepath.Join(dir, quarantine.Name)
	quarantine.Replace(path, quarantine.Contents{Entries: []sink.Refusal{
		{Sink: "s", Reason: "r", Tries: 1, Record: recs[0]},                                               // not being retried
		{Sink: "s", Reason: "r", Tries: 1, Record: recs[1], Pending: tokenDigest(tok)},                    // retry not committed
		{Sink: "s", Reason: "r", Tries: 1, Record: recs[2], Pending: tokenDigest([]byte("an older one"))}, // committed since
	}})
	if _, err := resolvePending(ctx, st, path); err != nil {
		t.Fatal(err)
	}
	c, _ := quarantine.Read(path)
	rs := c.Entries
	if len(rs) != 2 || rs[0].Record.ID != "p-0" || rs[1].Record.ID != "p-1" || rs[1].Pending != "" {
		t.Fatalf("after settling: %+v", rs)
	}
}

// A retry killed after its commit, before it rewrote the quarantine: the
// next run drops the records it delivered (no second copy) and keeps the
// ones the sink refused again. Killed before its delivery, it delivers
// nothing twice either.
func TestRetryKilledMidwayLosesAndDuplicatesNothing(t *testing.T) {
	ctx := context.Background()
	for _, stage := range []string{"marked", "committed"} {
		t.Run(stage, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "p.jsonl")
			sinkURL := "jsonl:" + out
			recs := sinktest.Records("k", 2)
			big := sinktest.Oversized("k-big", sink.MaxLine)
			quarantine.Replace(filepath.Join(dir, quarantine.Name), quarantine.Contents{Entries: []sink.Refusal{
				{Sink: sinkURL, Reason: "r", Tries: 1, Record: recs[0]},
				{Sink: sinkURL, Reason: "r", Tries: 1, Record: big},
				{Sink: sinkURL, Reason: "r", Tries: 1, Record: recs[1]},
			}})
			env := &Env{Config: config.Default()}
			kill := func(s string) error {
				if s == stage {
					return errors.New("killed")
				}
				return nil
			}
			_, err := env.RetryQuarantine(ctx, QuarantineRetry{StateDir: dir, Sinks: []string{sinkURL}, stage: kill})
			if err == nil {
				t.Fatal("the retry was not stopped")
			}
			// The next run: a retry again (it settles the first).
			res, err := env.RetryQuarantine(ctx, QuarantineRetry{StateDir: dir, Sinks: []string{sinkURL}})
			if err != nil {
				t.Fatal(err)
			}
			c, _ := quarantine.Read(filepath.Join(dir, quarantine.Name))
			if len(c.Entries) != 1 || c.Entries[0].Record.ID != "k-big" || res.Refused != 1 {
				t.Errorf("quarantine after: %d entries (%+v)", len(c.Entries), res)
			}
			got := map[string]int{}
			for _, r := range sinktest.ReadJSONL(t, out) {
				got[r.ID]++
			}
			if got["k-0"] != 1 || got["k-1"] != 1 || len(got) != 2 {
				t.Errorf("delivered %v, want k-0 and k-1 once each", got)
			}
		})
	}
}

// A retry into a sink that keeps no position (Kafka), killed after its
// commit and before the quarantine was rewritten, is settled as delivered
// by the next run, not published again: its commit changed the state's
// token although no sink moved.
func TestRetryIntoKafkaKilledAfterItsCommitPublishesOnce(t *testing.T) {
	ctx := context.Background()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "papers"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := strings.Join(c.ListenAddrs(), ",")
	sinkURL := "kafka://" + brokers + "/papers"
	s, err := sink.Open(ctx, sinkURL, sink.Options{})
	if err != nil {
		t.Fatal(err)
	}
	name := sink.Describe(s)
	s.Close()
	dir := t.TempDir()
	var entries []sink.Refusal
	for _, r := range sinktest.Records("k", 2) {
		entries = append(entries, sink.Refusal{Sink: name, Reason: "r", Tries: 1, Record: r})
	}
	if err := quarantine.Replace(filepath.Join(dir, quarantine.Name), quarantine.Contents{Entries: entries}); err != nil {
		t.Fatal(err)
	}
	env := &Env{Config: config.Default()}
	kill := func(s string) error {
		if s == "committed" {
			return errors.New("killed")
		}
		return nil
	}
	if _, err := env.RetryQuarantine(ctx, QuarantineRetry{StateDir: dir, Sinks: []string{sinkURL}, stage: kill}); err == nil {
		t.Fatal("the retry was not stopped")
	}
	res, err := env.RetryQuarantine(ctx, QuarantineRetry{StateDir: dir, Sinks: []string{sinkURL}})
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := quarantine.Read(filepath.Join(dir, quarantine.Name)); len(left.Entries) != 0 || res.Delivered != 0 {
		t.Errorf("after the rerun: %d entries left, %d delivered again", len(left.Entries), res.Delivered)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, "papers")
	if err != nil {
		t.Fatal(err)
	}
	published := int64(0)
	ends.Each(func(o kadm.ListedOffset) { published += o.Offset })
	if published != 2 {
		t.Errorf("the topic holds %d messages, want the 2 records once each", published)
	}
}
