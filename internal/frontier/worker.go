package frontier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/litcrawl/litcrawl/fetch"
	"github.com/litcrawl/litcrawl/internal/backoff"
	"github.com/litcrawl/litcrawl/internal/config"
	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/ledger"
)

// WorkerOptions make a worker.
type WorkerOptions struct {
	// Run is the engine run the worker's pages go through: a fetcher
	// (with the fleet's Pacer), the frontier's Ledger and the sinks.
	Run *engine.Run
	Log *slog.Logger
	// Concurrency is the jobs handled at once (at least 1).
	Concurrency int
	// IdleExit, when set, makes Run return after this long without a job
	// (batch use, tests); zero runs until ctx ends.
	IdleExit time.Duration
	// OnJob, when set, is called as a job starts (tests use it).
	OnJob func(Job)
	// Stop, when closed, stops taking jobs; the jobs in hand finish.
	Stop <-chan struct{}
	// Retry spaces the deliveries of a failing job (default 5s to 5m).
	Retry backoff.Policy
	// Identity names the worker in the workers bucket (crawl status);
	// AnnounceEvery is how often it says it is alive and what it holds
	// (default 2s, or a tenth of the ack wait when that is shorter).
	Identity      Identity
	AnnounceEvery time.Duration
	// Summary, when set, is the worker run's summary so far (a JSON
	// object), kept in the runs stream every few announcements, so that
	// a worker killed mid-run leaves its counts.
	Summary func() []byte
}

// JobCounts are what a worker did with its jobs.
type JobCounts struct {
	Done         int64 `json:"done"`
	PastEnd      int64 `json:"past_end"`
	Retried      int64 `json:"retried"`
	DeadLettered int64 `json:"dead_lettered"`
}

// Worker takes jobs from the frontier and does each through the engine's
// page step: fetch, deliver the papers the fleet has not delivered, commit
// them to the fleet's ledger. It acks a job only after that; a failing job
// is retried later, and given up on (dead-lettered) when it fails
// permanently or after the consumer's max deliveries. Any number of
// workers, in any number of processes, may run at once.
type Worker struct {
	f *Frontier
	o WorkerOptions

	done, pastEnd, retried, dead atomic.Int64
	presence                     *presence
	firstCrawl                   sync.Once // a first crawl is said once
}

// NewWorker makes a worker over the frontier.
func (f *Frontier) NewWorker(o WorkerOptions) *Worker {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Retry.Base <= 0 {
		o.Retry = backoff.Policy{Base: 5 * time.Second, Max: 5 * time.Minute}
	}
	o.Concurrency = max(o.Concurrency, 1)
	if o.AnnounceEvery <= 0 {
		// Often enough that a dead worker shows as gone well before its
		// jobs come back (goneAfter announcements < the ack wait).
		o.AnnounceEvery = min(DefaultAnnounceEvery, max(f.AckWait()/10, 100*time.Millisecond))
	}
	if o.Identity.ID == "" {
		o.Identity.ID = fmt.Sprintf("worker-%d", time.Now().UnixNano())
	}
	if o.Identity.Started.IsZero() {
		o.Identity.Started = time.Now().UTC()
	}
	return &Worker{f: f, o: o, presence: newPresence(o.Identity, o.AnnounceEvery)}
}

// Jobs counts the jobs the worker handled.
func (w *Worker) Jobs() JobCounts {
	return JobCounts{Done: w.done.Load(), PastEnd: w.pastEnd.Load(), Retried: w.retried.Load(), DeadLettered: w.dead.Load()}
}

// Run handles jobs until ctx ends, Stop closes, or the worker has been idle
// IdleExit. A job in hand when ctx ends is neither acked nor given up: the
// frontier redelivers it after its ack wait. A lost connection is waited
// out (the client reconnects, to any server of a cluster).
func (w *Worker) Run(ctx context.Context) error {
	adv, err := w.watchMaxDeliveries()
	if err != nil {
		return err
	}
	defer adv.Unsubscribe()
	stopAnnouncing := w.announceLoop()
	var wg sync.WaitGroup
	for range w.o.Concurrency {
		wg.Go(func() { w.loop(ctx) })
	}
	wg.Wait()
	stopAnnouncing()
	if errors.Is(ctx.Err(), context.Canceled) {
		return nil
	}
	return ctx.Err()
}

