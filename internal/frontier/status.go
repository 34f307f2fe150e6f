package frontier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/jsadmin"
	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DeadLetter is what the dead-letter stream holds for a job given up on.
type DeadLetter struct {
	Job        Job       `json:"job"`
	Error      string    `json:"error"`
	Deliveries uint64    `json:"deliveries"`
	At         time.Time `json:"at"`
}

// deadLetter publishes a job's dead letter, once per job publication.
func (f *Frontier) deadLetter(ctx context.Context, msgID string, dl DeadLetter) error {
	data, _ := json.Marshal(dl)
	_, err := f.js.PublishMsg(ctx, &nats.Msg{Subject: fmt.Sprintf("%s.%d", DeadSubject, dl.Job.Journal), Data: data},
		jetstream.WithMsgID("dead-"+msgID))
	return err
}

// JournalStatus counts one journal's jobs.
type JournalStatus struct {
	Journal int64  `json:"journal"`
	Pending uint64 `json:"pending"` // in the work queue, taken or not
	Walking bool   `json:"walking"` // a nightly walk is under way
	Dead    uint64 `json:"dead"`
	// Done are the jobs the workers in the workers bucket finished.
	Done int64 `json:"done"`
}

// Status is the frontier at a glance, read as one view: the workers first
// (each once, its last announcement), then the streams, so that what the
// workers say they did was enqueued before.
type Status struct {
	// Enqueued are the jobs ever put on the queue since the jobs stream
	// was made (a nightly walk's every page among them).
	Enqueued uint64          `json:"enqueued"`
	Pending  uint64          `json:"pending"`
	InFlight uint64          `json:"in_flight"`
	Dead     uint64          `json:"dead"`
	Journals []JournalStatus `json:"journals"`
	Server   string          `json:"server_version"`
	Replicas int             `json:"replicas"` // of the jobs stream
	// JobsLeader is the server leading the jobs stream (a cluster).
	JobsLeader string `json:"jobs_leader,omitempty"`
	// Stuck are jobs in the queue the consumer will not deliver (a crashed
	// single server brought them back below its ack floor); an idle worker
	// puts them back.
	Stuck uint64 `json:"stuck"`
	// AckWait is how long a job held without a heartbeat stays with its
	// worker.
	AckWait float64 `json:"ack_wait_seconds"`
	// Done are the jobs finished by the workers the workers bucket holds
	// (those seen in the last hour); PagesPerSecond their rate over the
	// last minute, and ETASeconds the pending jobs at that rate (0:
	// unknown).
	Done           int64   `json:"done"`
	PagesPerSecond float64 `json:"pages_per_second"`
	ETASeconds     float64 `json:"eta_seconds"`
	// Workers are the workers seen in the last hour: alive, gone (no
	// word for a few seconds: killed, or cut off) or exited; at most
	// MaxWorkersRead. WorkersNotShown counts the entries of the workers
	// bucket not shown: beyond the bounds of a read, or not a worker's.
	Workers         []WorkerInfo `json:"workers"`
	WorkersNotShown int          `json:"workers_not_shown,omitempty"`
	// JournalsNotShown counts the journals beyond MaxStatusJournals;
	// JournalsNotCounted says the jobs and dead letters were not counted
	// per journal (more than maxListedJobSubjects subjects to list).
	JournalsNotShown   int  `json:"journals_not_shown,omitempty"`
	JournalsNotCounted bool `json:"journals_not_counted,omitempty"`
	// Audit is what the nightly walks' audits cover, from the walk states
	// in the papers bucket (FillAudit; nil: no journal has one yet).
	Audit *engine.AuditSummary `json:"audit,omitempty"`
	// AuditError says why the walk states could not be read.
	AuditError string `json:"audit_error,omitempty"`
	// InFlightJobs are the jobs the workers say they hold, each once
	// (with the worker that heard from it last), oldest first. A gone
	// worker's jobs stay until the ack wait hands them to another.
	InFlightJobs []HeldJob `json:"in_flight_jobs"`
	// InFlightNotShown counts the jobs beyond the most the queue lets the
	// workers hold (maxAckPending): entries no worker wrote.
	InFlightNotShown int `json:"in_flight_not_shown,omitempty"`
}

// MaxStatusJournals bounds the journals a status lists.
const MaxStatusJournals = 10_000

// maxListedJobSubjects bounds the subjects of the jobs (or dead-letter)
// stream a status lists to count them per journal.
const maxListedJobSubjects = 20_000

// Status counts jobs pending, in flight and dead-lettered, per journal. It
// keeps asking while the cluster has no leader for the streams, until ctx
// ends.
func (f *Frontier) Status(ctx context.Context) (*Status, error) { return f.status(ctx, true) }

