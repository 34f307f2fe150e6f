package frontier

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/litcrawl/litcrawl/internal/backoff"
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
	DefaultAckWait    = 30 * time.Second
	DefaultMaxDeliver = 5
)

// Options are the frontier's settings. A zero value leaves what exists as
// it is, and creates what does not with the default.
type Options struct {
	// minServerVersion, when set (a test that plays an old server), is
	// the oldest server Connect accepts instead of jsadmin's.
	minServerVersion string
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
	// workers holds each worker's entry, runs each worker run's summary.
	workers jetstream.KeyValue
	runs    jetstream.Stream
	// workersStream and papersStream are the buckets' streams, read by
	// subject (readLatest).
	workersStream, papersStream jetstream.Stream
	opts                        Options
	url                         string // redacted
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
	if !strings.Contains(url, "://") {
		url = "nats://" + url // as nats.go takes it; and redaction knows where user information is
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
			o.Log.Warn("frontier reconnected", "server", redact.URL(nc.ConnectedUrl()))
		}))
	if err != nil {
		return nil, fmt.Errorf("frontier %s: connect: %s (is a nats-server with JetStream on, 2.9.10 or newer, listening there?)", red, redact.Error(err, url))
	}
	if err := jsadmin.CheckVersion(nc.ConnectedServerVersion(), cmp.Or(o.minServerVersion, jsadmin.MinServerVersion)); err != nil {
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
// a cluster has no leader for it, for 30 s at most. A server without
// JetStream is refused at once, saying so.
func (f *Frontier) setup(ctx context.Context) error {
	var err error
	if f.js, err = jetstream.New(f.nc); err != nil {
		return err
	}
	return f.ensure(ctx, true)
}

// ensure opens or creates the streams, consumer and buckets; with keep it
// keeps the handles (a recreation after the server lost them keeps the
// ones it has: handles are names).
func (f *Frontier) ensure(ctx context.Context, keep bool) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r := max(f.opts.Replicas, 1)
	var (
		jobs, dead, runs, ws, ps jetstream.Stream
		cons                     jetstream.Consumer
		papers, pace, workers    jetstream.KeyValue
	)
	steps := []struct {
		what string
		do   func(ctx context.Context) error
	}{
		{"JetStream", func(ctx context.Context) error {
			_, err := f.js.AccountInfo(ctx)
			if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
				return backoff.Permanent(fmt.Errorf("JetStream is not enabled on the server: start nats-server with -js (or a jetstream block in its configuration)"))
			}
			return err
		}},
		{"jobs stream", func(ctx context.Context) (err error) {
			jobs, err = f.stream(ctx, jetstream.StreamConfig{Name: JobsStream, Subjects: []string{JobsSubject + ".>"},
				Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage, Duplicates: 24 * time.Hour, Replicas: r})
			return err
		}},
		{"dead-letter stream", func(ctx context.Context) (err error) {
			dead, err = f.stream(ctx, jetstream.StreamConfig{Name: DeadStream, Subjects: []string{DeadSubject + ".>"},
				Storage: jetstream.FileStorage, Duplicates: 24 * time.Hour, Replicas: r})
			return err
		}},
		{"consumer", func(ctx context.Context) (err error) { cons, err = f.consumer(ctx, jobs); return err }},
		{"papers bucket", func(ctx context.Context) (err error) {
			papers, err = f.bucket(ctx, jetstream.KeyValueConfig{Bucket: PapersBucket, Storage: jetstream.FileStorage, Replicas: r})
			if err == nil {
				ps, err = f.js.Stream(ctx, "KV_"+PapersBucket)
			}
			return err
		}},
		{"pace bucket", func(ctx context.Context) (err error) {
			pace, err = f.bucket(ctx, jetstream.KeyValueConfig{Bucket: PaceBucket, Storage: jetstream.MemoryStorage, TTL: time.Hour, Replicas: r})
			return err
		}},
		{"workers bucket", func(ctx context.Context) (err error) {
			workers, err = f.bucket(ctx, jetstream.KeyValueConfig{Bucket: WorkersBucket, Storage: jetstream.FileStorage, TTL: workersTTL, Replicas: r})
			if err == nil {
				ws, err = f.js.Stream(ctx, "KV_"+WorkersBucket)
			}
			return err
		}},
		{"runs stream", func(ctx context.Context) (err error) {
			runs, err = f.stream(ctx, jetstream.StreamConfig{Name: RunsStream, Subjects: []string{RunsSubject + ".>"},
				Storage: jetstream.FileStorage, MaxMsgsPerSubject: 1, MaxMsgs: MaxRuns, MaxBytes: MaxRunBytes,
				MaxMsgSize: MaxRunSummaryBytes, Discard: jetstream.DiscardOld, Replicas: r, AllowDirect: true})
			return err
		}},
	}
	for _, s := range steps {
		if err := jsadmin.Retry(ctx, s.do); err != nil {
			if s.what == "JetStream" {
				return err
			}
			return fmt.Errorf("%s: %w", s.what, err)
		}
	}
	if keep {
		f.jobs, f.dead, f.cons, f.papers, f.pace, f.workers, f.runs, f.workersStream, f.papersStream = jobs, dead, cons, papers, pace, workers, runs, ws, ps
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

// maxAckPending is the most jobs the workers hold at once, fleet-wide.
const maxAckPending = 1000

// consumer opens the workers' durable consumer, creating it with the
// options (or the defaults), and updating an existing one only for options
// that were given and differ.
func (f *Frontier) consumer(ctx context.Context, jobs jetstream.Stream) (jetstream.Consumer, error) {
	want := jetstream.ConsumerConfig{Durable: ConsumerName, AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: DefaultAckWait, MaxDeliver: DefaultMaxDeliver, FilterSubject: JobsSubject + ".>", MaxAckPending: maxAckPending}
	if f.opts.AckWait > 0 {
		want.AckWait = f.opts.AckWait
	}
	if f.opts.MaxDeliver > 0 {
		want.MaxDeliver = f.opts.MaxDeliver
	}
	c, err := jobs.Consumer(ctx, ConsumerName)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return jobs.CreateConsumer(ctx, want)
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
		return jobs.UpdateConsumer(ctx, want)
	}
	return c, nil
}

