package frontier

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
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

// Bounds of what Workers reads: entries, the bytes of one and of all, the
// jobs one may list, the journals it may count. A bucket others can write
// to may hold anything; docs/security.md lists these bounds.
const (
	MaxWorkersRead     = 2000
	maxWorkerBytes     = 256 << 10
	maxWorkersBytes    = 16 << 20
	maxHeldRead        = 64 // a worker holds at most fetch.concurrency jobs (64 at most)
	maxJournalsRead    = 10_000
	maxWorkerTextBytes = 200
)

// Workers are the entries of the workers bucket, each read once (its last
// announcement), oldest start first, each with its state as of now and its
// fields brought within bounds; notShown counts the entries not shown:
// beyond the bounds, or not a worker's entry.
func (f *Frontier) Workers(ctx context.Context) (workers []WorkerInfo, notShown int, err error) {
	now := time.Now()
	byID := map[string]int{}
	res, err := f.readLatest(ctx, f.workersStream, "$KV."+WorkersBucket+".>",
		readBounds{entries: MaxWorkersRead, entryBytes: maxWorkerBytes, bytes: maxWorkersBytes, count: true}, false,
		func(_ string, data []byte, h nats.Header) bool {
			if op := h.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
				return true // a worker's entry deleted: nothing to show
			}
			var wi WorkerInfo
			if json.Unmarshal(data, &wi) != nil || wi.ID == "" {
				return false
			}
			wi.sanitize(now)
			// Two keys for one worker (a hand-written entry): its latest word.
			if i, ok := byID[wi.ID]; ok {
				if wi.LastSeen.After(workers[i].LastSeen) {
					workers[i] = wi
				}
				return false
			}
			byID[wi.ID] = len(workers)
			workers = append(workers, wi)
			return true
		})
	if err != nil {
		return nil, 0, fmt.Errorf("frontier %s: workers bucket: %w", f.url, err)
	}
	slices.SortFunc(workers, func(a, b WorkerInfo) int { return a.Started.Compare(b.Started) })
	return workers, res.Skipped, nil
}

// sanitize brings an entry within what it can mean: texts cut short,
// counts from 0 to a bound, at most maxHeldRead jobs and maxJournalsRead
// journals; a last word from the future (more than a minute ahead of this
// clock) counts as no word.
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
	if len(wi.DonePerJournal) > maxJournalsRead {
		wi.DonePerJournal = nil
	}
	if len(wi.Held) > maxHeldRead {
		wi.Held = wi.Held[:maxHeldRead]
	}
	// A job held since, or heartbeaten, in the future: as of now.
	for i := range wi.Held {
		h := &wi.Held[i]
		if h.Since.After(now.Add(time.Minute)) {
			h.Since = now
		}
		if h.Heartbeat.After(now.Add(time.Minute)) {
			h.Heartbeat = now
		}
	}
	if !(wi.Every > 0 && wi.Every <= 3600) {
		wi.Every = DefaultAnnounceEvery.Seconds()
	}
	if wi.LastSeen.After(now.Add(time.Minute)) {
		wi.LastSeen = time.Time{}
	}
	wi.State = wi.state(now)
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

// MaxRunsReadBytes bounds the run summaries one read takes in all (a
// summary decoded takes several times its bytes).
const MaxRunsReadBytes = 16 << 20

// Runs are the run summaries the runs stream holds (the last of each run),
// newest run id first, at most MaxRuns and MaxRunsReadBytes; notRead
// counts those left out.
func (f *Frontier) Runs(ctx context.Context) (runs [][]byte, notRead int, err error) {
	runs = [][]byte{}
	res, err := f.readLatest(ctx, f.runs, RunsSubject+".>", readBounds{entries: MaxRuns, entryBytes: MaxRunSummaryBytes, bytes: MaxRunsReadBytes, count: true}, true,
		func(_ string, data []byte, _ nats.Header) bool {
			runs = append(runs, data)
			return true
		})
	if err != nil {
		return nil, 0, fmt.Errorf("frontier %s: runs stream: %w", f.url, err)
	}
	return runs, res.Skipped, nil
}
