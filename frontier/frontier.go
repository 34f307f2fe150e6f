package frontier

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/litcrawl/litcrawl/internal/jsadmin"
	"github.com/litcrawl/litcrawl/internal/redact"
)

// Names of the JetStream resources.
const (
	JobsStream   = "LITCRAWL_JOBS"
	JobsSubject  = "litcrawl.jobs"
	DeadStream   = "LITCRAWL_DEAD"
	DeadSubject  = "litcrawl.dead"
	ConsumerName = "litcrawl-workers"
	PapersBucket = "litcrawl_papers"
	PaceBucket   = "litcrawl_pace"
)

// Defaults of a frontier created without options.
const (
	DefaultAckWait    = 2 * time.Minute
	DefaultMaxDeliver = 5
)

// minServerVersion is the oldest server Connect accepts (a variable for a
// test that plays an old server).
var minServerVersion = jsadmin.MinServerVersion

// Options are the frontier's settings. A zero value leaves what exists as
// it is, and creates what does not with the default.
type Options struct {
	// AckWait is how long a worker may hold a job without a heartbeat
	// before it goes to another (default 2m).
	AckWait time.Duration
	// MaxDeliver is the tries of a job before it is dead-lettered
	// (default 5).
	MaxDeliver int
	// Replicas of every stream and bucket (1 to 5): existing ones are
	// moved to it in place where the cluster can hold it. 0 keeps what
	// exists and creates with 1.
	Replicas int
	// Knob names the setting that asks for Replicas, in messages
	// ("--replicas"; the default says both the flag and the key).
	Knob string
	// Log receives connection events; nil discards them.
	Log *slog.Logger
}

// Frontier is a connection to the shared frontier. It is safe for
// concurrent use.
type Frontier struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	jobs   jetstream.Stream
	dead   jetstream.Stream
	cons   jetstream.Consumer
	papers jetstream.KeyValue
	pace   jetstream.KeyValue
	opts   Options
	url    string // redacted
}

// Connect opens the frontier at url (nats://[user:pass@]host:port, several
// servers comma-separated), refuses a server older than 2.9.10, and
// creates its streams, consumer and buckets when they do not exist. The
// connection reconnects for ever, to any server of a cluster it learnt of.
func Connect(ctx context.Context, url string, o Options) (*Frontier, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Knob == "" {
		o.Knob = "--replicas (frontier.replicas)"
	}
	red := redact.URL(url)
	nc, err := nats.Connect(url, nats.Name("litcrawl-frontier"), nats.MaxReconnects(-1), nats.Timeout(5*time.Second),
		nats.ReconnectWait(500*time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				o.Log.Warn("frontier disconnected", "error", redact.Error(err, url))
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			o.Log.Warn("frontier reconnected", "server", nc.ConnectedUrlRedacted())
		}))
	if err != nil {
		return nil, fmt.Errorf("frontier %s: connect: %s (is a nats-server with JetStream on, 2.9.10 or newer, listening there?)", red, redact.Error(err, url))
	}
	if err := jsadmin.CheckVersion(nc.ConnectedServerVersion(), minServerVersion); err != nil {
		nc.Close()
		return nil, fmt.Errorf("frontier %s: %w", red, err)
	}
	if err := jsadmin.CheckClustered(nc.ConnectedClusterName(), o.Replicas, o.Knob); err != nil {
		nc.Close()
		return nil, fmt.Errorf("frontier %s: %w", red, err)
	}
	f := &Frontier{nc: nc, opts: o, url: red}
	if err := f.setup(ctx); err != nil {
		nc.Close()
		return nil, fmt.Errorf("frontier %s: %w", red, err)
	}
	return f, nil
}

// setup opens (or creates) every resource; each step is asked again while
// a cluster has no leader for it, for 30 s at most.
func (f *Frontier) setup(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var err error
	if f.js, err = jetstream.New(f.nc); err != nil {
		return err
	}
	r := max(f.opts.Replicas, 1)
	steps := []struct {
		what string
		do   func(ctx context.Context) error
	}{
		{"jobs stream", func(ctx context.Context) (err error) {
			f.jobs, err = f.stream(ctx, jetstream.StreamConfig{Name: JobsStream, Subjects: []string{JobsSubject + ".>"},
				Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage, Duplicates: 24 * time.Hour, Replicas: r})
			return err
		}},
		{"dead-letter stream", func(ctx context.Context) (err error) {
			f.dead, err = f.stream(ctx, jetstream.StreamConfig{Name: DeadStream, Subjects: []string{DeadSubject + ".>"},
				Storage: jetstream.FileStorage, Duplicates: 24 * time.Hour, Replicas: r})
			return err
		}},
		{"consumer", func(ctx context.Context) (err error) { f.cons, err = f.consumer(ctx); return err }},
		{"papers bucket", func(ctx context.Context) (err error) {
			f.papers, err = f.bucket(ctx, jetstream.KeyValueConfig{Bucket: PapersBucket, Storage: jetstream.FileStorage, Replicas: r})
			return err
		}},
		{"pace bucket", func(ctx context.Context) (err error) {
			f.pace, err = f.bucket(ctx, jetstream.KeyValueConfig{Bucket: PaceBucket, Storage: jetstream.MemoryStorage, TTL: time.Hour, Replicas: r})
			return err
		}},
	}
	for _, s := range steps {
		if err := retry(ctx, s.do); err != nil {
			return fmt.Errorf("%s: %w", s.what, err)
		}
	}
	return nil
}

