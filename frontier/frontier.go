// Package frontier shares a crawl between many workers on many machines
// through NATS JetStream:
//
//   - jobs (one listing page each) live in a work-queue stream, one subject
//     per journal (litcrawl.jobs.<journal>); each job is published once
//     (Nats-Msg-Id = journal-page-run) and taken by one worker through a
//     durable pull consumer, which redelivers it when the worker dies;
//   - a job that keeps failing goes to the dead-letter stream
//     (litcrawl.dead.<journal>) with its last error, after max_deliver
//     tries (JetStream has no dead-letter queue: the worker publishes the
//     letter, then terminates the job; the max-deliveries advisory covers a
//     worker that died on the last try);
//   - the papers already delivered are keys of a key-value bucket, created
//     with "create if absent", so the first delivery wins fleet-wide;
//   - a nightly walk is a chain of page jobs: the worker that did page p
//     decides, from the papers it found, whether the walk goes on, and
//     enqueues page p+1. Only one job of a journal's walk exists at a
//     time, so two workers never walk the same journal;
//   - politeness is fleet-wide: a key-value entry per host holds the
//     earliest start of the next request, advanced with compare-and-set
//     (see Pacer).
package frontier

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
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

// Job is one listing page to crawl.
type Job struct {
	Journal int64  `json:"journal"`
	Page    int    `json:"page"`
	RunID   string `json:"run_id"`
	// Nightly walks go on page by page: the worker that did this page
	// enqueues the next one unless the walk should stop.
	Nightly        bool `json:"nightly,omitempty"`
	KnownRun       int  `json:"known_run,omitempty"` // all-known pages in a row so far
	StopAfterKnown int  `json:"stop_after_known,omitempty"`
	MaxPages       int  `json:"max_pages,omitempty"`
}

// MsgID makes each job's publication unique: a resend is dropped.
func (j Job) MsgID() string { return fmt.Sprintf("%d-%d-%s", j.Journal, j.Page, j.RunID) }

func jobSubject(journal int64) string { return fmt.Sprintf("%s.%d", JobsSubject, journal) }

// Options are the frontier's settings.
type Options struct {
	// AckWait is how long a worker holds a job without a heartbeat.
	AckWait time.Duration
	// MaxDeliver is the tries of a job before it is dead-lettered.
	MaxDeliver int
}

func (o *Options) defaults() {
	if o.AckWait <= 0 {
		o.AckWait = 2 * time.Minute
	}
	if o.MaxDeliver <= 0 {
		o.MaxDeliver = 5
	}
}

// Frontier is a connection to the shared frontier.
type Frontier struct {
	NC     *nats.Conn
	JS     jetstream.JetStream
	Jobs   jetstream.Stream
	Dead   jetstream.Stream
	Papers jetstream.KeyValue
	Pace   jetstream.KeyValue
	Opts   Options
}

// Connect opens the frontier at url (nats://[user:pass@]host:port), and
// creates its streams, consumer and buckets when they do not exist.
func Connect(ctx context.Context, url string, o Options) (*Frontier, error) {
	o.defaults()
	nc, err := nats.Connect(url, nats.Name("litcrawl-frontier"), nats.MaxReconnects(-1), nats.Timeout(5*time.Second))
	if err != nil {
		return nil, fmt.Errorf("frontier: connect: %s", redact(err.Error(), url))
	}
	f := &Frontier{NC: nc, Opts: o}
	if err := f.setup(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	return f, nil
}

func (f *Frontier) setup(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var err error
	if f.JS, err = jetstream.New(f.NC); err != nil {
		return err
	}
	if f.Jobs, err = f.JS.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: JobsStream, Subjects: []string{JobsSubject + ".>"},
		Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage, Duplicates: 24 * time.Hour}); err != nil {
		return fmt.Errorf("frontier: jobs stream: %w", err)
	}
	if f.Dead, err = f.JS.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: DeadStream, Subjects: []string{DeadSubject + ".>"},
		Storage: jetstream.FileStorage, Duplicates: 24 * time.Hour}); err != nil {
		return fmt.Errorf("frontier: dead-letter stream: %w", err)
	}
	if _, err = f.Jobs.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: ConsumerName, AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: f.Opts.AckWait, MaxDeliver: f.Opts.MaxDeliver, FilterSubject: JobsSubject + ".>", MaxAckPending: 1000}); err != nil {
		return fmt.Errorf("frontier: consumer: %w", err)
	}
	if f.Papers, err = f.JS.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: PapersBucket, Storage: jetstream.FileStorage}); err != nil {
		return fmt.Errorf("frontier: papers bucket: %w", err)
	}
	if f.Pace, err = f.JS.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: PaceBucket, Storage: jetstream.MemoryStorage, TTL: time.Hour}); err != nil {
		return fmt.Errorf("frontier: pace bucket: %w", err)
	}
	return nil
}

// Close closes the connection.
func (f *Frontier) Close() { f.NC.Close() }

