package frontier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/jsadmin"
	"github.com/litcrawl/litcrawl/internal/ledger"
)

// JobVersion is the format of the job messages this version publishes
// (the "v" field). A job without "v" is of the format before (1: a
// walk's fields at the job's top level); a worker still runs it during an
// upgrade (ReadJob). A job of a later format is refused with its reason
// (a newer version of crawl published it).
const JobVersion = 2

// Job is one listing page to crawl. Its JSON is the fleet's wire format:
// a nightly job carries its walk in Walk (WalkMsg, the walk's fields as
// the wire names them), so every field of a walk survives the trip from
// worker to worker; a page job has no walk.
type Job struct {
	V       int    `json:"v"`
	Journal int64  `json:"journal"`
	RunID   string `json:"run_id"`
	Page    int    `json:"page"`
	// Nightly jobs are a journal's walk: the worker that did this page
	// enqueues the next one unless the walk stops (engine.Walk.Next).
	Nightly bool     `json:"nightly,omitempty"`
	Walk    *WalkMsg `json:"walk,omitempty"`
	// PrevPage is the walk's last page delivered: a walk whose job is
	// dead-lettered leaves its mark there (its Tail), so the next walk
	// carries on from it.
	PrevPage int `json:"prev_page,omitempty"`
}

// WalkMsg is a nightly walk on the wire (engine.Walk; its page is the
// job's).
type WalkMsg struct {
	Phase           engine.Phase     `json:"phase"`
	StopAfterKnown  int              `json:"stop_after_known"`
	StopAfterRepeat int              `json:"stop_after_repeat,omitempty"`
	MaxPages        int              `json:"max_pages"`
	AuditPages      int              `json:"audit_pages,omitempty"`
	Walked          int              `json:"walked,omitempty"`
	KnownRun        int              `json:"known_run,omitempty"`
	RepeatRun       int              `json:"repeat_run,omitempty"`
	Reached         int              `json:"reached,omitempty"`
	Contig          int              `json:"contig,omitempty"`
	State           ledger.WalkState `json:"state,omitzero"`
	NewHead         []string         `json:"new_head,omitempty"`
	PerPage         int              `json:"per_page,omitempty"`
	Bound           int              `json:"bound,omitempty"`
	Target          int              `json:"target,omitempty"`
	SkipFrom        int              `json:"skip_from,omitempty"`
	Prev            []string         `json:"prev,omitempty"`
	Tail            []string         `json:"tail,omitempty"`
	Back            int              `json:"back,omitempty"`
	Looking         *ledger.WalkMark `json:"looking,omitempty"`
	Gained          int              `json:"gained,omitempty"`
	Unproven        bool             `json:"unproven,omitempty"`
	Closed          int              `json:"closed,omitempty"`
	Spent           int              `json:"spent,omitempty"`
	RecentPage      int              `json:"recent_page,omitempty"`
	Met             bool             `json:"met,omitempty"`
	Shift           int              `json:"shift,omitempty"`
	Recent          []string         `json:"recent,omitempty"`
	RecentAt        []int            `json:"recent_at,omitempty"`
	RecentLast      int              `json:"recent_last,omitempty"`
	LastPage        int              `json:"last_page,omitempty"`
	EndBefore       int              `json:"end_before,omitempty"`
	AuditLeft       int              `json:"audit_left,omitempty"`
	AuditFrom       int              `json:"audit_from,omitempty"`
}

// PageJob is the job of one page of a journal.
func PageJob(journal int64, page int, runID string) Job {
	return Job{V: JobVersion, Journal: journal, RunID: runID, Page: page}
}

// WalkJob is the job of a journal's walk w.
func WalkJob(journal int64, runID string, w engine.Walk) Job {
	return Job{V: JobVersion, Journal: journal, RunID: runID, Page: w.Page, Nightly: true, Walk: walkMsg(w)}
}

// Walk is the job's walk (a nightly job's).
func (j Job) walk() engine.Walk {
	m := j.Walk
	if m == nil {
		return engine.Walk{Page: j.Page}
	}
	return engine.Walk{Page: j.Page, Phase: m.Phase, StopAfterKnown: m.StopAfterKnown, StopAfterRepeat: m.StopAfterRepeat,
		MaxPages: m.MaxPages, AuditPages: m.AuditPages, Walked: m.Walked, KnownRun: m.KnownRun, RepeatRun: m.RepeatRun,
		Reached: m.Reached, Contig: m.Contig, State: m.State.Clone(), NewHead: m.NewHead, PerPage: m.PerPage, Bound: m.Bound,
		Target: m.Target, SkipFrom: m.SkipFrom, Prev: m.Prev, Tail: m.Tail, Back: m.Back, Looking: m.Looking, Gained: m.Gained, Unproven: m.Unproven, Closed: m.Closed, Spent: m.Spent, RecentPage: m.RecentPage, Met: m.Met,
		LastPage: m.LastPage, EndBefore: m.EndBefore, Shift: m.Shift, Recent: m.Recent, RecentAt: m.RecentAt, RecentLast: m.RecentLast,
		AuditLeft: m.AuditLeft, AuditFrom: m.AuditFrom}
}