// stream opens a stream, creating it when it does not exist, and moves it
// to the asked replica count.
func (f *Frontier) stream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	return ensure(ctx, f, cfg.Name, cfg.Replicas, jetstream.ErrStreamNotFound,
		func() (jetstream.Stream, error) { return f.js.Stream(ctx, cfg.Name) },
		func() (jetstream.Stream, error) { return f.js.CreateStream(ctx, cfg) })
}

// bucket opens a key-value bucket, creating it when it does not exist,
// and moves its stream to the asked replica count.
func (f *Frontier) bucket(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	return ensure(ctx, f, "KV_"+cfg.Bucket, cfg.Replicas, jetstream.ErrBucketNotFound,
		func() (jetstream.KeyValue, error) { return f.js.KeyValue(ctx, cfg.Bucket) },
		func() (jetstream.KeyValue, error) { return f.js.CreateKeyValue(ctx, cfg) })
}

// ensure opens a resource backed by a stream, creates it when open says it
// does not exist, and moves an existing one's stream to the replica count
// the options ask for.
func ensure[T any](ctx context.Context, f *Frontier, stream string, replicas int, notFound error, open, create func() (T, error)) (T, error) {
	r, err := open()
	if errors.Is(err, notFound) {
		if r, err = create(); err != nil {
			return r, fmt.Errorf("%w%s", err, jsadmin.ReplicasHint(err, replicas, f.opts.Knob))
		}
		return r, nil
	}
	if err != nil {
		return r, err
	}
	changed, err := jsadmin.EnsureReplicas(ctx, f.js, stream, f.opts.Replicas, f.opts.Knob)
	if changed {
		f.opts.Log.Warn("frontier stream moved to a new replica count", "stream", stream, "replicas", f.opts.Replicas)
	}
	return r, err
}

// consumer opens the workers' durable consumer, creating it with the
// options (or the defaults), and updating an existing one only for options
// that were given and differ.
func (f *Frontier) consumer(ctx context.Context) (jetstream.Consumer, error) {
	want := jetstream.ConsumerConfig{Durable: ConsumerName, AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: DefaultAckWait, MaxDeliver: DefaultMaxDeliver, FilterSubject: JobsSubject + ".>", MaxAckPending: 1000}
	if f.opts.AckWait > 0 {
		want.AckWait = f.opts.AckWait
	}
	if f.opts.MaxDeliver > 0 {
		want.MaxDeliver = f.opts.MaxDeliver
	}
	c, err := f.jobs.Consumer(ctx, ConsumerName)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return f.jobs.CreateConsumer(ctx, want)
	}
	if err != nil {
		return nil, err
	}
	have := c.CachedInfo().Config
	if (f.opts.AckWait > 0 && have.AckWait != want.AckWait) || (f.opts.MaxDeliver > 0 && have.MaxDeliver != want.MaxDeliver) {
		if f.opts.AckWait <= 0 {
			want.AckWait = have.AckWait
		}
		if f.opts.MaxDeliver <= 0 {
			want.MaxDeliver = have.MaxDeliver
		}
		return f.jobs.UpdateConsumer(ctx, want)
	}
	return c, nil
}

// AckWait and MaxDeliver are the consumer's settings.
func (f *Frontier) AckWait() time.Duration { return f.cons.CachedInfo().Config.AckWait }
func (f *Frontier) MaxDeliver() int        { return f.cons.CachedInfo().Config.MaxDeliver }

// Server is the URL of the server the connection is on now (it changes
// when a server goes away and the client reconnects to another).
func (f *Frontier) Server() string { return f.nc.ConnectedUrlRedacted() }

// ServerVersion is the version of the server the connection is on.
func (f *Frontier) ServerVersion() string { return f.nc.ConnectedServerVersion() }

// Close closes the connection.
func (f *Frontier) Close() { f.nc.Close() }