// status is Status; without workers it reads only the streams and the
// consumer (an idle worker asking whether the fleet is drained). Workers
// are read first, so that what they did never passes what was enqueued.
func (f *Frontier) status(ctx context.Context, withWorkers bool) (*Status, error) {
	st := &Status{Server: f.ServerVersion()}
	var workers []WorkerInfo
	if withWorkers {
		var err error
		if workers, st.WorkersNotShown, err = f.Workers(ctx); err != nil {
			return nil, err
		}
	}
	ji, di, ci, err := f.readQueues(ctx, st)
	if err != nil {
		return nil, fmt.Errorf("frontier %s: status: %w", f.url, err)
	}
	per := journalRows{}
	st.countQueues(ji, di, ci, per)
	if ji.State.Msgs > 0 && ji.State.FirstSeq <= ci.AckFloor.Stream {
		err := jsadmin.Retry(ctx, func(ctx context.Context) error {
			st.Stuck = 0
			return f.belowFloor(ctx, func(*jetstream.RawStreamMsg) error { st.Stuck++; return nil })
		})
		if err != nil {
			return nil, fmt.Errorf("frontier %s: status: %w", f.url, err)
		}
	}
	st.Workers, st.InFlightJobs, st.AckWait = workers, []HeldJob{}, f.AckWait().Seconds()
	st.countWorkers(time.Now(), f.AckWait(), per)
	if ji.Cluster != nil {
		st.JobsLeader = ji.Cluster.Leader
	}
	st.Journals = []JournalStatus{}
	for _, v := range per {
		st.Journals = append(st.Journals, *v)
	}
	sort.Slice(st.Journals, func(a, b int) bool { return st.Journals[a].Journal < st.Journals[b].Journal })
	if len(st.Journals) > MaxStatusJournals {
		st.JournalsNotShown += len(st.Journals) - MaxStatusJournals
		st.Journals = st.Journals[:MaxStatusJournals]
	}
	return st, nil
}

// journalRows are the status's rows by journal.
type journalRows map[int64]*JournalStatus

// get is journal j's row, made when it has none.
func (per journalRows) get(j int64) *JournalStatus {
	if per[j] == nil {
		per[j] = &JournalStatus{Journal: j}
	}
	return per[j]
}

// readQueues reads the jobs stream, the dead-letter stream and the
// consumer. Per journal, the subjects are listed, unless a stream holds
// more than maxListedJobSubjects: a listing of hundreds of thousands of
// jobs takes the server seconds a page; then the totals alone
// (st.JournalsNotCounted).
func (f *Frontier) readQueues(ctx context.Context, st *Status) (ji, di *jetstream.StreamInfo, ci *jetstream.ConsumerInfo, err error) {
	info := func(ctx context.Context, s jetstream.Stream, filter string) (*jetstream.StreamInfo, error) {
		i, err := s.Info(ctx)
		if err != nil || i.State.NumSubjects > maxListedJobSubjects {
			if err == nil {
				st.JournalsNotCounted = true
			}
			return i, err
		}
		return s.Info(ctx, jetstream.WithSubjectFilter(filter))
	}
	err = jsadmin.Retry(ctx, func(ctx context.Context) error {
		var err error
		st.JournalsNotCounted = false
		if ji, err = info(ctx, f.jobs, JobsSubject+".>"); err != nil {
			return fmt.Errorf("jobs stream: %w", err)
		}
		if di, err = info(ctx, f.dead, DeadSubject+".>"); err != nil {
			return fmt.Errorf("dead-letter stream: %w", err)
		}
		if ci, err = f.cons.Info(ctx); err != nil {
			return fmt.Errorf("consumer: %w", err)
		}
		return nil
	})
	return ji, di, ci, err
}

// countQueues counts the jobs pending and dead-lettered, in all and by
// journal.
func (st *Status) countQueues(ji, di *jetstream.StreamInfo, ci *jetstream.ConsumerInfo, per journalRows) {
	st.Enqueued = ji.State.LastSeq
	for subj, n := range ji.State.Subjects {
		if j, ok := journalOf(subj, JobsSubject); ok {
			per.get(j).Pending += n
			if strings.HasSuffix(subj, ".walk") {
				per.get(j).Walking = true
			}
		}
	}
	st.Pending, st.Replicas = ji.State.Msgs, max(ji.Config.Replicas, 1)
	for subj, n := range di.State.Subjects {
		if j, ok := journalOf(subj, DeadSubject); ok {
			per.get(j).Dead += n
		}
	}
	st.Dead = di.State.Msgs
	st.InFlight = uint64(ci.NumAckPending)
}

