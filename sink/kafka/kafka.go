// Package kafka is the Kafka sink driver: kafka://HOST:PORT[,HOST:PORT]/TOPIC
// produces each record with its id as the key, through franz-go's
// idempotent producer with acks from all in-sync replicas. Importing the
// package registers the driver.
package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/litcrawl/litcrawl/internal/backoff"
	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/sink"
	"github.com/litcrawl/litcrawl/sink/sinkurl"
)

func init() {
	sink.Register(sink.Driver{Scheme: "kafka", Usage: "kafka://HOST:PORT/TOPIC",
		Check: func(raw string) error { _, err := parseURL(raw); return err }, Open: open})
}

// kafkaConfig is what a kafka:// URL says.
type kafkaConfig struct {
	brokers         []string
	topic           string
	create          bool
	partitions      int32
	replication     int16
	deliveryTimeout time.Duration
	compression     kgo.CompressionCodec
	maxBuffered     int
	sasl            string
	user, pass      string
	tls             sinkurl.TLS
	description     string
}

// parseURL reads kafka://[user:pass@]host:port[,host:port]/TOPIC?….
func parseURL(raw string) (*kafkaConfig, error) {
	u, err := sinkurl.Parse(raw)
	if err != nil {
		return nil, err
	}
	c := &kafkaConfig{partitions: 1, replication: -1, deliveryTimeout: 30 * time.Second,
		maxBuffered: 10000, description: u.Redacted}
	c.user, c.pass = u.User, u.Pass
	for _, h := range u.Hosts {
		if !strings.Contains(h, ":") {
			return nil, u.Errorf("expected kafka://HOST:PORT[,HOST:PORT]/TOPIC, got server %q", h)
		}
	}
	if len(u.Hosts) == 0 {
		return nil, u.Errorf("expected kafka://HOST:PORT[,HOST:PORT]/TOPIC")
	}
	c.brokers = u.Hosts
	c.topic = u.Name
	if c.topic == "" || strings.ContainsAny(c.topic, "/ ") {
		return nil, u.Errorf("expected a topic after the brokers, e.g. kafka://127.0.0.1:9092/papers")
	}
	partitions, replication := 1, 0
	compression := "zstd"
	params := []sinkurl.Param{
		sinkurl.Bool("create", &c.create),
		sinkurl.Int("partitions", &partitions, 1, 10000, "a number of partitions"),
		sinkurl.Int("replication", &replication, 1, 32767, "a replication factor"),
		sinkurl.Duration("delivery_timeout", &c.deliveryTimeout, "30s"),
		sinkurl.OneOf("compression", &compression, "zstd", "lz4", "snappy", "gzip", "none"),
		sinkurl.Int("max_buffered", &c.maxBuffered, 1, 10_000_000, "a number of records"),
		sinkurl.OneOf("sasl", &c.sasl, "plain", "scram-sha-256", "scram-sha-512"),
	}
	if err := u.Apply(append(params, c.tls.Params()...)...); err != nil {
		return nil, err
	}
	c.partitions = int32(partitions)
	if replication > 0 {
		c.replication = int16(replication)
	}
	c.compression = map[string]kgo.CompressionCodec{"zstd": kgo.ZstdCompression(), "lz4": kgo.Lz4Compression(),
		"snappy": kgo.SnappyCompression(), "gzip": kgo.GzipCompression(), "none": kgo.NoCompression()}[compression]
	if problem := c.tls.Check(); problem != "" {
		return nil, u.Errorf("%s", problem)
	}
	if c.user == "" && c.sasl != "" {
		c.user, c.pass = os.Getenv("KAFKA_USER"), os.Getenv("KAFKA_PASSWORD")
		if c.user == "" {
			return nil, u.Errorf("sasl=%s needs a user: in the URL (user:pass@) or in KAFKA_USER and KAFKA_PASSWORD", c.sasl)
		}
	}
	if c.user != "" && c.sasl == "" {
		c.sasl = "plain"
	}
	return c, nil
}

func (c *kafkaConfig) clientOptions() ([]kgo.Opt, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.brokers...),
		kgo.DefaultProduceTopic(c.topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), // with the idempotent producer (the default)
		kgo.ProducerBatchCompression(c.compression, kgo.NoCompression()),
		// franz-go retries a record forever by default: bound it.
		kgo.RecordDeliveryTimeout(c.deliveryTimeout),
		kgo.MaxBufferedRecords(c.maxBuffered),
		kgo.ClientID("litcrawl"),
	}
	switch c.sasl {
	case "plain":
		opts = append(opts, kgo.SASL(plain.Auth{User: c.user, Pass: c.pass}.AsMechanism()))
	case "scram-sha-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: c.user, Pass: c.pass}.AsSha256Mechanism()))
	case "scram-sha-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: c.user, Pass: c.pass}.AsSha512Mechanism()))
	}
	err := c.tls.With(func(cfg *tls.Config) { opts = append(opts, kgo.DialTLSConfig(cfg)) })
	return opts, err
}

