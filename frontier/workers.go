package frontier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/litcrawl/litcrawl/internal/backoff"
	"github.com/litcrawl/litcrawl/internal/jsadmin"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Names of the fleet's view of itself: the workers bucket (one entry per
// worker, kept an hour after its last word) and the runs stream (each
// worker run's summary, the last of each run kept).
const (
	WorkersBucket = "litcrawl_workers"
	RunsStream    = "LITCRAWL_RUNS"
	RunsSubject   = "litcrawl.runs"
)

// Bounds of what the fleet keeps of itself.
const (
	workersTTL = time.Hour
	// MaxRuns and MaxRunBytes bound the runs stream: the oldest runs go
	// first.
	MaxRuns     = 10000
	MaxRunBytes = 256 << 20
	// MaxRunSummaryBytes bounds one run's summary in the stream.
	MaxRunSummaryBytes = 1 << 20
	// DefaultAnnounceEvery is how often a worker says it is alive.
	DefaultAnnounceEvery = 2 * time.Second
	// goneAfter is how many announcements a worker may miss before it is
	// shown as gone.
	goneAfter = 4
)

// Worker states, as Status shows them.
const (
	WorkerAlive  = "alive"
	WorkerGone   = "gone"   // it stopped announcing itself: killed, or cut off
	WorkerExited = "exited" // it stopped and said so
)

// Identity says who a worker is, for the operator.
type Identity struct {
	ID      string    `json:"id"` // the worker run's id
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Version string    `json:"version"`
	Started time.Time `json:"started"`
}

// HeldJob is a job a worker holds: taken, not yet acked or handed back.
type HeldJob struct {
	Journal   int64     `json:"journal"`
	Page      int       `json:"page"`
	Nightly   bool      `json:"nightly,omitempty"`
	Since     time.Time `json:"since"`
	Delivery  uint64    `json:"delivery"` // 1 for the first try
	Heartbeat time.Time `json:"last_heartbeat"`
	// Worker and WorkerState are filled in by Status.
	Worker      string `json:"worker,omitempty"`
	WorkerState string `json:"worker_state,omitempty"`
}

// WorkerInfo is a worker's entry in the workers bucket.
type WorkerInfo struct {
	Identity
	LastSeen time.Time `json:"last_seen"`
	// Every is how often the worker announces itself (seconds).
	Every  float64   `json:"announce_seconds"`
	Exited bool      `json:"exited,omitempty"`
	Jobs   JobCounts `json:"jobs"`
	// DoneLastMinute are the jobs it finished in the minute before
	// LastSeen; DonePerJournal all it finished, by journal.
	DoneLastMinute int              `json:"done_last_minute"`
	DonePerJournal map[string]int64 `json:"done_per_journal,omitempty"`
	Held           []HeldJob        `json:"held"`
	// State is filled in by Status: alive, gone or exited.
	State string `json:"state,omitempty"`
}

// state is alive, gone (no word for goneAfter announcements) or exited.
func (wi *WorkerInfo) state(now time.Time) string {
	switch {
	case wi.Exited:
		return WorkerExited
	case now.Sub(wi.LastSeen) > time.Duration(goneAfter*max(wi.Every, 0.5)*float64(time.Second)):
		return WorkerGone
	}
	return WorkerAlive
}

// presence is what a worker keeps of itself for its announcements.
type presence struct {
	// changed is signalled (without blocking) when a job is taken or
	// released, so that the worker says so at once.
	changed chan struct{}
	mu      sync.Mutex
	info    WorkerInfo
	held    map[uint64]*HeldJob // by stream sequence
	recent  []time.Time         // jobs done, the last minute
}

func newPresence(id Identity, every time.Duration) *presence {
	return &presence{info: WorkerInfo{Identity: id, Every: every.Seconds(), DonePerJournal: map[string]int64{}},
		held: map[uint64]*HeldJob{}, changed: make(chan struct{}, 1)}
}

func (p *presence) take(seq uint64, job Job, delivery uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now().UTC()
	p.held[seq] = &HeldJob{Journal: job.Journal, Page: job.Page, Nightly: job.Nightly, Since: now, Delivery: delivery, Heartbeat: now}
	p.signal()
}