// withWalk is the job of the walk's next page.
func (j Job) withWalk(w engine.Walk) Job {
	j.V, j.Page, j.Walk = JobVersion, w.Page, walkMsg(w)
	return j
}

func walkMsg(w engine.Walk) *WalkMsg {
	return &WalkMsg{Phase: w.Phase, StopAfterKnown: w.StopAfterKnown, StopAfterRepeat: w.StopAfterRepeat, MaxPages: w.MaxPages,
		AuditPages: w.AuditPages, Walked: w.Walked, KnownRun: w.KnownRun, RepeatRun: w.RepeatRun, Reached: w.Reached,
		Contig: w.Contig, State: w.State, NewHead: w.NewHead, PerPage: w.PerPage, Bound: w.Bound, Target: w.Target,
		SkipFrom: w.SkipFrom, Prev: w.Prev, Tail: w.Tail, Back: w.Back, Looking: w.Looking, Gained: w.Gained, Unproven: w.Unproven, Closed: w.Closed, Spent: w.Spent, RecentPage: w.RecentPage, Met: w.Met, LastPage: w.LastPage, EndBefore: w.EndBefore,
		Shift: w.Shift, Recent: w.Recent, RecentAt: w.RecentAt, RecentLast: w.RecentLast, AuditLeft: w.AuditLeft,
		AuditFrom: w.AuditFrom}
}

// jobV1 is a job of format 1 (no "v"): a walk's fields at the top level.
type jobV1 struct {
	Journal         int64    `json:"journal"`
	RunID           string   `json:"run_id"`
	Nightly         bool     `json:"nightly"`
	Page            int      `json:"page"`
	StopAfterKnown  int      `json:"stop_after_known"`
	StopAfterRepeat int      `json:"stop_after_repeat"`
	MaxPages        int      `json:"max_pages"`
	Marks           []v1Mark `json:"marks"`
	InGap           bool     `json:"in_gap"`
	Sweep           bool     `json:"sweep"`
	SkipFrom        int      `json:"skip_from"`
	PrevPage        int      `json:"prev_page"`
}

type v1Mark struct {
	Page   int      `json:"page"`
	Papers []string `json:"papers"`
	Loose  bool     `json:"loose"`
	Gap    []string `json:"gap"`
}