// countWorkers adds what the workers say: jobs done (in all, by journal,
// and the rate of the last minute) and the jobs they hold, each shown
// once.
func (st *Status) countWorkers(now time.Time, ackWait time.Duration, per journalRows) {
	lastMinute, since := 0, now
	type jobKey struct {
		journal int64
		page    int
		walk    bool
	}
	held := map[jobKey]int{}
	overflow := map[int64]bool{} // journals beyond MaxStatusJournals
	for i := range st.Workers {
		wi := &st.Workers[i]
		st.Done += wi.Jobs.Done + wi.Jobs.PastEnd
		// The rate counts every worker heard from in the last minute
		// (one that exited a moment ago did its share), over the minute
		// or over the time since the first of them started.
		if now.Sub(wi.LastSeen) < time.Minute && wi.DoneLastMinute > 0 {
			lastMinute += wi.DoneLastMinute
			if wi.Started.Before(since) {
				since = wi.Started
			}
		}
		for k, n := range wi.DonePerJournal {
			if j, err := strconv.ParseInt(k, 10, 64); err == nil && (per[j] != nil || len(per) < MaxStatusJournals) {
				per.get(j).Done += n
			} else if err == nil {
				overflow[j] = true
			}
		}
		wi.DonePerJournal = nil // counted in the journals' rows
		// A gone worker's jobs are back in the queue once the ack wait
		// has passed since their last heartbeat; an exited one holds none.
		wi.Held = slices.DeleteFunc(wi.Held, func(h HeldJob) bool {
			return wi.State == WorkerExited || (wi.State == WorkerGone && now.Sub(h.Heartbeat) > ackWait)
		})
		for _, h := range wi.Held {
			h.Worker, h.WorkerState = wi.ID, wi.State
			// A job is one message of the queue: one page's, or one
			// journal's walk. Two workers that list it (one taken over
			// from the other, or a stale word) show it once, with the
			// worker heard from it last.
			k := jobKey{h.Journal, h.Page, h.Nightly}
			if h.Nightly {
				k.page = 0
			}
			if i, ok := held[k]; ok {
				if h.Heartbeat.After(st.InFlightJobs[i].Heartbeat) {
					st.InFlightJobs[i] = h
				}
				continue
			}
			held[k] = len(st.InFlightJobs)
			st.InFlightJobs = append(st.InFlightJobs, h)
		}
	}
	sort.SliceStable(st.InFlightJobs, func(a, b int) bool { return st.InFlightJobs[a].Since.Before(st.InFlightJobs[b].Since) })
	if len(st.InFlightJobs) > maxAckPending {
		st.InFlightNotShown = len(st.InFlightJobs) - maxAckPending
		st.InFlightJobs = st.InFlightJobs[:maxAckPending]
	}
	if window := min(time.Minute, now.Sub(since)); lastMinute > 0 && window > 0 {
		st.PagesPerSecond = float64(lastMinute) / max(window.Seconds(), 1)
		st.ETASeconds = float64(st.Pending) / st.PagesPerSecond
	}
	st.JournalsNotShown = len(overflow)
}

// maxDeadErrorBytes bounds a dead letter's error as status shows it.
const maxDeadErrorBytes = 500

// DeadLetters lists the last n dead letters (all when n <= 0), oldest
// first.
func (f *Frontier) DeadLetters(ctx context.Context, n int) ([]DeadLetter, error) {
	var info *jetstream.StreamInfo
	if err := jsadmin.Retry(ctx, func(ctx context.Context) error {
		var err error
		info, err = f.dead.Info(ctx)
		return err
	}); err != nil {
		return nil, fmt.Errorf("frontier %s: dead letters: %w", f.url, err)
	}
	first := info.State.FirstSeq
	if n > 0 && info.State.LastSeq >= uint64(n) && info.State.LastSeq-uint64(n)+1 > first {
		first = info.State.LastSeq - uint64(n) + 1
	}
	out := []DeadLetter{}
	for seq := first; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := f.dead.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // deleted
		}
		if err != nil {
			return nil, fmt.Errorf("frontier %s: dead letter %d: %w", f.url, seq, err)
		}
		var dl DeadLetter
		if json.Unmarshal(m.Data, &dl) == nil {
			if len(dl.Error) > maxDeadErrorBytes {
				dl.Error = strings.ToValidUTF8(dl.Error[:maxDeadErrorBytes], "") + "…"
			}
			out = append(out, dl)
		}
	}
	return out, nil
}

// maxAuditJournals bounds the walk states a status reads.
const maxAuditJournals = 100_000

// FillAudit reads the journals' walk states and says in st what their
// audits cover.
func (f *Frontier) FillAudit(ctx context.Context, st *Status) error {
	states, _, err := f.Ledger().AllWalkStates(ctx, maxAuditJournals)
	if err != nil {
		return err
	}
	rows := make([]engine.AuditCoverage, 0, len(states))
	for j, ws := range states {
		if ws.Audit != (ledger.Audit{}) {
			rows = append(rows, engine.CoverageOf(j, ws))
		}
	}
	st.Audit = engine.SumAudits(rows)
	return nil
}
