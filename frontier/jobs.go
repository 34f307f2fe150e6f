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

	"github.com/litcrawl/litcrawl/engine"
	"github.com/litcrawl/litcrawl/internal/jsadmin"
	"github.com/litcrawl/litcrawl/ledger"
)

// Job is one listing page to crawl.
type Job struct {
	Journal int64  `json:"journal"`
	Page    int    `json:"page"`
	RunID   string `json:"run_id"`
	// Nightly jobs are a journal's walk: the worker that did this page
	// enqueues the next one unless the walk stops (engine.Walk.Next).
	Nightly         bool `json:"nightly,omitempty"`
	KnownRun        int  `json:"known_run,omitempty"`  // all-known pages in a row so far
	RepeatRun       int  `json:"repeat_run,omitempty"` // pages in a row with nothing new to the run
	StopAfterKnown  int  `json:"stop_after_known,omitempty"`
	StopAfterRepeat int  `json:"stop_after_repeat,omitempty"`
	MaxPages        int  `json:"max_pages,omitempty"`
	Walked          int  `json:"walked,omitempty"` // pages walked so far
	// Marks and Marked are the walk's (engine.Walk): where earlier walks
	// stopped at MaxPages, until this walk has passed them.
	Marks   []ledger.WalkMark `json:"marks,omitempty"`
	Marked  bool              `json:"marked,omitempty"`
	PastTop bool              `json:"past_top,omitempty"`
	InGap   bool              `json:"in_gap,omitempty"`
	Tail    []string          `json:"tail,omitempty"`
	// SkipFrom, Sweep and Reached are the walk's (engine.Walk): a jump
	// found to have landed below its mark goes back.
	SkipFrom int  `json:"skip_from,omitempty"`
	Sweep    bool `json:"sweep,omitempty"`
	Reached  int  `json:"reached,omitempty"`
	// Recent and RecentLast: the papers of the walk's last two pages.
	Recent     []string `json:"recent,omitempty"`
	RecentLast int      `json:"recent_last,omitempty"`
	Shifted    bool     `json:"shifted,omitempty"`
	MarkAt     int      `json:"mark_at,omitempty"`
	// PrevPage is the walk's last page delivered: a walk whose job is
	// dead-lettered leaves its mark there (its Tail), so the next walk
	// carries on from it.
	PrevPage int `json:"prev_page,omitempty"`
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
		return fmt.Sprintf("walk-%d-%d-%s", j.Journal, j.Page, j.RunID)
	}
	return fmt.Sprintf("%d-%d-%s", j.Journal, j.Page, j.RunID)
}

// Walk is the nightly walk a job stands at.
func (j Job) Walk() engine.Walk {
	w := engine.Walk{Page: j.Page, KnownRun: j.KnownRun, RepeatRun: j.RepeatRun, Walked: j.Walked, StopAfterKnown: j.StopAfterKnown,
		StopAfterRepeat: j.StopAfterRepeat, MaxPages: j.MaxPages, Marks: j.Marks, Marked: j.Marked, PastTop: j.PastTop, InGap: j.InGap, Tail: j.Tail,
		SkipFrom: j.SkipFrom, Sweep: j.Sweep, Reached: j.Reached, Recent: j.Recent, RecentLast: j.RecentLast, Shifted: j.Shifted, MarkAt: j.MarkAt}
	// A job enqueued before walks counted their pages: its page is how
	// many it walked.
	if w.Walked == 0 && w.Page > 1 && !w.Marked {
		w.Walked = w.Page - 1
	}
	return w
}

// WithWalk is the job at the walk's next page.
func (j Job) WithWalk(w engine.Walk) Job {
	j.Page, j.KnownRun, j.RepeatRun, j.Walked, j.Marks, j.Marked, j.PastTop, j.InGap, j.Tail = w.Page, w.KnownRun, w.RepeatRun, w.Walked, w.Marks, w.Marked, w.PastTop, w.InGap, w.Tail
	j.SkipFrom, j.Sweep, j.Reached, j.Recent, j.RecentLast = w.SkipFrom, w.Sweep, w.Reached, w.Recent, w.RecentLast
	j.Shifted, j.MarkAt = w.Shifted, w.MarkAt
	return j
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
	var cur Job
	if json.Unmarshal(last.Data, &cur) == nil && cur.RunID == next.RunID && cur.Page >= next.Page {
		return nil // this page's successor is there already
	}
	return fmt.Errorf("frontier: continue the walk of journal %d at page %d: another job holds the walk (run %s page %d)",
		next.Journal, next.Page, cur.RunID, cur.Page)
}

// cutWalk ends the nightly walk of a dead-lettered job as a walk cut
// short at a failed page: a mark at its last page delivered, for the next
// walk to carry on from (engine.Run.StopWalk).
func cutWalk(ctx context.Context, run *engine.Run, job Job) error {
	if !job.Nightly || run == nil {
		return nil
	}
	return run.StopWalk(ctx, job.Journal, job.Walk(), job.PrevPage, engine.Delivered{}, false, engine.WhyFailedPage)
}
