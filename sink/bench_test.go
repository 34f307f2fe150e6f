package sink_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/litcrawl/litcrawl/sink"
	"github.com/litcrawl/litcrawl/sink/sinktest"
)

// benchSink writes pages of 20 records (one Write per page, as the crawler
// does) and reports records/s.
func benchSink(b *testing.B, s sink.Sink) {
	b.Helper()
	defer s.Close()
	pages := 0
	for b.Loop() {
		recs := sinktest.Records(fmt.Sprintf("p%d", pages), 20)
		pages++
		if err := s.Write(context.Background(), recs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(pages*20)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkJSONLWrite: one write and one fsync per page.
func BenchmarkJSONLWrite(b *testing.B) {
	s, err := sink.Open(context.Background(), "jsonl:"+filepath.Join(b.TempDir(), "out.jsonl"), sink.Options{})
	if err != nil {
		b.Fatal(err)
	}
	benchSink(b, s)
}

// BenchmarkNATSWrite: asynchronous publishes to an in-process JetStream
// server (file storage), waiting for every ack of each page.
func BenchmarkNATSWrite(b *testing.B) {
	n := startNATSB(b)
	s, err := sink.Open(context.Background(), fmt.Sprintf("nats://%s/papers.bench?stream=BENCH", n), sink.Options{})
	if err != nil {
		b.Fatal(err)
	}
	benchSink(b, s)
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
	benchSink(b, s)
}
