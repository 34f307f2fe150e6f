package sink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/litcrawl/litcrawl/record"
)

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
	tls             tlsParams
	description     string
}

// parseKafkaURL reads kafka://[user:pass@]host:port[,host:port]/TOPIC?….
func parseKafkaURL(raw string) (*kafkaConfig, error) {
	red := Redact(raw)
	bad := func(format string, a ...any) error {
		return &URLError{URL: red, Reason: fmt.Sprintf(format, a...)}
	}
	c := &kafkaConfig{partitions: 1, replication: -1, deliveryTimeout: 30 * time.Second,
		compression: kgo.ZstdCompression(), maxBuffered: 10000, description: red}
	u, problem := parseBrokerURL(raw)
	if problem != "" {
		return nil, bad("%s", problem)
	}
	c.user, c.pass = u.user, u.pass
	for _, h := range u.hosts {
		if !strings.Contains(h, ":") {
			return nil, bad("expected kafka://HOST:PORT[,HOST:PORT]/TOPIC, got server %q", h)
		}
	}
	if len(u.hosts) == 0 {
		return nil, bad("expected kafka://HOST:PORT[,HOST:PORT]/TOPIC")
	}
	c.brokers = u.hosts
	c.topic = u.name
	if c.topic == "" || strings.ContainsAny(c.topic, "/ ") {
		return nil, bad("expected a topic after the brokers, e.g. kafka://127.0.0.1:9092/papers")
	}
	var err error
	for k, v := range u.query {
		val := v[len(v)-1]
		if handled, problem := c.tls.set(k, val); handled {
			if problem != "" {
				return nil, bad("%s", problem)
			}
			continue
		}
		switch k {
		case "create":
			if c.create, err = strconv.ParseBool(val); err != nil {
				return nil, bad("create=%q: expected true or false", val)
			}
		case "partitions":
			n, err := strconv.ParseInt(val, 10, 32)
			if err != nil || n < 1 {
				return nil, bad("partitions=%q: expected a number of at least 1", val)
			}
			c.partitions = int32(n)
		case "replication":
			n, err := strconv.ParseInt(val, 10, 16)
			if err != nil || n < 1 {
				return nil, bad("replication=%q: expected a number of at least 1", val)
			}
			c.replication = int16(n)
		case "delivery_timeout":
			if c.deliveryTimeout, err = time.ParseDuration(val); err != nil || c.deliveryTimeout <= 0 {
				return nil, bad("delivery_timeout=%q: expected a positive duration such as 30s", val)
			}
		case "compression":
			switch val {
			case "zstd":
				c.compression = kgo.ZstdCompression()
			case "lz4":
				c.compression = kgo.Lz4Compression()
			case "snappy":
				c.compression = kgo.SnappyCompression()
			case "gzip":
				c.compression = kgo.GzipCompression()
			case "none":
				c.compression = kgo.NoCompression()
			default:
				return nil, bad("compression=%q: expected zstd, lz4, snappy, gzip or none", val)
			}
		case "max_buffered":
			if c.maxBuffered, err = strconv.Atoi(val); err != nil || c.maxBuffered < 1 {
				return nil, bad("max_buffered=%q: expected a number of records of at least 1", val)
			}
		case "sasl":
			switch val {
			case "plain", "scram-sha-256", "scram-sha-512":
				c.sasl = val
			default:
				return nil, bad("sasl=%q: expected plain, scram-sha-256 or scram-sha-512", val)
			}
		default:
			return nil, bad("unknown parameter %q (known: create, partitions, replication, delivery_timeout, compression, max_buffered, sasl, tls, tls_ca, tls_cert, tls_key)", k)
		}
	}
	if problem := c.tls.check(); problem != "" {
		return nil, bad("%s", problem)
	}
	if c.user == "" && c.sasl != "" {
		c.user, c.pass = os.Getenv("KAFKA_USER"), os.Getenv("KAFKA_PASSWORD")
		if c.user == "" {
			return nil, bad("sasl=%s needs a user: in the URL (user:pass@) or in KAFKA_USER and KAFKA_PASSWORD", c.sasl)
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
	tlsCfg, err := c.tls.config()
	if err != nil {
		return nil, err
	}
	if tlsCfg != nil {
		opts = append(opts, kgo.DialTLSConfig(tlsCfg))
	}
	return opts, nil
}

// kafkaSink produces each record with its id as the key, so that a
// consumer (or a compacted topic) can drop the duplicates a resend makes:
// Kafka itself deduplicates only the idempotent producer's own retries.
type kafkaSink struct {
	cfg *kafkaConfig
	cl  *kgo.Client

	gate // Writes hold it shared; Close exclusively
}

func openKafka(ctx context.Context, raw string, opts Options) (*kafkaSink, error) {
	cfg, err := parseKafkaURL(raw)
	if err != nil {
		return nil, err
	}
	kopts, err := cfg.clientOptions()
	if err != nil {
		return nil, &URLError{URL: cfg.description, Reason: err.Error()}
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
		return retryable(fmt.Errorf("kafka %s: list topics: %w", c.description, err))
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

func (s *kafkaSink) Write(ctx context.Context, recs []record.Record) error {
	release, err := s.enter(ctx, false)
	if err != nil {
		return err
	}
	defer release()
	if len(recs) == 0 {
		return nil
	}
	krs := make([]*kgo.Record, len(recs))
	for i := range recs {
		data, err := json.Marshal(&recs[i])
		if err != nil {
			return fmt.Errorf("kafka: encode record %s: %w", recs[i].ID, err)
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
		return retryable(fmt.Errorf("kafka %s: no acknowledgement within delivery_timeout (%v)", s.cfg.description, s.cfg.deliveryTimeout))
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		err = fmt.Errorf("kafka %s: produce: %w", s.cfg.description, err)
		if kerr.IsRetriable(err) || errors.Is(err, kgo.ErrRecordTimeout) || errors.Is(err, kgo.ErrRecordRetries) ||
			errors.Is(err, kgo.ErrMaxBuffered) {
			return retryable(err)
		}
		return err
	}
	return nil
}

func (s *kafkaSink) Close() error {
	return s.shut(func() error {
		// Every Write waited for its acks; nothing acknowledged is buffered.
		s.cl.Close()
		return nil
	})
}