// Enqueue publishes jobs, each once (a resend inside the duplicate window
// is dropped by the server). It returns how many were new.
func (f *Frontier) Enqueue(ctx context.Context, jobs ...Job) (int, error) {
	added := 0
	for _, j := range jobs {
		data, _ := json.Marshal(j)
		ack, err := f.JS.PublishMsg(ctx, &nats.Msg{Subject: jobSubject(j.Journal), Data: data,
			Header: nats.Header{jetstream.MsgIDHeader: []string{j.MsgID()}}})
		if err != nil {
			return added, fmt.Errorf("frontier: enqueue %s: %w", j.MsgID(), err)
		}
		if !ack.Duplicate {
			added++
		}
	}
	return added, nil
}

// paperKey is the bucket key of a paper id or DOI (keys allow only
// [-/_=.a-zA-Z0-9]).
func paperKey(kind, v string) string {
	return kind + "." + base64.RawURLEncoding.EncodeToString([]byte(v))
}

// known returns the run that first delivered the paper (by id or DOI), or
// "" when none did.
func (f *Frontier) known(ctx context.Context, id, doi string) (string, error) {
	keys := []string{paperKey("id", id)}
	if doi != "" {
		keys = append(keys, paperKey("doi", strings.ToLower(strings.TrimSpace(doi))))
	}
	for _, k := range keys {
		e, err := f.Papers.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return "", err
		}
		return string(e.Value()), nil
	}
	return "", nil
}

// markKnown records a delivered paper; the first run to record it keeps it.
func (f *Frontier) markKnown(ctx context.Context, id, doi, runID string) error {
	keys := []string{paperKey("id", id)}
	if doi != "" {
		keys = append(keys, paperKey("doi", strings.ToLower(strings.TrimSpace(doi))))
	}
	for _, k := range keys {
		if _, err := f.Papers.Create(ctx, k, []byte(runID)); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
			return err
		}
	}
	return nil
}

// DeadLetter is what the dead-letter stream holds for a job given up on.
type DeadLetter struct {
	Job        Job       `json:"job"`
	Error      string    `json:"error"`
	Deliveries uint64    `json:"deliveries"`
	At         time.Time `json:"at"`
}

func (f *Frontier) deadLetter(ctx context.Context, msgID string, dl DeadLetter) error {
	data, _ := json.Marshal(dl)
	_, err := f.JS.PublishMsg(ctx, &nats.Msg{Subject: fmt.Sprintf("%s.%d", DeadSubject, dl.Job.Journal), Data: data,
		Header: nats.Header{jetstream.MsgIDHeader: []string{"dead-" + msgID}}})
	return err
}

// JournalStatus counts one journal's jobs.
type JournalStatus struct {
	Journal int64
	Pending uint64 // in the work queue, taken or not
	Dead    uint64
}

// Status is the frontier at a glance.
type Status struct {
	Pending, InFlight, Dead uint64
	Journals                []JournalStatus
}

// Status counts jobs pending, in flight and dead-lettered, per journal.
func (f *Frontier) Status(ctx context.Context) (*Status, error) {
	st := &Status{}
	per := map[int64]*JournalStatus{}
	get := func(j int64) *JournalStatus {
		if per[j] == nil {
			per[j] = &JournalStatus{Journal: j}
		}
		return per[j]
	}
	ji, err := f.Jobs.Info(ctx, jetstream.WithSubjectFilter(JobsSubject+".>"))
	if err != nil {
		return nil, err
	}
	for subj, n := range ji.State.Subjects {
		if j, err := strconv.ParseInt(strings.TrimPrefix(subj, JobsSubject+"."), 10, 64); err == nil {
			get(j).Pending += n
		}
	}
	st.Pending = ji.State.Msgs
	di, err := f.Dead.Info(ctx, jetstream.WithSubjectFilter(DeadSubject+".>"))
	if err != nil {
		return nil, err
	}
	for subj, n := range di.State.Subjects {
		if j, err := strconv.ParseInt(strings.TrimPrefix(subj, DeadSubject+"."), 10, 64); err == nil {
			get(j).Dead += n
		}
	}
	st.Dead = di.State.Msgs
	cons, err := f.Jobs.Consumer(ctx, ConsumerName)
	if err != nil {
		return nil, err
	}
	ci, err := cons.Info(ctx)
	if err != nil {
		return nil, err
	}
	st.InFlight = uint64(ci.NumAckPending)
	for _, v := range per {
		st.Journals = append(st.Journals, *v)
	}
	sort.Slice(st.Journals, func(a, b int) bool { return st.Journals[a].Journal < st.Journals[b].Journal })
	return st, nil
}

// DeadLetters lists the dead letters, oldest first.
func (f *Frontier) DeadLetters(ctx context.Context) ([]DeadLetter, error) {
	info, err := f.Dead.Info(ctx)
	if err != nil {
		return nil, err
	}
	var out []DeadLetter
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := f.Dead.GetMsg(ctx, seq)
		if err != nil {
			continue // deleted
		}
		var dl DeadLetter
		if json.Unmarshal(m.Data, &dl) == nil {
			out = append(out, dl)
		}
	}
	return out, nil
}

// redact removes the userinfo of url from a message.
func redact(msg, url string) string {
	if i := strings.Index(url, "@"); i >= 0 {
		if j := strings.Index(url, "://"); j >= 0 && j < i {
			msg = strings.ReplaceAll(msg, url[j+3:i], "REDACTED")
		}
	}
	return msg
}