func (p *presence) signal() {
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

func (p *presence) beat(seq uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if h := p.held[seq]; h != nil {
		h.Heartbeat = time.Now().UTC()
	}
}

// release forgets a job; done counts it as finished (acked).
func (p *presence) release(seq uint64, journal int64, done bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.held, seq)
	if done {
		p.recent = append(p.recent, time.Now())
		p.info.DonePerJournal[strconv.FormatInt(journal, 10)]++
	}
	p.signal()
}

// snapshot is the entry to announce.
func (p *presence) snapshot(jobs JobCounts, exited bool) WorkerInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	cut := 0
	for cut < len(p.recent) && now.Sub(p.recent[cut]) > time.Minute {
		cut++
	}
	p.recent = p.recent[cut:]
	wi := p.info
	wi.LastSeen, wi.Exited, wi.Jobs, wi.DoneLastMinute = now.UTC(), exited, jobs, len(p.recent)
	wi.DonePerJournal = make(map[string]int64, len(p.info.DonePerJournal))
	for k, v := range p.info.DonePerJournal {
		wi.DonePerJournal[k] = v
	}
	wi.Held = make([]HeldJob, 0, len(p.held))
	for _, h := range p.held {
		wi.Held = append(wi.Held, *h)
	}
	slices.SortFunc(wi.Held, func(a, b HeldJob) int { return a.Since.Compare(b.Since) })
	return wi
}

// announce puts the worker's entry in the workers bucket.
func (f *Frontier) announce(ctx context.Context, wi WorkerInfo) error {
	data, err := json.Marshal(wi)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = f.workers.Put(ctx, workerKey(wi.ID), data)
	return err
}

// workerKey is a worker's key: its id, kept to the characters a key may
// hold.
func workerKey(id string) string {
	b := []byte(id)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return "w." + string(b)
}

// Bounds of what Workers reads: entries, the bytes of one, the jobs one
// may list. A bucket others can write to may hold anything.
const (
	maxWorkersRead     = 10000
	maxWorkerBytes     = 256 << 10
	maxHeldRead        = 1000
	maxWorkerTextBytes = 200
)

// Workers are the entries of the workers bucket, oldest start first, each
// with its state as of now and its fields brought within bounds.
func (f *Frontier) Workers(ctx context.Context) ([]WorkerInfo, error) {
	var out []WorkerInfo
	now := time.Now()
	err := f.lastPerSubject(ctx, "KV_"+WorkersBucket, "$KV."+WorkersBucket+".>", maxWorkersRead, func(data []byte, h nats.Header) {
		if op := h.Get("KV-Operation"); op == "DEL" || op == "PURGE" || len(data) > maxWorkerBytes {
			return
		}
		var wi WorkerInfo
		if json.Unmarshal(data, &wi) != nil || wi.ID == "" {
			return
		}
		wi.sanitize(now)
		out = append(out, wi)
	})
	if err != nil {
		return nil, fmt.Errorf("frontier %s: workers: %w", f.url, err)
	}
	slices.SortFunc(out, func(a, b WorkerInfo) int { return a.Started.Compare(b.Started) })
	return out, nil
}

