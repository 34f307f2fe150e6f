package kafka_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/litcrawl/litcrawl/internal/backoff"
	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/sink"
	_ "github.com/litcrawl/litcrawl/sink/kafka"
	"github.com/litcrawl/litcrawl/sink/sinktest"
)

// startKafka runs an in-process kfake cluster.
func startKafka(t testing.TB, opts ...kfake.Opt) string {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return strings.Join(c.ListenAddrs(), ",")
}

// readTopic consumes every record of topic up to its end offsets, ordered
// by partition, then offset.
func readTopic(t *testing.T, brokers, topic string) []record.Record {
	t.Helper()
	var out []record.Record
	for _, v := range readValues(t, brokers, topic) {
		var rec record.Record
		json.Unmarshal(v, &rec)
		out = append(out, rec)
	}
	return out
}

// readValues consumes every value of topic up to its end offsets, ordered
// by partition, then offset; each key must be its record's id.
func readValues(t *testing.T, brokers, topic string) [][]byte {
	t.Helper()
	ctx := context.Background()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	ends, err := kadm.NewClient(admCl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	byPart := map[int32][][]byte{}
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if errs := fs.Errors(); len(errs) > 0 {
			t.Fatalf("consume: %v", errs[0].Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			var rec record.Record
			if err := json.Unmarshal(r.Value, &rec); err != nil {
				t.Fatalf("offset %d is not a record: %v", r.Offset, err)
			}
			if string(r.Key) != rec.ID {
				t.Fatalf("key %q, record id %q", r.Key, rec.ID)
			}
			byPart[r.Partition] = append(byPart[r.Partition], r.Value)
			if r.Offset+1 >= want[r.Partition] {
				delete(want, r.Partition)
			}
		})
	}
	parts := make([]int32, 0, len(byPart))
	for p := range byPart {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	var out [][]byte
	for _, p := range parts {
		out = append(out, byPart[p]...)
	}
	return out
}

func TestKafkaConformance(t *testing.T) {
	brokers := startKafka(t)
	var topics atomic.Int32
	sinktest.Run(t, func(t *testing.T) sinktest.Destination {
		topic := fmt.Sprintf("papers-%d", topics.Add(1))
		url := fmt.Sprintf("kafka://%s/%s?create=true&partitions=3", brokers, topic)
		return sinktest.Destination{
			Open: func(t *testing.T) sink.Sink { return sinktest.Open(t, url, sink.Options{}) },
			Read: func(t *testing.T) []record.Record { return readTopic(t, brokers, topic) },
			Raw:  func(t *testing.T) [][]byte { return readValues(t, brokers, topic) },
		}
	}, sinktest.Features{Refuse: func(id string) record.Record { return sinktest.Oversized(id, 1_000_012) }})
}

// With one partition a single writer's records keep their order.
func TestKafkaOnePartitionKeepsOrder(t *testing.T) {
	brokers := startKafka(t, kfake.SeedTopics(1, "ordered"))
	s := sinktest.Open(t, "kafka://"+brokers+"/ordered?compression=lz4", sink.Options{})
	var all []record.Record
	for b := range 4 {
		batch := sinktest.Records(fmt.Sprintf("o%d", b), 10)
		if err := s.Write(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
		all = append(all, batch...)
	}
	s.Close()
	got := readTopic(t, brokers, "ordered")
	if len(got) != len(all) {
		t.Fatalf("%d records, want %d", len(got), len(all))
	}
	for i := range got {
		if got[i].ID != all[i].ID {
			t.Fatalf("record %d is %s, want %s", i, got[i].ID, all[i].ID)
		}
	}
}

// The topic must exist unless create=true: nothing is created silently.
func TestKafkaTopicChecks(t *testing.T) {
	brokers := startKafka(t)
	_, err := sink.Open(context.Background(), "kafka://"+brokers+"/absent", sink.Options{})
	if err == nil || !strings.Contains(err.Error(), "topic absent does not exist (add create=true") {
		t.Fatalf("missing topic: %v", err)
	}
	cl, _ := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...))
	defer cl.Close()
	topics, err := kadm.NewClient(cl).ListTopics(context.Background(), "absent")
	if err != nil || topics.Has("absent") {
		t.Fatalf("the topic was created anyway (err %v)", err)
	}
}

func TestKafkaURLErrors(t *testing.T) {
	tests := map[string]string{
		"kafka://127.0.0.1:9092":                          "expected a topic",
		"kafka:///papers":                                 "expected kafka://HOST:PORT",
		"kafka://host/papers":                             "expected kafka://HOST:PORT",
		"kafka://127.0.0.1:9092/p?compression=brotli":     `compression="brotli"`,
		"kafka://127.0.0.1:9092/p?partitions=0":           `partitions="0"`,
		"kafka://127.0.0.1:9092/p?sasl=kerberos":          `sasl="kerberos"`,
		"kafka://127.0.0.1:9092/p?sasl=plain":             "needs a user",
		"kafka://u:topsecret@127.0.0.1:9092/p?x=1":        `unknown parameter "x"`,
		"kafka://127.0.0.1:9092/p?delivery_timeout=never": `delivery_timeout="never"`,
	}
	for url, want := range tests {
		_, err := sink.Open(context.Background(), url, sink.Options{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%q) = %v, want an error containing %q", url, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "topsecret") {
			t.Errorf("Open(%q) leaks the password: %v", url, err)
		}
	}
}

// A broker that goes away makes Write fail within delivery_timeout with a
// retryable error, instead of hanging (franz-go retries forever by default).
func TestKafkaBrokerAwayIsRetryable(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "papers"))
	if err != nil {
		t.Fatal(err)
	}
	s := sinktest.Open(t, "kafka://"+c.ListenAddrs()[0]+"/papers?delivery_timeout=1s", sink.Options{})
	defer s.Close()
	if err := s.Write(context.Background(), sinktest.Records("up", 2)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	err = s.Write(context.Background(), sinktest.Records("down", 2))
	if err == nil || !errors.Is(err, backoff.ErrRetryable) {
		t.Fatalf("Write with the broker gone = %v, want a retryable error", err)
	}
}

// BenchmarkKafkaWrite: produce to an in-process kfake cluster (one
// partition), waiting for every acknowledgement of each page. kfake keeps
// records in memory, so this measures the client side, not a broker's disk.
func BenchmarkKafkaWrite(b *testing.B) {
	brokers := startKafka(b)
	s, err := sink.Open(context.Background(), "kafka://"+brokers+"/bench?create=true", sink.Options{})
	if err != nil {
		b.Fatal(err)
	}
	sinktest.Bench(b, s)
}