func (w *Worker) loop(ctx context.Context) {
	idleSince := time.Now()
	var lastRescue, lastSaid time.Time
	for ctx.Err() == nil {
		select {
		case <-w.o.Stop:
			return
		default:
		}
		wait := 5 * time.Second
		if w.o.IdleExit > 0 {
			wait = min(wait, w.o.IdleExit)
		}
		batch, err := w.f.cons.Fetch(1, jetstream.FetchMaxWait(wait))
		got := false
		if err == nil {
			for msg := range batch.Messages() {
				got = true
				w.handle(ctx, msg)
			}
			err = batch.Error()
		}
		if err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
			if ctx.Err() != nil {
				return
			}
			w.lost(ctx, err)
			continue
		}
		if got {
			idleSince = time.Now()
			continue
		}
		// A fetch from a consumer deleted before it began may just time
		// out: an idle worker asks whether its consumer is still there,
		// and makes it again (counting that as activity) when it is not.
		if _, ierr := w.f.cons.Info(ctx); errors.Is(ierr, jetstream.ErrConsumerNotFound) || errors.Is(ierr, jetstream.ErrStreamNotFound) {
			w.lost(ctx, ierr)
			idleSince = time.Now()
			continue
		}
		if time.Since(lastRescue) >= rescueEvery {
			lastRescue = time.Now()
			if n, err := w.f.Rescue(ctx); err != nil {
				w.o.Log.Warn("looking for stuck jobs failed", "error", err)
			} else if n > 0 {
				w.o.Log.Warn("requeued jobs the server had brought back below its ack floor (after a crash)", "jobs", n)
				idleSince = time.Now() // there is work again
				continue
			}
		}
		// Idle: the worker exits only when the whole fleet has drained,
		// so that a job a dead worker held, back after its ack wait,
		// finds a worker.
		if w.o.IdleExit > 0 && time.Since(idleSince) >= w.o.IdleExit && w.drained(ctx, &lastSaid) {
			return
		}
	}
}

// announceLoop puts the worker's entry in the workers bucket now and every
// AnnounceEvery, and its run summary every fifth time; the returned
// function stops it and announces the worker exited.
func (w *Worker) announceLoop() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	// A failed announcement is said once, until one gets through again
	// (an election fails every announcement for seconds).
	failing := false
	say := func(exited bool) {
		err := w.f.announce(context.Background(), w.presence.snapshot(w.Jobs(), exited))
		switch {
		case err != nil && !exited && !failing:
			failing = true
			w.o.Log.Warn("the workers bucket did not take this worker's entry: crawl status may show it as gone until it does", "error", err)
		case err == nil && failing:
			failing = false
			w.o.Log.Info("the workers bucket takes this worker's entry again")
		}
	}
	say(false)
	w.keepSummary(ctx) // a worker killed at once is in the fleet's history too
	go func() {
		defer close(done)
		t := time.NewTicker(w.o.AnnounceEvery)
		defer t.Stop()
		for n := 1; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-w.presence.changed: // a job taken or let go: said at once
				say(false)
				continue
			case <-t.C:
				say(false)
				if n%5 == 0 {
					w.keepSummary(ctx)
				}
			}
		}
	}()
	return func() {
		cancel()
		<-done
		say(true)
	}
}

// keepSummary puts the run's summary so far in the runs stream.
func (w *Worker) keepSummary(ctx context.Context) {
	if w.o.Summary == nil {
		return
	}
	if err := w.f.PublishRun(ctx, w.o.Identity.ID, w.o.Summary()); err != nil && ctx.Err() == nil {
		w.o.Log.Warn("the run summary was not kept in the frontier", "error", err)
	}
}

// drained says whether the fleet has nothing left: no job pending or in
// flight, anywhere. When something is left, it says what and who holds
// it, at most once per IdleExit.
func (w *Worker) drained(ctx context.Context, lastSaid *time.Time) bool {
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := w.f.status(sctx, false)
	if err != nil {
		w.o.Log.Warn("idle, but the frontier's status cannot be read: staying", "error", err)
		return false
	}
	if st.Pending == 0 && st.Stuck == 0 {
		return true
	}
	if time.Since(*lastSaid) >= w.o.IdleExit {
		*lastSaid = time.Now()
		// Who holds what: the workers' word, read within its own bound.
		if full, err := w.f.status(sctx, true); err == nil {
			st = full
		}
		held := "none listed by a worker"
		if len(st.InFlightJobs) > 0 {
			var parts []string
			for i, h := range st.InFlightJobs {
				if i == 5 {
					parts = append(parts, fmt.Sprintf("and %d more", len(st.InFlightJobs)-5))
					break
				}
				parts = append(parts, fmt.Sprintf("journal %d page %d by %s (%s, held %s)", h.Journal, h.Page, h.Worker, h.WorkerState, time.Since(h.Since).Round(time.Second)))
			}
			held = strings.Join(parts, "; ")
		}
		w.o.Log.Info("idle, but the fleet is not drained: staying to take what comes back", "pending", st.Pending, "in_flight", st.InFlight, "held", held)
	}
	return false
}