// sanitize brings an entry within what it can mean: texts cut short,
// counts from 0 to a bound, at most maxHeldRead jobs; a last word from the
// future (more than a minute ahead of this clock) counts as no word.
func (wi *WorkerInfo) sanitize(now time.Time) {
	cut := func(s string) string {
		if len(s) > maxWorkerTextBytes {
			return strings.ToValidUTF8(s[:maxWorkerTextBytes], "") + "…"
		}
		return s
	}
	wi.ID, wi.Host, wi.Version = cut(wi.ID), cut(wi.Host), cut(wi.Version)
	clamp := func(n int64) int64 { return min(max(n, 0), 1<<40) }
	wi.Jobs = JobCounts{Done: clamp(wi.Jobs.Done), PastEnd: clamp(wi.Jobs.PastEnd), Retried: clamp(wi.Jobs.Retried), DeadLettered: clamp(wi.Jobs.DeadLettered)}
	wi.DoneLastMinute = int(min(max(wi.DoneLastMinute, 0), 1<<20))
	for k, n := range wi.DonePerJournal {
		wi.DonePerJournal[k] = clamp(n)
	}
	if len(wi.DonePerJournal) > maxHeldRead {
		wi.DonePerJournal = nil
	}
	if len(wi.Held) > maxHeldRead {
		wi.Held = wi.Held[:maxHeldRead]
	}
	if !(wi.Every > 0 && wi.Every <= 3600) {
		wi.Every = DefaultAnnounceEvery.Seconds()
	}
	if wi.LastSeen.After(now.Add(time.Minute)) {
		wi.LastSeen = time.Time{}
	}
	wi.State = wi.state(now)
}

// maxLastPerSubjectBytes bounds what one lastPerSubject reads in all.
const maxLastPerSubjectBytes = 64 << 20

// lastPerSubject visits the last message of each subject of a stream
// matching filter (at most most of them, and maxLastPerSubjectBytes),
// through an ordered consumer: one request per batch of messages, whatever
// gaps older messages left. The stream is looked up again while a cluster
// elects its leader; the read itself is bounded by ctx.
func (f *Frontier) lastPerSubject(ctx context.Context, stream, filter string, most int, visit func(data []byte, h nats.Header)) error {
	type item struct {
		data []byte
		h    nats.Header
	}
	var items []item
	// Asked again, whole, while a cluster elects a leader or the client
	// moves to another server (no responder meanwhile); each try is bounded
	// by ctx alone, a long read being no failure.
	r := backoff.Retry{Policy: jsadmin.RetryWait, Retryable: func(err error) bool {
		return jsadmin.Transient(err) || errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoHeartbeat)
	}}
	err := r.Do(ctx, func(ctx context.Context, _ int) error {
		items = items[:0]
		s, err := f.js.Stream(ctx, stream)
		if err != nil {
			return err
		}
		if s.CachedInfo().State.Msgs == 0 {
			return nil
		}
		c, err := f.js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter},
			DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy})
		if err != nil {
			return err
		}
		for n, size := 0, 0; n < most && size < maxLastPerSubjectBytes; {
			if err := ctx.Err(); err != nil {
				return err
			}
			batch, err := c.Fetch(min(256, most-n), jetstream.FetchMaxWait(time.Second))
			if err != nil {
				return err
			}
			got, pending := 0, uint64(1)
			for m := range batch.Messages() {
				got, n, size = got+1, n+1, size+len(m.Data())
				if md, err := m.Metadata(); err == nil {
					pending = md.NumPending
				}
				items = append(items, item{m.Data(), m.Headers()})
			}
			if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
				return err
			}
			if got == 0 || pending == 0 {
				return nil
			}
		}
		return nil
	}, nil)
	if err != nil {
		return err
	}
	for _, it := range items {
		visit(it.data, it.h)
	}
	return nil
}

// PublishRun keeps a worker run's summary (a JSON object) in the runs
// stream; a later summary of the same run replaces it.
func (f *Frontier) PublishRun(ctx context.Context, runID string, summary []byte) error {
	if len(summary) > MaxRunSummaryBytes {
		return fmt.Errorf("run summary of %d bytes: at most %d", len(summary), MaxRunSummaryBytes)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := f.js.PublishMsg(ctx, &nats.Msg{Subject: RunsSubject + "." + workerKey(runID)[2:], Data: summary})
	return err
}

// Runs are the run summaries the runs stream holds (the last of each run,
// at most MaxRuns).
func (f *Frontier) Runs(ctx context.Context) ([][]byte, error) {
	out := [][]byte{}
	err := f.lastPerSubject(ctx, RunsStream, RunsSubject+".>", MaxRuns, func(data []byte, _ nats.Header) {
		if len(data) <= MaxRunSummaryBytes {
			out = append(out, data)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("frontier %s: runs: %w", f.url, err)
	}
	return out, nil
}
