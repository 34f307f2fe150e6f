package frontier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

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

// maxWorkersRead bounds the entries Workers reads.
const maxWorkersRead = 10000

// Workers are the entries of the workers bucket, oldest start first, each
// with its state as of now.
func (f *Frontier) Workers(ctx context.Context) ([]WorkerInfo, error) {
	var out []WorkerInfo
	err := retry(ctx, func(ctx context.Context) error {
		out = out[:0]
		lister, err := f.workers.ListKeys(ctx)
		if err != nil {
			return err
		}
		var keys []string
		for k := range lister.Keys() {
			if len(keys) < maxWorkersRead {
				keys = append(keys, k)
			}
		}
		now := time.Now()
		for _, k := range keys {
			e, err := f.workers.Get(ctx, k)
			if errors.Is(err, jetstream.ErrKeyNotFound) {
				continue // expired meanwhile
			}
			if err != nil {
				return err
			}
			var wi WorkerInfo
			if json.Unmarshal(e.Value(), &wi) != nil || wi.ID == "" {
				continue
			}
			wi.State = wi.state(now)
			out = append(out, wi)
		}
		return nil
	})
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return []WorkerInfo{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("frontier %s: workers: %w", f.url, err)
	}
	slices.SortFunc(out, func(a, b WorkerInfo) int { return a.Started.Compare(b.Started) })
	return out, nil
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

// Runs are the run summaries the runs stream holds, oldest first (at most
// MaxRuns).
func (f *Frontier) Runs(ctx context.Context) ([][]byte, error) {
	var info *jetstream.StreamInfo
	if err := retry(ctx, func(ctx context.Context) error {
		var err error
		info, err = f.runs.Info(ctx)
		return err
	}); err != nil {
		return nil, fmt.Errorf("frontier %s: runs: %w", f.url, err)
	}
	out := [][]byte{}
	if info.State.Msgs == 0 {
		return out, nil
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && len(out) < MaxRuns; seq++ {
		m, err := f.runs.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // replaced by a later summary of its run
		}
		if err != nil {
			return nil, fmt.Errorf("frontier %s: run %d: %w", f.url, seq, err)
		}
		if len(m.Data) <= MaxRunSummaryBytes {
			out = append(out, m.Data)
		}
	}
	return out, nil
}
