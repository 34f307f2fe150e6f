package frontier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/litcrawl/litcrawl/crawler"
	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/sink"
)

// Worker takes jobs from the frontier, fetches and parses their pages with
// a crawler, delivers the papers not delivered before to its sinks, and
// acks a job only after every sink acknowledged. It is safe to run any
// number of workers, in any number of processes.
type Worker struct {
	F       *Frontier
	Crawler *crawler.Crawler
	Out     sink.Sink
	Log     *slog.Logger
	// Concurrency is the jobs handled at once.
	Concurrency int
	// IdleExit, when set, makes Run return after this long without a job
	// (tests, and batch use); zero runs until ctx ends.
	IdleExit time.Duration
	// OnJob, when set, is called as a job starts (tests use it).
	OnJob func(Job)
	// Stop, when closed, stops taking jobs; the jobs in hand finish.
	Stop <-chan struct{}
	// Retry bounds the backoff between deliveries of a failing job.
	RetryBase, RetryMax time.Duration

	mu   sync.Mutex
	done map[string]int // counts for the summary
}

// Counts are what a worker did.
func (w *Worker) Counts() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	for k, v := range w.done {
		out[k] = v
	}
	return out
}

func (w *Worker) count(k string, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done == nil {
		w.done = map[string]int{}
	}
	w.done[k] += n
}

// Run handles jobs until ctx ends (or the worker has been idle IdleExit).
// A job in hand when ctx ends is neither acked nor given up: the frontier
// redelivers it after its ack wait.
func (w *Worker) Run(ctx context.Context) error {
	if w.Log == nil {
		w.Log = slog.New(slog.DiscardHandler)
	}
	if w.RetryBase <= 0 {
		w.RetryBase, w.RetryMax = 5*time.Second, 5*time.Minute
	}
	cons, err := w.F.Jobs.Consumer(ctx, ConsumerName)
	if err != nil {
		return fmt.Errorf("frontier: consumer: %w", err)
	}
	adv, err := w.watchMaxDeliveries()
	if err != nil {
		return err
	}
	defer adv.Unsubscribe()
	var wg sync.WaitGroup
	errs := make(chan error, max(w.Concurrency, 1))
	for range max(w.Concurrency, 1) {
		wg.Go(func() { errs <- w.loop(ctx, cons) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return ctx.Err()
}

func (w *Worker) loop(ctx context.Context, cons jetstream.Consumer) error {
	idleSince := time.Now()
	for ctx.Err() == nil {
		select {
		case <-w.Stop:
			return nil
		default:
		}
		wait := 5 * time.Second
		if w.IdleExit > 0 {
			wait = min(wait, w.IdleExit)
		}
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(wait))
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			w.Log.Warn("frontier fetch failed", "error", err)
			continue
		}
		got := false
		for msg := range batch.Messages() {
			got = true
			if err := w.handle(ctx, msg); err != nil {
				return err
			}
		}
		if got {
			idleSince = time.Now()
		} else if w.IdleExit > 0 && time.Since(idleSince) >= w.IdleExit {
			return nil
		}
	}
	return ctx.Err()
}

// handle does one job. An error stops the worker (the state of the world
// is not what it expects); failures of the job itself are naks or dead
// letters.
func (w *Worker) handle(ctx context.Context, msg jetstream.Msg) error {
	var job Job
	if err := json.Unmarshal(msg.Data(), &job); err != nil {
		w.Log.Warn("unreadable job: dead-lettered", "error", err)
		return w.giveUp(ctx, msg, Job{}, fmt.Errorf("unreadable job: %w", err), 0)
	}
	md, err := msg.Metadata()
	if err != nil {
		return err
	}
	if w.OnJob != nil {
		w.OnJob(job)
	}
	// Heartbeats keep a slow page from being redelivered to another worker.
	hbCtx, stopHB := context.WithCancel(ctx)
	defer stopHB()
	go func() {
		t := time.NewTicker(max(w.F.Opts.AckWait/3, 10*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-hbCtx.Done():
				return
			case <-t.C:
				msg.InProgress()
			}
		}
	}()

	page, err := w.Crawler.FetchPage(ctx, job.Journal, job.Page, job.RunID)
	switch {
	case ctx.Err() != nil:
		return nil // no ack: redelivered to a living worker
	case errors.Is(err, crawler.ErrEndOfListing):
		w.count("pages_past_end", 1)
		return msg.DoubleAck(ctx)
	case err != nil:
		return w.failed(ctx, msg, job, err, md.NumDelivered)
	}

	// Deliver the papers not delivered before, then mark them known.
	var fresh []record.Record
	knownBefore := 0
	seen := map[string]bool{}
	for _, r := range page.Records {
		if seen[r.ID] {
			continue
		}
		seen[r.ID] = true
		run, err := w.F.known(ctx, r.ID, r.DOI)
		if err != nil {
			return w.failed(ctx, msg, job, fmt.Errorf("papers bucket: %w", err), md.NumDelivered)
		}
		if run != "" && run != job.RunID {
			knownBefore++
		}
		if run == "" {
			fresh = append(fresh, r)
		}
	}
	if len(fresh) > 0 {
		if err := w.Out.Write(ctx, fresh); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return w.failed(ctx, msg, job, fmt.Errorf("deliver: %w", err), md.NumDelivered)
		}
		for _, r := range fresh {
			if err := w.F.markKnown(ctx, r.ID, r.DOI, job.RunID); err != nil {
				return w.failed(ctx, msg, job, fmt.Errorf("papers bucket: %w", err), md.NumDelivered)
			}
		}
	}
	if job.Nightly {
		if err := w.continueWalk(ctx, job, page.LastPage == job.Page, len(page.Records), knownBefore); err != nil {
			return w.failed(ctx, msg, job, err, md.NumDelivered)
		}
	}
	w.count("pages", 1)
	w.count("papers_delivered", len(fresh))
	w.Log.Info("job done", "journal", job.Journal, "page", job.Page, "delivered", len(fresh))
	return msg.DoubleAck(ctx)
}