// rescueEvery is how often an idle worker looks for stuck jobs.
const rescueEvery = 30 * time.Second

// lost handles a failed fetch: the consumer or the stream is gone (a server
// restarted on a damaged store, or an operator deleted them) and is made
// again; anything else (a reconnection, an election) is waited out.
func (w *Worker) lost(ctx context.Context, err error) {
	// A pull request to a consumer that is gone finds no responder.
	if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrConsumerNotFound) ||
		errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrStreamNotFound) {
		w.o.Log.Warn("the frontier's consumer or stream is gone: making it again", "error", err)
		if rerr := w.f.recreate(ctx); rerr != nil {
			w.o.Log.Warn("making the frontier again failed; trying again", "error", rerr)
		}
	} else {
		w.o.Log.Warn("frontier fetch failed; trying again", "error", err)
	}
	backoff.Sleep(ctx, 200*time.Millisecond)
}

// handle does one job. Nothing here stops the worker: a job that cannot be
// done now is retried later (nak) or given up on (dead letter).
func (w *Worker) handle(ctx context.Context, msg jetstream.Msg) {
	md, err := msg.Metadata()
	if err != nil {
		w.o.Log.Warn("job without metadata: skipped", "error", err)
		return
	}
	var job Job
	var bad error
	if len(msg.Data()) > MaxJobBytes {
		bad = fmt.Errorf("job of %d bytes: expected at most %d", len(msg.Data()), MaxJobBytes)
	} else if job, bad = ReadJob(msg.Data()); bad == nil {
		bad = job.Validate()
	}
	if bad != nil {
		w.reject(ctx, msg, md, job, bad)
		return
	}
	if w.o.OnJob != nil {
		w.o.OnJob(job)
	}
	// Heartbeats keep a job whose page is slow, or waits on politeness or
	// retries, from going to another worker; a dead worker's job comes
	// back after the ack wait.
	seq := md.Sequence.Stream
	w.presence.take(seq, job, md.NumDelivered)
	acked := false
	defer func() { w.presence.release(seq, job.Journal, acked) }()
	hbCtx, stopHB := context.WithCancel(ctx)
	defer stopHB()
	go func() {
		t := time.NewTicker(max(w.f.AckWait()/3, 10*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-hbCtx.Done():
				return
			case <-t.C:
				if msg.InProgress() == nil {
					w.presence.beat(seq)
				}
			}
		}
	}()

	if job.Nightly {
		w.firstCrawl.Do(func() {
			if _, err := w.o.Run.FirstCrawl(ctx, engine.FleetFirstCrawlNote); err != nil {
				w.o.Log.Warn("could not tell whether the fleet's ledger is new", "error", err)
			}
		})
	}
	var hold func([]ledger.Paper, []ledger.Delivery) bool
	if job.Nightly {
		hold = job.walk().Hold()
	}
	oc, err := w.o.Run.Page(ctx, ledger.PageKey{Journal: job.Journal, Page: job.Page}, engine.PageOptions{RunID: job.RunID, Hold: hold})
	switch {
	case ctx.Err() != nil:
		// Stopped (the grace after a signal ran out): handed back now,
		// not after the ack wait.
		if err := msg.Nak(); err != nil {
			w.o.Log.Warn("job not handed back: redelivered after its ack wait", "journal", job.Journal, "page", job.Page, "error", err)
		}
		return
	case err != nil: // the sinks or the ledger: worth another try
		w.failed(ctx, msg, job, err, true, md.NumDelivered)
		return
	case oc.Result == engine.Failed:
		var f fetch.Failure
		w.failed(ctx, msg, job, oc.Err, backoff.IsRetryable(oc.Err) || !errors.As(oc.Err, &f), md.NumDelivered)
		return
	case oc.Result == engine.PastEnd:
		w.pastEnd.Add(1)
		if job.Nightly && !w.walkOn(ctx, msg, md, job, true, engine.Delivered{}) {
			return
		}
	default:
		if job.Nightly && !w.walkOn(ctx, msg, md, job, false, oc.Delivered) {
			return
		}
		w.done.Add(1)
		// The run's counts join the fleet's history before the ack: a
		// worker killed after this leaves them, and the job redelivered
		// finds its papers known (a kill in the milliseconds between
		// the ledger's commit and this leaves the page uncounted).
		w.keepSummary(ctx)
		w.o.Log.Info("job done", "journal", job.Journal, "page", job.Page, "delivered", oc.Delivered.Sent, "run", job.RunID)
	}
	w.ack(ctx, msg, job)
	acked = true
}