// AckWait and MaxDeliver are the consumer's settings.
func (f *Frontier) AckWait() time.Duration { return f.cons.CachedInfo().Config.AckWait }
func (f *Frontier) MaxDeliver() int        { return f.cons.CachedInfo().Config.MaxDeliver }

// Server is the URL of the server the connection is on now (it changes
// when a server goes away and the client reconnects to another).
func (f *Frontier) Server() string { return redact.URL(f.nc.ConnectedUrl()) }

// ServerVersion is the version of the server the connection is on.
func (f *Frontier) ServerVersion() string { return f.nc.ConnectedServerVersion() }

// Close closes the connection.
func (f *Frontier) Close() { f.nc.Close() }

// Closed says whether the connection is closed for good (closed here, or
// by the server), as opposed to away and reconnecting.
func (f *Frontier) Closed() bool { return f.nc.IsClosed() }

// stuck says where jobs the consumer will never deliver may lie: after a
// crash a single server can bring back messages it had already removed,
// below the consumer's ack floor (every job at or below it was acked, and
// a work queue drops what is acked). ok is false when there are none.
func (f *Frontier) stuck(ctx context.Context) (first, floor uint64, ok bool, err error) {
	ji, err := f.jobs.Info(ctx)
	if err != nil {
		return 0, 0, false, err
	}
	ci, err := f.cons.Info(ctx)
	if err != nil {
		return 0, 0, false, err
	}
	if ji.State.Msgs == 0 || ji.State.FirstSeq > ci.AckFloor.Stream {
		return 0, 0, false, nil
	}
	return ji.State.FirstSeq, min(ci.AckFloor.Stream, ji.State.FirstSeq+maxRescue-1), true, nil
}

// belowFloor visits the stuck jobs' messages, in sequence order.
func (f *Frontier) belowFloor(ctx context.Context, visit func(*jetstream.RawStreamMsg) error) error {
	first, floor, ok, err := f.stuck(ctx)
	if err != nil || !ok {
		return err
	}
	for seq := first; seq <= floor; seq++ {
		m, err := f.jobs.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if err := visit(m); err != nil {
			return err
		}
	}
	return nil
}

// maxRescue bounds the sequences one look for stuck jobs reads.
const maxRescue = 10000

// Rescue puts stuck jobs (see Status.Stuck) back in the queue: each is
// published again on its subject, unless a newer job holds the subject,
// and the stuck copy deleted. It returns how many it requeued. Workers
// call it when idle; it is safe to run from several at once (a subject's
// expected last sequence lets one copy through).
func (f *Frontier) Rescue(ctx context.Context) (int, error) {
	requeued := 0
	err := f.belowFloor(ctx, func(m *jetstream.RawStreamMsg) error {
		_, err := f.js.PublishMsg(ctx, &nats.Msg{Subject: m.Subject, Data: m.Data},
			jetstream.WithMsgID(fmt.Sprintf("rescue-%d-%s", m.Sequence, m.Header.Get(jetstream.MsgIDHeader))),
			jetstream.WithExpectLastSequencePerSubject(m.Sequence))
		switch {
		case err == nil:
			requeued++
		case jsadmin.WrongLastSequence(err): // a newer job holds the subject
		default:
			return err
		}
		if err := f.jobs.DeleteMsg(ctx, m.Sequence); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			return err
		}
		return nil
	})
	return requeued, err
}

// recreate makes the streams, consumer and buckets again when the server
// lost them (a single server restarted on a damaged store, or an operator
// deleted one); the data they held is the server's to keep.
func (f *Frontier) recreate(ctx context.Context) error { return f.ensure(ctx, false) }