// kafkaSink produces each record with its id as the key, so that a
// consumer (or a compacted topic) can drop the duplicates a resend makes:
// Kafka itself deduplicates only the idempotent producer's own retries.
type kafkaSink struct {
	cfg *kafkaConfig
	cl  *kgo.Client

	sink.Gate // Writes hold it shared; Close exclusively
}

func open(ctx context.Context, raw string, _ sink.Options) (sink.Sink, error) {
	cfg, err := parseURL(raw)
	if err != nil {
		return nil, err
	}
	kopts, err := cfg.clientOptions()
	if err != nil {
		return nil, &sink.URLError{URL: cfg.description, Reason: err.Error()}
	}
	cl, err := kgo.NewClient(kopts...)
	if err != nil {
		return nil, fmt.Errorf("kafka %s: %w", cfg.description, err)
	}
	s := &kafkaSink{cfg: cfg, cl: cl}
	if err := s.ensureTopic(ctx); err != nil {
		cl.Close()
		return nil, err
	}
	return s, nil
}

// ensureTopic checks the topic exists, creating it only with create=true.
func (s *kafkaSink) ensureTopic(ctx context.Context) error {
	c := s.cfg
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	adm := kadm.NewClient(s.cl)
	topics, err := adm.ListTopics(ctx, c.topic)
	if err != nil {
		return backoff.Retryable(fmt.Errorf("kafka %s: list topics: %w", c.description, err))
	}
	if topics.Has(c.topic) {
		if t := topics[c.topic]; t.Err != nil {
			return fmt.Errorf("kafka %s: topic %s: %w", c.description, c.topic, t.Err)
		}
		return nil
	}
	if !c.create {
		return fmt.Errorf("kafka %s: topic %s does not exist (add create=true to create it)", c.description, c.topic)
	}
	resp, err := adm.CreateTopic(ctx, c.partitions, c.replication, nil, c.topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("kafka %s: create topic %s: %w", c.description, c.topic, err)
	}
	return nil
}

func (s *kafkaSink) Describe() string { return s.cfg.description }

// maxRecordBytes is the largest record the sink produces: franz-go's
// default batch limit (ProducerBatchMaxBytes, 1,000,012 bytes), less room
// for the batch's own header. recordOverhead is a record's framing in it.
const (
	maxRecordBytes = 1_000_012 - 100
	recordOverhead = 32
)

func (s *kafkaSink) Write(ctx context.Context, recs []record.Record) error {
	release, err := s.Enter(ctx, false)
	if err != nil {
		return err
	}
	defer release()
	if len(recs) == 0 {
		return nil
	}
	krs := make([]*kgo.Record, len(recs))
	for i := range recs {
		data, err := sink.Marshal(&recs[i])
		if err != nil {
			return fmt.Errorf("kafka: %w", err)
		}
		// Checked before any is sent: a record over the batch limit is
		// refused (sink.ErrRefused) with nothing produced.
		if n := len(data) + len(recs[i].ID) + recordOverhead; n > maxRecordBytes {
			return sink.Refused(fmt.Errorf("kafka %s: record %s is %d bytes, over the %d a produce batch may hold", s.cfg.description, recs[i].ID, n, maxRecordBytes))
		}
		krs[i] = &kgo.Record{Key: []byte(recs[i].ID), Value: data}
	}
	// With the idempotent producer, franz-go cannot fail a record once its
	// request was sent (it cannot know whether the broker wrote it), so a
	// broker that vanishes mid-request would block ProduceSync for good.
	// Write waits at most delivery_timeout; a produce still in flight then
	// may land later, which is the at-least-once (keyed) promise.
	wctx, cancel := context.WithTimeout(ctx, s.cfg.deliveryTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.cl.ProduceSync(wctx, krs...).FirstErr() }()
	select {
	case err = <-done:
	case <-wctx.Done():
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return backoff.Retryable(fmt.Errorf("kafka %s: no acknowledgement within delivery_timeout (%v)", s.cfg.description, s.cfg.deliveryTimeout))
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		err = fmt.Errorf("kafka %s: produce: %w", s.cfg.description, err)
		if errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) {
			return sink.Refused(err) // the broker's (or topic's) message.max.bytes
		}
		if kerr.IsRetriable(err) || errors.Is(err, kgo.ErrRecordTimeout) || errors.Is(err, kgo.ErrRecordRetries) ||
			errors.Is(err, kgo.ErrMaxBuffered) {
			return backoff.Retryable(err)
		}
		return err
	}
	return nil
}

func (s *kafkaSink) Close() error {
	return s.Shut(func() error {
		// Every Write waited for its acks; nothing acknowledged is buffered.
		s.cl.Close()
		return nil
	})
}