// walkOn takes a nightly walk a step on after its job's page (delivered
// as d, or past the end of the listing): it says what the step found and
// how the walk ended (engine.Run.StepWalk), or publishes the walk's next
// job; false when that failed and the job is not to be acknowledged.
func (w *Worker) walkOn(ctx context.Context, msg jetstream.Msg, md *jetstream.MsgMetadata, job Job, pastEnd bool, d engine.Delivered) bool {
	walk := job.walk()
	var next engine.Walk
	var goOn bool
	if pastEnd {
		next, goOn = walk.PastEnd()
	} else {
		next, goOn = walk.Next(d)
	}
	if goOn {
		nj := job.withWalk(next)
		if walk.Phase != engine.PhaseAudit && !pastEnd {
			nj.PrevPage = job.Page
		}
		if err := nj.Validate(); err != nil {
			// A walk this worker cannot hand on (a hostile job's numbers
			// carried through): cut here, as a failed page cuts it.
			w.o.Log.Error("the nightly walk's next job breaks the bounds: the walk is cut here", "journal", job.Journal, "page", job.Page, "error", err)
			next, goOn = walk.Stop(d, job.Page, engine.WhyFailedPage), false
			if pastEnd {
				next = walk.Stop(engine.Delivered{}, job.PrevPage, engine.WhyFailedPage)
			}
		}
	}
	if goOn {
		nj := job.withWalk(next)
		if walk.Phase != engine.PhaseAudit && !pastEnd {
			nj.PrevPage = job.Page
		}
		if err := w.f.continueWalk(ctx, md.Sequence.Stream, nj); err != nil {
			w.failed(ctx, msg, job, err, true, md.NumDelivered)
			return false
		}
	}
	if err := w.o.Run.StepWalk(ctx, job.Journal, next, false); err != nil {
		w.failed(ctx, msg, job, err, true, md.NumDelivered)
		return false
	}
	return true
}

// ack acknowledges a job and waits for the server to confirm. A lost
// acknowledgement (the server or its leader went away) is not a failure:
// the job is redelivered, and its papers are in the ledger by then, so
// nothing is delivered twice.
func (w *Worker) ack(ctx context.Context, msg jetstream.Msg, job Job) {
	if err := msg.DoubleAck(ctx); err != nil && ctx.Err() == nil {
		w.o.Log.Warn("job ack not confirmed: it may be redelivered (its papers are known)", "journal", job.Journal, "page", job.Page, "error", err)
	}
}

// failed naks a failing job for a later try, or gives up on it when the
// failure is permanent or the job had its last try.
func (w *Worker) failed(ctx context.Context, msg jetstream.Msg, job Job, cause error, retryable bool, deliveries uint64) {
	if !retryable || deliveries >= uint64(w.f.MaxDeliver()) {
		w.giveUp(ctx, msg, job, cause, deliveries)
		return
	}
	d := w.o.Retry.Delay(int(deliveries)-1) + w.o.Retry.Base/2
	w.retried.Add(1)
	// Not a failure of this run: the job is tried again, here or by
	// another worker (the run's summary counts it as a retry).
	w.o.Run.Summary().RetryLater(ledger.PageKey{Journal: job.Journal, Page: job.Page})
	w.o.Log.Warn("job failed: retried later", "journal", job.Journal, "page", job.Page, "delivery", deliveries, "retry_in", d.Round(time.Millisecond), "error", cause)
	if err := msg.NakWithDelay(d); err != nil {
		w.o.Log.Warn("job nak failed: redelivered after its ack wait", "journal", job.Journal, "page", job.Page, "error", err)
	}
}