// ReadJob reads a job message of this format or of format 1. A nightly
// job of format 1 (published by the version before, during an upgrade)
// walks again from page 1 with its limits and marks: pages it walked
// before hold known papers, so nothing is delivered twice, and the walk's
// state of that format is not one this version can carry on.
func ReadJob(data []byte) (Job, error) {
	var head struct {
		V *int `json:"v"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return Job{}, errors.New("unreadable job: expected a JSON job")
	}
	switch {
	case head.V != nil && *head.V == JobVersion:
		var j Job
		if err := json.Unmarshal(data, &j); err != nil {
			return Job{}, errors.New("unreadable job: expected a JSON job of format 2")
		}
		return j, nil
	case head.V != nil:
		return Job{}, fmt.Errorf("job of format %d: expected format 1 or %d (a newer version of crawl published it: upgrade the workers)", *head.V, JobVersion)
	}
	var old jobV1
	if err := json.Unmarshal(data, &old); err != nil {
		return Job{}, errors.New("unreadable job: expected a JSON job of format 1")
	}
	j := Job{V: JobVersion, Journal: old.Journal, RunID: old.RunID, Page: old.Page, Nightly: old.Nightly}
	if !old.Nightly {
		return j, nil
	}
	if (old.InGap || old.Sweep || old.SkipFrom > 0) && len(old.Marks) == 0 {
		return Job{}, errors.New("job in_gap, sweep and skip_from: expected none without marks (format 1)")
	}
	var s ledger.WalkState
	for _, m := range old.Marks {
		papers := m.Papers
		if m.Loose && len(m.Gap) > 0 {
			papers = m.Gap
		}
		s.Marks = append(s.Marks, ledger.WalkMark{Page: m.Page, Papers: papers})
	}
	w := engine.NewWalk(engine.Limits{StopAfterKnownPages: old.StopAfterKnown, MaxPages: old.MaxPages, StopAfterRepeatPages: old.StopAfterRepeat}, 0, s)
	return j.withWalk(w), nil
}

// Subject is the job's subject: one per page of a journal
// (litcrawl.jobs.<journal>.<page>), and one per journal's nightly walk
// (litcrawl.jobs.<journal>.walk), whatever page the walk is at.
func (j Job) Subject() string {
	if j.Nightly {
		return fmt.Sprintf("%s.%d.walk", JobsSubject, j.Journal)
	}
	return fmt.Sprintf("%s.%d.%d", JobsSubject, j.Journal, j.Page)
}

// MsgID names one publication of the job; the dead letter of a job is
// deduplicated by it.
func (j Job) MsgID() string {
	if j.Nightly {
		// A walk may read a page twice (back after a jump): its step
		// tells the two apart.
		return fmt.Sprintf("walk-%d-%d-%s-%d", j.Journal, j.Page, j.RunID, j.step())
	}
	return fmt.Sprintf("%d-%d-%s", j.Journal, j.Page, j.RunID)
}

// step orders the jobs of one walk: its pages walked, then the audit's
// pages after them.
func (j Job) step() int {
	if j.Walk == nil {
		return j.Page
	}
	if j.Walk.Phase == engine.PhaseAudit {
		return 1<<40 + j.Page
	}
	return j.Walk.Walked
}

// journalOf reads the journal from a job or dead-letter subject.
func journalOf(subject, prefix string) (int64, bool) {
	rest, ok := strings.CutPrefix(subject, prefix+".")
	if !ok {
		return 0, false
	}
	tok, _, _ := strings.Cut(rest, ".")
	j, err := strconv.ParseInt(tok, 10, 64)
	return j, err == nil
}

// Enqueued counts what Enqueue did.
type Enqueued struct {
	Added int // jobs published
	// Queued were already there: pending or in flight (for a walk: the
	// journal's walk is under way).
	Queued int
}

// Enqueue publishes jobs. A job is published only while its subject holds
// no message: enqueueing a page whose job is pending or in flight adds
// nothing, and so does a walk of a journal whose walk is under way. Once a
// job is done (or dead-lettered) its page can be enqueued again.
func (f *Frontier) Enqueue(ctx context.Context, jobs ...Job) (Enqueued, error) {
	return f.EnqueueSeq(ctx, slices.Values(jobs))
}

// EnqueueSeq is Enqueue over jobs made one at a time (a long range of
// pages is never held in memory); it stops when ctx ends, with what it
// did so far.
func (f *Frontier) EnqueueSeq(ctx context.Context, jobs iter.Seq[Job]) (Enqueued, error) {
	var n Enqueued
	for j := range jobs {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		if err := j.Validate(); err != nil {
			return n, fmt.Errorf("frontier: enqueue journal %d page %d: %w", j.Journal, j.Page, err)
		}
		data, _ := json.Marshal(j)
		ack, err := f.js.PublishMsg(ctx, &nats.Msg{Subject: j.Subject(), Data: data},
			jetstream.WithMsgID(j.MsgID()), jetstream.WithExpectLastSequencePerSubject(0))
		switch {
		case jsadmin.WrongLastSequence(err):
			n.Queued++
		case err != nil:
			return n, fmt.Errorf("frontier: enqueue journal %d page %d: %w", j.Journal, j.Page, err)
		case ack.Duplicate:
			n.Queued++
		default:
			n.Added++
		}
	}
	return n, nil
}

// continueWalk replaces the job at sequence seq on its walk subject by
// the walk's next page: published only if seq is still the subject's last
// message, so a walk never forks. A job redelivered after its successor was
// published finds the successor (or a later page of the same run) there,
// and adds nothing.
func (f *Frontier) continueWalk(ctx context.Context, seq uint64, next Job) error {
	data, _ := json.Marshal(next)
	_, err := f.js.PublishMsg(ctx, &nats.Msg{Subject: next.Subject(), Data: data},
		jetstream.WithMsgID(next.MsgID()), jetstream.WithExpectLastSequencePerSubject(seq))
	if err == nil || !jsadmin.WrongLastSequence(err) {
		return err
	}
	last, gerr := f.jobs.GetLastMsgForSubject(ctx, next.Subject())
	if errors.Is(gerr, jetstream.ErrMsgNotFound) {
		return nil // the walk's job is gone (acked meanwhile): nothing to continue
	}
	if gerr != nil {
		return fmt.Errorf("frontier: continue the walk of journal %d: %w (and reading the walk: %v)", next.Journal, err, gerr)
	}
	cur, rerr := ReadJob(last.Data)
	if rerr == nil && cur.RunID == next.RunID && cur.step() >= next.step() {
		return nil // this page's successor is there already
	}
	return fmt.Errorf("frontier: continue the walk of journal %d at page %d: another job holds the walk (run %s page %d)",
		next.Journal, next.Page, cur.RunID, cur.Page)
}

// cutWalk ends the nightly walk of a dead-lettered job as a walk cut
// short at a failed page: a mark at its last page delivered, for the next
// walk to carry on from (engine.Walk.Stop). A dead-lettered page of the
// audit is passed over (engine.Walk.PassOver). The job of the walk's
// audit, when one follows, is given for the caller to publish once the
// dead-lettered job has left the walk's subject.
func cutWalk(ctx context.Context, run *engine.Run, job Job) (audit *Job, err error) {
	if !job.Nightly || run == nil || job.Walk == nil {
		return nil, nil
	}
	walk := job.walk()
	if walk.Phase == engine.PhaseAudit {
		walk = walk.PassOver()
	}
	next := walk.Stop(engine.Delivered{}, job.PrevPage, engine.WhyFailedPage)
	if err := run.StepWalk(ctx, job.Journal, next, false); err != nil {
		return nil, err
	}
	if walk.Phase != engine.PhaseAudit && next.Phase == engine.PhaseAudit {
		nj := job.withWalk(next)
		nj.PrevPage = 0
		if nj.Validate() == nil {
			return &nj, nil
		}
	}
	return nil, nil
}
