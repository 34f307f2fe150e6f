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
)

// Job is one listing page to crawl. A nightly job carries its walk whole
// (engine.Walk, embedded: its fields are the job's in the JSON), so every
// field of a walk survives the trip from worker to worker; a page job's walk
// holds only its page.
type Job struct {
	Journal int64  `json:"journal"`
	RunID   string `json:"run_id"`
	// Nightly jobs are a journal's walk: the worker that did this page
	// enqueues the next one unless the walk stops (engine.Walk.Next).
	Nightly bool `json:"nightly,omitempty"`
	engine.Walk
	// PrevPage is the walk's last page delivered: a walk whose job is
	// dead-lettered leaves its mark there (its Tail), so the next walk
	// carries on from it.
	PrevPage int `json:"prev_page,omitempty"`
}

// PageJob is the job of one page of a journal.
func PageJob(journal int64, page int, runID string) Job {
	return Job{Journal: journal, RunID: runID, Walk: engine.Walk{Page: page}}
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
	return run.StopWalk(ctx, job.Journal, job.Walk, job.PrevPage, engine.Delivered{}, false, engine.WhyFailedPage)
}