// reject dead-letters a job that is not valid (Job.Validate) with its
// reason, and removes it from the work queue: it is never run, and none of
// its fields reaches a record or the ledger. The dead letter keeps only its
// journal and page (when they are in bounds).
func (w *Worker) reject(ctx context.Context, msg jetstream.Msg, md *jetstream.MsgMetadata, job Job, cause error) {
	var kept Job
	if job.Journal > 0 {
		kept.Journal = job.Journal
	}
	if job.Page > 0 && job.Page <= config.MaxPageNumber {
		kept.Page = job.Page
	}
	dl := DeadLetter{Job: kept, Error: "rejected: " + cause.Error(), Deliveries: md.NumDelivered, At: time.Now().UTC()}
	if err := w.f.deadLetter(ctx, fmt.Sprintf("rejected-%d", md.Sequence.Stream), dl); err != nil {
		w.o.Log.Warn("dead letter not published: the rejected job is tried again later", "error", err)
		msg.NakWithDelay(w.o.Retry.Base)
		return
	}
	w.dead.Add(1)
	w.o.Log.Warn("job rejected and dead-lettered", "journal", kept.Journal, "page", kept.Page, "error", cause)
	if err := msg.Term(); err != nil {
		w.o.Log.Warn("job terminate failed: it may be redelivered and dead-lettered again (once)", "error", err)
	}
}

// giveUp dead-letters a job with its error, then terminates it, which
// removes it from the work queue. A dead letter that cannot be published
// leaves the job for a later try.
func (w *Worker) giveUp(ctx context.Context, msg jetstream.Msg, job Job, cause error, deliveries uint64) {
	id := msg.Headers().Get(jetstream.MsgIDHeader)
	if id == "" {
		id = job.MsgID()
	}
	if err := w.f.deadLetter(ctx, id, DeadLetter{Job: job, Error: cause.Error(), Deliveries: deliveries, At: time.Now().UTC()}); err != nil {
		w.o.Log.Warn("dead letter not published: the job is tried again later", "journal", job.Journal, "page", job.Page, "error", err)
		msg.NakWithDelay(w.o.Retry.Base)
		return
	}
	w.dead.Add(1)
	w.o.Log.Warn("job dead-lettered", "journal", job.Journal, "page", job.Page, "deliveries", deliveries, "error", cause)
	audit, err := cutWalk(ctx, w.o.Run, job)
	if err != nil {
		w.o.Log.Warn("the dead-lettered walk leaves no mark: the next nightly walks from page 1 as if it had ended", "journal", job.Journal, "error", err)
	}
	// A plain terminate: nats-server 2.9 ignores a terminate that carries
	// a reason, and the job would stay in the queue.
	if err := msg.Term(); err != nil {
		w.o.Log.Warn("job terminate failed: it may be redelivered and dead-lettered again (once)", "error", err)
	}
	w.auditOn(ctx, audit)
}

// auditOn publishes the audit that follows a walk cut at a dead-lettered
// page (nil: none).
func (w *Worker) auditOn(ctx context.Context, audit *Job) {
	if audit == nil {
		return
	}
	if _, err := w.f.Enqueue(ctx, *audit); err != nil {
		w.o.Log.Warn("the audit after the dead-lettered walk was not enqueued: the next nightly's audit goes on from where it stands", "journal", audit.Journal, "error", err)
	}
}

// watchMaxDeliveries dead-letters jobs whose worker died on their last
// try: the server then stops delivering them and says so in an advisory.
func (w *Worker) watchMaxDeliveries() (*nats.Subscription, error) {
	subj := fmt.Sprintf("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.%s.%s", JobsStream, ConsumerName)
	return w.f.nc.Subscribe(subj, func(m *nats.Msg) {
		var adv struct {
			StreamSeq  uint64 `json:"stream_seq"`
			Deliveries uint64 `json:"deliveries"`
		}
		if json.Unmarshal(m.Data, &adv) != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		raw, err := w.f.jobs.GetMsg(ctx, adv.StreamSeq)
		if err != nil {
			return // already dead-lettered by the worker that gave up, or by another watcher
		}
		job, _ := ReadJob(raw.Data) // a job of the format before too: its walk is cut below
		id := raw.Header.Get(jetstream.MsgIDHeader)
		if id == "" {
			id = "seq-" + strconv.FormatUint(adv.StreamSeq, 10)
		}
		dl := DeadLetter{Job: job, Error: "max deliveries reached: the worker holding the last try died or stalled", Deliveries: adv.Deliveries, At: time.Now().UTC()}
		if w.f.deadLetter(ctx, id, dl) == nil {
			w.dead.Add(1)
			w.f.jobs.DeleteMsg(ctx, adv.StreamSeq)
			if audit, err := cutWalk(ctx, w.o.Run, job); err == nil {
				w.auditOn(ctx, audit)
			}
		}
	})
}