// continueWalk enqueues the next page of a nightly walk unless the walk
// reached enough all-known pages, its page limit, or the last page. The
// msg-id makes the enqueue idempotent if this job is redelivered.
func (w *Worker) continueWalk(ctx context.Context, job Job, last bool, records, knownBefore int) error {
	next := job
	next.Page++
	if records > 0 && knownBefore == records {
		next.KnownRun++
	} else {
		next.KnownRun = 0
	}
	if last || next.KnownRun >= max(job.StopAfterKnown, 1) || next.Page > job.MaxPages {
		w.Log.Info("nightly walk done", "journal", job.Journal, "page", job.Page)
		return nil
	}
	_, err := w.F.Enqueue(ctx, next)
	return err
}

// failed naks a failing job for a later try, or gives up on it.
func (w *Worker) failed(ctx context.Context, msg jetstream.Msg, job Job, cause error, deliveries uint64) error {
	if !crawler.IsRetryable(cause) && !isInfraError(cause) || deliveries >= uint64(w.F.Opts.MaxDeliver) {
		return w.giveUp(ctx, msg, job, cause, deliveries)
	}
	d := w.RetryBase << min(deliveries-1, 20)
	d = rand.N(min(d, w.RetryMax)) + w.RetryBase/2
	w.count("naks", 1)
	w.Log.Warn("job failed: retried later", "journal", job.Journal, "page", job.Page, "delivery", deliveries, "error", cause)
	return msg.NakWithDelay(d)
}

// isInfraError: a sink or bucket error, worth retrying later.
func isInfraError(err error) bool {
	var fe *crawler.FetchError
	return !errors.As(err, &fe)
}

// giveUp dead-letters a job with its error, then terminates it.
func (w *Worker) giveUp(ctx context.Context, msg jetstream.Msg, job Job, cause error, deliveries uint64) error {
	id := msg.Headers().Get(jetstream.MsgIDHeader)
	if id == "" {
		id = job.MsgID()
	}
	w.count("dead_letters", 1)
	w.Log.Warn("job dead-lettered", "journal", job.Journal, "page", job.Page, "deliveries", deliveries, "error", cause)
	if err := w.F.deadLetter(ctx, id, DeadLetter{Job: job, Error: cause.Error(), Deliveries: deliveries, At: time.Now().UTC()}); err != nil {
		return err
	}
	return msg.TermWithReason(cause.Error())
}

// watchMaxDeliveries dead-letters jobs whose worker died on their last
// try: the server then stops delivering them and says so in an advisory.
func (w *Worker) watchMaxDeliveries() (*nats.Subscription, error) {
	subj := fmt.Sprintf("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.%s.%s", JobsStream, ConsumerName)
	return w.F.NC.Subscribe(subj, func(m *nats.Msg) {
		var adv struct {
			StreamSeq  uint64 `json:"stream_seq"`
			Deliveries uint64 `json:"deliveries"`
		}
		if json.Unmarshal(m.Data, &adv) != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		raw, err := w.F.Jobs.GetMsg(ctx, adv.StreamSeq)
		if err != nil {
			return // already dead-lettered by the worker that gave up, or by another watcher
		}
		var job Job
		json.Unmarshal(raw.Data, &job)
		id := raw.Header.Get(jetstream.MsgIDHeader)
		if id == "" {
			id = "seq-" + strconv.FormatUint(adv.StreamSeq, 10)
		}
		dl := DeadLetter{Job: job, Error: "max deliveries reached: the worker holding the last try died or stalled", Deliveries: adv.Deliveries, At: time.Now().UTC()}
		if w.F.deadLetter(ctx, id, dl) == nil {
			w.F.Jobs.DeleteMsg(ctx, adv.StreamSeq)
		}
	})
}
