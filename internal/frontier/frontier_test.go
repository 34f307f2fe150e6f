package frontier_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/litcrawl/litcrawl/crawler"
	"github.com/litcrawl/litcrawl/internal/backoff"
	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/frontier"
	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/internal/ledger/ledgertest"
	"github.com/litcrawl/litcrawl/internal/natstest"
	"github.com/litcrawl/litcrawl/internal/testsite"
	"github.com/litcrawl/litcrawl/sink"
	_ "github.com/litcrawl/litcrawl/sink/nats"
)

var ctx = context.Background()

func connect(t *testing.T, url string, o frontier.Options) *frontier.Frontier {
	t.Helper()
	f, err := frontier.Connect(ctx, url, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

// worker is a worker process's parts: its own connection, a fetcher with
// the fleet's pacer, a NATS sink, an engine run over the fleet's ledger.
type worker struct {
	*frontier.Worker
	run *engine.Run
	f   *frontier.Frontier
}

func newWorker(t *testing.T, url, siteURL, sinkURL string, o frontier.WorkerOptions) *worker {
	t.Helper()
	f := connect(t, url, frontier.Options{})
	out, err := sink.Open(ctx, sinkURL, sink.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { out.Close() })
	fetch, err := crawler.New(crawler.Config{
		BaseURL: siteURL, Concurrency: 2, Timeout: 5 * time.Second, MaxBodyBytes: 4 << 20,
		Retry:            crawler.RetryPolicy{MaxAttempts: 3, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond, MaxRetryAfter: 2 * time.Second},
		BreakerThreshold: 50, BreakerCooldown: 10 * time.Millisecond, SlowdownMax: 5 * time.Millisecond,
		UserAgent: "litcrawl-test", Robots: true, Pacer: f.Pacer(time.Millisecond),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	run := engine.Start(engine.Options{ID: "worker", Fetcher: fetch, Ledger: f.Ledger(), Sink: out})
	t.Cleanup(run.Close)
	if o.Retry.Base == 0 {
		o.Retry = backoff.Policy{Base: 20 * time.Millisecond, Max: 100 * time.Millisecond}
	}
	o.Run = run
	return &worker{Worker: f.NewWorker(o), run: run, f: f}
}

func pages(run string, journals []int64, from, to int) []frontier.Job {
	var jobs []frontier.Job
	for _, j := range journals {
		for p := from; p <= to; p++ {
			jobs = append(jobs, frontier.PageJob(j, p, run))
		}
	}
	return jobs
}

// The fleet's key-value ledger is a ledger: the conformance suite, across
// reconnections.
func TestLedgerConformance(t *testing.T) {
	t.Parallel()
	n := natstest.Start(t)
	var buckets sync.Mutex
	ledgertest.Run(t, func(t *testing.T) (ledger.Ledger, func() ledger.Ledger) {
		buckets.Lock() // one frontier's bucket: empty it for each test
		t.Cleanup(buckets.Unlock)
		nc, _ := nats.Connect(n.URL())
		js, _ := jetstream.New(nc)
		js.DeleteKeyValue(ctx, frontier.PapersBucket)
		nc.Close()
		f := connect(t, n.URL(), frontier.Options{})
		return f.Ledger(), func() ledger.Ledger {
			f.Close()
			return connect(t, n.URL(), frontier.Options{}).Ledger()
		}
	})
}

// The fleet's ledger, whose look-ups and commits send every key of a page
// at once, passes the conformance suite on the oldest server it supports
// (Debian's nats-server 2.9.10: direct gets, no batched ones).
func TestLedgerConformanceOnOldestServer(t *testing.T) {
	t.Parallel()
	b := natstest.StartBinary(t)
	t.Logf("nats-server %s", b.Version)
	var buckets sync.Mutex
	ledgertest.Run(t, func(t *testing.T) (ledger.Ledger, func() ledger.Ledger) {
		buckets.Lock()
		t.Cleanup(buckets.Unlock)
		nc, _ := nats.Connect(b.URL)
		js, _ := jetstream.New(nc)
		js.DeleteKeyValue(ctx, frontier.PapersBucket)
		nc.Close()
		f := connect(t, b.URL, frontier.Options{})
		return f.Ledger(), func() ledger.Ledger {
			f.Close()
			return connect(t, b.URL, frontier.Options{}).Ledger()
		}
	})
}

// Three workers and one that dies mid-job share a backfill of a flaky
// site: the frontier drains, every paper reaches the records stream
// exactly once, and a page that cannot be fetched is dead-lettered with
// its error.
func TestWorkersShareABackfill(t *testing.T) {
	t.Parallel()
	n := natstest.Start(t)
	site := testsite.New()
	site.SynthJournal(11, 5, 20)
	site.SynthJournal(12, 5, 20)
	site.Inject(testsite.PagePath(11, 3), testsite.Fault{Kind: testsite.Status, Status: 403})
	p := testsite.Profiles["flaky"]
	p.SlowBy = time.Millisecond
	site.SetProfile(p, 3)
	srv := httptest.NewServer(site)
	defer srv.Close()

	fr := connect(t, n.URL(), frontier.Options{AckWait: time.Second, MaxDeliver: 4})
	jobs := pages("run-1", []int64{11, 12}, 1, 6) // page 6 is past the end
	if got, err := fr.Enqueue(ctx, jobs...); err != nil || got.Added != 12 {
		t.Fatalf("enqueue: %+v %v", got, err)
	}
	recordsURL := n.URL() + "/papers.new?stream=RECORDS"
	var wg sync.WaitGroup
	run := func(die bool) {
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		o := frontier.WorkerOptions{Concurrency: 2, IdleExit: 3 * time.Second}
		if die {
			// This worker dies as soon as it holds a job: that job must be
			// redelivered to another worker after its ack wait.
			o.OnJob = func(frontier.Job) { cancel() }
		}
		newWorker(t, n.URL(), srv.URL, recordsURL, o).Run(wctx)
	}
	wg.Go(func() { run(true) })
	for range 3 {
		wg.Go(func() { run(false) })
	}
	wg.Wait()

	st, err := fr.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Pending != 0 || st.InFlight != 0 || st.Dead != 1 {
		t.Errorf("status: pending %d, in flight %d, dead %d; want 0, 0, 1", st.Pending, st.InFlight, st.Dead)
	}
	dls, _ := fr.DeadLetters(ctx, 0)
	if len(dls) != 1 || dls[0].Job.Journal != 11 || dls[0].Job.Page != 3 || !strings.Contains(dls[0].Error, "HTTP 403") {
		t.Errorf("dead letters: %+v", dls)
	}
	ids := natstest.RecordIDs(t, n.URL(), "RECORDS")
	if len(ids) != 180 {
		t.Errorf("%d papers in the records stream, want 180 (200 less the dead page's 20)", len(ids))
	}
	for id, c := range ids {
		if c != 1 {
			t.Errorf("paper %s is in the records stream %d times", id, c)
		}
	}
}

// Enqueueing pages whose jobs are pending adds nothing (whatever the run),
// and a journal has one nightly walk at a time; once the jobs are done the
// same pages can be enqueued again.
func TestEnqueueIsIdempotent(t *testing.T) {
	t.Parallel()
	n := natstest.Start(t)
	fr := connect(t, n.URL(), frontier.Options{})
	first, err := fr.Enqueue(ctx, pages("run-1", []int64{5}, 1, 3)...)
	if err != nil || first.Added != 3 {
		t.Fatalf("first enqueue: %+v %v", first, err)
	}
	again, err := fr.Enqueue(ctx, pages("run-2", []int64{5}, 1, 4)...)
	if err != nil || again.Added != 1 || again.Queued != 3 {
		t.Fatalf("second enqueue of pages 1-4 while 1-3 are pending: %+v %v (want 1 added, 3 queued)", again, err)
	}
	walk := frontier.WalkJob(5, "", engine.NewWalk(engine.Limits{StopAfterKnownPages: 1, MaxPages: 9}, 0, ledger.WalkState{}))
	for i, run := range []string{"n-1", "n-2", "n-2"} {
		walk.RunID = run
		got, err := fr.Enqueue(ctx, walk)
		if err != nil || got.Added != map[bool]int{true: 1}[i == 0] {
			t.Fatalf("walk enqueue %d: %+v %v", i+1, got, err)
		}
	}
	st, _ := fr.Status(ctx)
	if st.Pending != 5 || len(st.Journals) != 1 || !st.Journals[0].Walking {
		t.Fatalf("status: %+v", st)
	}
	// Drain the queue as workers would (ack everything), then enqueue again.
	nc, _ := nats.Connect(n.URL())
	defer nc.Close()
	js, _ := jetstream.New(nc)
	cons, _ := js.Consumer(ctx, frontier.JobsStream, frontier.ConsumerName)
	batch, err := cons.Fetch(5, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := fr.Enqueue(ctx, pages("run-3", []int64{5}, 1, 2)...); err != nil || got.Added != 2 {
		t.Errorf("enqueue after the jobs were done: %+v %v", got, err)
	}
}

// A nightly walk is a chain of page jobs: the first night walks to the
// last page; the next one stops at the first page of papers known before.
// A second enqueue of the walk while it goes on adds nothing.
func TestNightlyWalkChain(t *testing.T) {
	t.Parallel()
	n := natstest.Start(t)
	site := testsite.New()
	var listing []string
	for i := range 100 {
		listing = append(listing, fmt.Sprintf("77%04d", i))
	}
	site.SetListing(21, listing, 20)
	srv := httptest.NewServer(site)
	defer srv.Close()
	fr := connect(t, n.URL(), frontier.Options{AckWait: 5 * time.Second})
	sinkURL := n.URL() + "/papers.nightly?stream=NIGHTLY"
	night := func(run string) (pages, delivered int64) {
		ws, err := fr.Ledger().WalkState(ctx, 21)
		if err != nil {
			t.Fatal(err)
		}
		walk := frontier.WalkJob(21, run, engine.NewWalk(engine.Limits{StopAfterKnownPages: 1, MaxPages: 50}, 0, ws))
		if got, err := fr.Enqueue(ctx, walk); err != nil || got.Added != 1 {
			t.Fatalf("enqueue the walk: %+v %v", got, err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		for range 2 {
			wg.Go(func() {
				w := newWorker(t, n.URL(), srv.URL, sinkURL, frontier.WorkerOptions{IdleExit: time.Second,
					OnJob: func(j frontier.Job) {
						// Mid-walk, the walk is enqueued again: nothing is added.
						if j.Page == 2 {
							if got, err := fr.Enqueue(ctx, frontier.WalkJob(21, run+"-again", engine.NewWalk(engine.Limits{StopAfterKnownPages: 1, MaxPages: 50}, 0, ledger.WalkState{}))); err != nil || got.Added != 0 {
								t.Errorf("a second walk of journal 21 was enqueued: %+v %v", got, err)
							}
						}
					}})
				w.Run(ctx)
				mu.Lock()
				defer mu.Unlock()
				pages += w.Jobs().Done
				delivered += w.run.Summary().PapersNew.Load()
			})
		}
		wg.Wait()
		return pages, delivered
	}
	if p, d := night("n1"); p != 5 || d != 100 || site.Hits(testsite.PagePath(21, 6)) != 0 {
		t.Fatalf("night 1: %d pages, %d papers (the walk must end at the last page its pager names)", p, d)
	}
	var fresh []string
	for i := range 10 {
		fresh = append(fresh, fmt.Sprintf("78%04d", i))
	}
	site.SetListing(21, append(fresh, listing...), 20)
	if p, d := night("n2"); p != 1 || d != 10 || site.Hits(testsite.PagePath(21, 2)) != 1 {
		t.Fatalf("night 2: %d pages, %d papers (want page 1, which shows last night's head: 10 new papers)", p, d)
	}
}

// walkNight enqueues journal's nightly walk with the marks earlier walks
// left (as enqueue --nightly does) and works it with one worker until
// idle: the pages done and the papers delivered.
func walkNight(t *testing.T, fr *frontier.Frontier, natsURL, siteURL, sinkURL string, journal int64, maxPages int, run string) (pages, papers int64) {
	t.Helper()
	ws, err := fr.Ledger().WalkState(ctx, journal)
	if err != nil {
		t.Fatal(err)
	}
	walk := frontier.WalkJob(journal, run, engine.NewWalk(engine.Limits{StopAfterKnownPages: 1, MaxPages: maxPages}, 0, ws))
	if got, err := fr.Enqueue(ctx, walk); err != nil || got.Added != 1 {
		t.Fatalf("enqueue the walk: %+v %v", got, err)
	}
	wk := newWorker(t, natsURL, siteURL, sinkURL, frontier.WorkerOptions{IdleExit: time.Second})
	wk.Run(ctx)
	return wk.Jobs().Done, wk.run.Summary().PapersNew.Load()
}

// The fleet's walk follows the same carry-on rule as a local one: a walk
// that reaches max_pages leaves a mark in the papers bucket; the next
// night's walk, enqueued with it, jumps to the mark's page where known
// papers would stop it, and reaches the pages beyond.
func TestNightlyWalkCarriesOnPastMaxPages(t *testing.T) {
	t.Parallel()
	n := natstest.Start(t)
	site := testsite.New()
	var listing []string
	for i := range 110 {
		listing = append(listing, fmt.Sprintf("79%04d", i))
	}
	site.SetListing(22, listing, 20)
	srv := httptest.NewServer(site)
	defer srv.Close()
	fr := connect(t, n.URL(), frontier.Options{AckWait: 5 * time.Second})
	night := func(run string) (pages, delivered int64) {
		return walkNight(t, fr, n.URL(), srv.URL, n.URL()+"/papers.carry?stream=CARRY", 22, 5, run)
	}
	if p, d := night("n1"); p != 5 || d != 100 {
		t.Fatalf("night 1: %d pages, %d papers (want max_pages 5, 100 papers)", p, d)
	}
	if ws, err := fr.Ledger().WalkState(ctx, 22); err != nil || len(ws.Marks) != 1 || ws.Marks[0].Page != 5 {
		t.Fatalf("night 1's marks: %+v %v", ws, err)
	}
	var fresh []string
	for i := range 10 {
		fresh = append(fresh, fmt.Sprintf("80%04d", i))
	}
	site.SetListing(22, append(fresh, listing...), 20)
	if p, d := night("n2"); p != 2 || d != 20 || site.Hits(testsite.PagePath(22, 2)) != 1 || site.Hits(testsite.PagePath(22, 6)) != 1 {
		t.Fatalf("night 2: %d pages, %d papers (want page 1, then the jump to page 6 where the mark's papers are now: 20 new papers)", p, d)
	}
	if ws, err := fr.Ledger().WalkState(ctx, 22); err != nil || len(ws.Marks) != 0 {
		t.Errorf("the walk reached the last page, yet the marks are %+v %v", ws, err)
	}
}

// A walk whose job is dead-lettered (a page that fails for good) leaves a
// mark at its last page delivered: the next night's walk carries on from
// there instead of stopping at the known papers above.
func TestDeadLetteredWalkCarriesOn(t *testing.T) {
	t.Parallel()
	n := natstest.Start(t)
	site := testsite.New()
	var listing []string
	for i := range 100 {
		listing = append(listing, fmt.Sprintf("81%04d", i))
	}
	site.SetListing(23, listing, 20)
	site.Inject(testsite.PagePath(23, 3), testsite.Fault{Kind: testsite.Status, Status: 403})
	srv := httptest.NewServer(site)
	defer srv.Close()
	fr := connect(t, n.URL(), frontier.Options{AckWait: 5 * time.Second})
	night := func(run string) int64 {
		_, papers := walkNight(t, fr, n.URL(), srv.URL, n.URL()+"/papers.dl?stream=DLWALK", 23, 50, run)
		return papers
	}
	if d := night("n1"); d != 40 {
		t.Fatalf("night 1: %d papers, want pages 1-2", d)
	}
	if ws, err := fr.Ledger().WalkState(ctx, 23); err != nil || len(ws.Marks) != 1 || ws.Marks[0].Page != 2 {
		t.Fatalf("the dead-lettered walk's marks: %+v %v", ws, err)
	}
	if d := night("n2"); d != 60 {
		t.Fatalf("night 2: %d papers, want pages 3-5 (the page after the mark, on to the end)", d)
	}
}

// A worker that dies on a job's last try: the server stops delivering it
// and says so in an advisory, and a watching worker dead-letters it.
func TestWorkerDiedOnLastTry(t *testing.T) {
	t.Parallel()
	n := natstest.Start(t)
	site := testsite.New()
	site.SynthJournal(41, 1, 5)
	srv := httptest.NewServer(site)
	defer srv.Close()
	fr := connect(t, n.URL(), frontier.Options{AckWait: 300 * time.Millisecond, MaxDeliver: 1})
	sinkURL := n.URL() + "/papers.adv?stream=ADV"
	// The victim takes the job, and dies with it (its only try).
	dctx, die := context.WithCancel(ctx)
	took := make(chan struct{})
	victim := newWorker(t, n.URL(), srv.URL, sinkURL, frontier.WorkerOptions{IdleExit: time.Second,
		OnJob: func(frontier.Job) { die(); close(took) }})
	go victim.Run(dctx)
	fr.Enqueue(ctx, frontier.PageJob(41, 1, "r"))
	<-took
	// The watcher starts while the victim's try is still in its ack wait:
	// the server gives up on the job after it, and the watcher hears so.
	watcher := newWorker(t, n.URL(), srv.URL, sinkURL, frontier.WorkerOptions{IdleExit: 2 * time.Second})
	if err := watcher.Run(ctx); err != nil {
		t.Fatal(err)
	}
	dls, _ := fr.DeadLetters(ctx, 0)
	if len(dls) != 1 || !strings.Contains(dls[0].Error, "max deliveries reached") || dls[0].Job.Page != 1 || watcher.Jobs().Done != 0 {
		t.Fatalf("dead letters %+v, watcher %+v", dls, watcher.Jobs())
	}
	if st, _ := fr.Status(ctx); st.Pending != 0 {
		t.Errorf("the dead job is still pending: %+v", st)
	}
}

// A job that fails for good is dead-lettered and leaves the work queue, on
// the Go module's server and on Debian's nats-server 2.9.10 (which ignores
// a terminate that carries a reason): after the worker, nothing is pending
// or in flight, and another worker gets nothing.
func TestDeadLettersLeaveTheQueue(t *testing.T) {
	t.Parallel()
	for _, server := range []string{"module", "debian"} {
		t.Run(server, func(t *testing.T) {
			site := testsite.New()
			site.SynthJournal(61, 2, 5)
			site.Inject(testsite.PagePath(61, 1), testsite.Fault{Kind: testsite.Status, Status: 404}) // page 1: not "the end"
			srv := httptest.NewServer(site)
			defer srv.Close()
			var url string
			if server == "module" {
				url = natstest.Start(t).URL()
			} else {
				b := natstest.StartBinary(t)
				url = b.URL
				t.Logf("nats-server %s", b.Version)
			}
			fr := connect(t, url, frontier.Options{AckWait: time.Second})
			if got, err := fr.Enqueue(ctx, pages("r", []int64{61}, 1, 2)...); err != nil || got.Added != 2 {
				t.Fatalf("enqueue: %+v %v", got, err)
			}
			sinkURL := url + "/papers.dl?stream=DL"
			w := newWorker(t, url, srv.URL, sinkURL, frontier.WorkerOptions{IdleExit: 500 * time.Millisecond})
			if err := w.Run(ctx); err != nil {
				t.Fatal(err)
			}
			if j := w.Jobs(); j.Done != 1 || j.DeadLettered != 1 {
				t.Fatalf("jobs: %+v", j)
			}
			st, err := fr.Status(ctx)
			if err != nil || st.Pending != 0 || st.InFlight != 0 || st.Dead != 1 {
				t.Fatalf("status after the worker: %+v %v; want 0 pending, 0 in flight, 1 dead", st, err)
			}
			// After the ack wait, another worker finds nothing to take.
			late := newWorker(t, url, srv.URL, sinkURL, frontier.WorkerOptions{IdleExit: 1500 * time.Millisecond})
			late.Run(ctx)
			if j := late.Jobs(); j != (frontier.JobCounts{}) {
				t.Errorf("a dead-lettered job was taken again: %+v", j)
			}
		})
	}
}

// A server older than the oldest supported is refused, naming both.
func TestRefusesAnOldServer(t *testing.T) {
	n := natstest.Start(t)
	_, err := frontier.Connect(ctx, n.URL(), frontier.WithMinServerVersion(frontier.Options{}, "99.1.0"))
	if err == nil || !strings.Contains(err.Error(), "is older than 99.1.0") || !strings.Contains(err.Error(), "nats-server 2.") {
		t.Fatalf("Connect to an old server: %v", err)
	}
}

// Three replicas on a single server are refused with what to do, before
// anything is changed: on the module's server and on Debian's 2.9.10,
// which would otherwise record three and keep one.
func TestReplicasOnASingleServer(t *testing.T) {
	t.Parallel()
	for _, server := range []string{"module", "debian"} {
		t.Run(server, func(t *testing.T) {
			var url string
			if server == "module" {
				url = natstest.Start(t).URL()
			} else {
				url = natstest.StartBinary(t).URL
			}
			connect(t, url, frontier.Options{}) // an existing frontier, one replica
			_, err := frontier.Connect(ctx, url, frontier.Options{Replicas: 3})
			if err == nil || !strings.Contains(err.Error(), "single server, not a cluster") || !strings.Contains(err.Error(), "set --replicas (frontier.replicas) to 1") {
				t.Fatalf("Connect with 3 replicas on a single server: %v", err)
			}
			for _, st := range []string{frontier.JobsStream, frontier.DeadStream, "KV_" + frontier.PapersBucket} {
				if c := natstest.StreamConfig(t, url, st); c.Replicas > 1 {
					t.Errorf("%s has %d replicas", st, c.Replicas)
				}
			}
		})
	}
}

// A crashed single server can bring back jobs it had removed, below the
// consumer's ack floor, where no worker would get them. Status counts
// them, and an idle worker puts them back in the queue. (The state is made
// here by narrowing the consumer's filter while a later job is acked.)
func TestStuckJobsAreRescued(t *testing.T) {
	t.Parallel()
	n, site, srv, fr := synthFleet(t, 91, 3)
	if got, err := fr.Enqueue(ctx, pages("r", []int64{91}, 1, 3)...); err != nil || got.Added != 3 {
		t.Fatalf("enqueue: %+v %v", got, err)
	}
	site.SynthJournal(91, 4, 5) // page 4 exists too (it is acked without a worker)
	nc, _ := nats.Connect(n.URL())
	defer nc.Close()
	js, _ := jetstream.New(nc)
	jobs, _ := js.Stream(ctx, frontier.JobsStream)
	// The consumer sees page 4 only, takes and acks it: its ack floor
	// passes pages 1-3, which are then stuck below it.
	c, _ := jobs.Consumer(ctx, frontier.ConsumerName)
	cfg := c.CachedInfo().Config
	narrow := cfg
	narrow.FilterSubject = frontier.PageJob(91, 4, "").Subject()
	if _, err := jobs.UpdateConsumer(ctx, narrow); err != nil {
		t.Fatal(err)
	}
	fr.Enqueue(ctx, pages("r", []int64{91}, 4, 4)...)
	c, _ = jobs.Consumer(ctx, frontier.ConsumerName)
	batch, err := c.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		m.DoubleAck(ctx)
	}
	if _, err := jobs.UpdateConsumer(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if st, err := fr.Status(ctx); err != nil || st.Stuck != 3 || st.Pending != 3 {
		t.Fatalf("status: %+v %v; want 3 stuck", st, err)
	}
	if got, err := fr.Enqueue(ctx, pages("r2", []int64{91}, 2, 2)...); err != nil || got.Queued != 1 {
		t.Fatalf("a stuck page counts as queued: %+v %v", got, err)
	}
	w := newWorker(t, n.URL(), srv.URL, n.URL()+"/papers.stuck?stream=STUCK", frontier.WorkerOptions{IdleExit: time.Second})
	if err := w.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if j := w.Jobs(); j.Done != 3 {
		t.Errorf("jobs done after the rescue: %+v", j)
	}
	if st, _ := fr.Status(ctx); st.Pending != 0 || st.Stuck != 0 {
		t.Errorf("status after the rescue: %+v", st)
	}
	if ids := natstest.RecordIDs(t, n.URL(), "STUCK"); len(ids) != 15 {
		t.Errorf("%d papers delivered, want 15", len(ids))
	}
}

// A worker whose consumer is deleted while it runs makes it again and
// goes on.
func TestWorkerMakesALostConsumerAgain(t *testing.T) {
	t.Parallel()
	n, _, srv, fr := synthFleet(t, 92, 2)
	nc, _ := nats.Connect(n.URL())
	defer nc.Close()
	js, _ := jetstream.New(nc)
	jobs, _ := js.Stream(ctx, frontier.JobsStream)
	w := newWorker(t, n.URL(), srv.URL, n.URL()+"/papers.lost?stream=LOST", frontier.WorkerOptions{IdleExit: 2 * time.Second})
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	if err := jobs.DeleteConsumer(ctx, frontier.ConsumerName); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 10*time.Second, "the worker did not make its consumer again", func() bool {
		_, err := jobs.Consumer(ctx, frontier.ConsumerName)
		return err == nil
	})
	if got, err := fr.Enqueue(ctx, pages("r", []int64{92}, 1, 2)...); err != nil || got.Added != 2 {
		t.Fatalf("enqueue: %+v %v", got, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if j := w.Jobs(); j.Done != 2 {
		t.Errorf("jobs done: %+v", j)
	}
}

// A server without JetStream is named as such at once, not after the
// setup's 30 s of waiting for a leader.
func TestServerWithoutJetStream(t *testing.T) {
	t.Parallel()
	n := natstest.Start(t, func(o *server.Options) { o.JetStream = false })
	start := time.Now()
	_, err := frontier.Connect(ctx, n.URL(), frontier.Options{})
	if err == nil || !strings.Contains(err.Error(), "JetStream is not enabled") || time.Since(start) > 10*time.Second {
		t.Fatalf("Connect to a server without JetStream: %v after %v", err, time.Since(start))
	}
}

// A frontier URL without a scheme (which the client takes) keeps its
// password out of errors too.
func TestFrontierURLWithoutScheme(t *testing.T) {
	t.Parallel()
	_, err := frontier.Connect(ctx, "alice:s3cretPW@127.0.0.1:1", frontier.Options{})
	if err == nil || strings.Contains(err.Error(), "s3cretPW") || !strings.Contains(err.Error(), "REDACTED") {
		t.Fatalf("Connect: %v", err)
	}
}

// The fleet's pace holds a host's own gap too (its robots.txt
// Crawl-delay): two workers asking for the same host, with no fetch.delay,
// get slots at least that far apart.
func TestPacerHoldsTheHostsGap(t *testing.T) {
	t.Parallel()
	n := natstest.Start(t)
	a, b := connect(t, n.URL(), frontier.Options{}).Pacer(0), connect(t, n.URL(), frontier.Options{}).Pacer(0)
	start := time.Now()
	if err := a.Wait(ctx, "site.example", 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(ctx, "site.example", 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Errorf("the second worker's slot came after %v, want at least the 300ms gap", waited)
	}
}

// synthFleet is a server, a frontier on it, and a site with a synthetic
// journal of pages of 5 papers.
func synthFleet(t *testing.T, journal int64, pageCount int) (*natstest.Server, *testsite.Site, *httptest.Server, *frontier.Frontier) {
	t.Helper()
	n := natstest.Start(t)
	site := testsite.New()
	site.SynthJournal(journal, pageCount, 5)
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)
	return n, site, srv, connect(t, n.URL(), frontier.Options{})
}

// Jobs published by hand to the work subject are checked as flags are: a
// run id of 50 KB, with a NUL, an ESC or markup, a negative max_pages,
// junk marks, a job that is no JSON — each is dead-lettered with its
// reason, never run: no record carries it, no mark is written.
func TestHandPublishedJobsAreValidated(t *testing.T) {
	t.Parallel()
	site := testsite.New()
	site.SynthJournal(62, 2, 5)
	srv := httptest.NewServer(site)
	defer srv.Close()
	n := natstest.Start(t)
	fr := connect(t, n.URL(), frontier.Options{AckWait: time.Second})
	bad := map[string]string{
		"long run id":      fmt.Sprintf(`{"journal":62,"page":1,"run_id":%q}`, strings.Repeat("r", 50<<10)),
		"NUL in run id":    `{"journal":62,"page":1,"run_id":"r\u0000x"}`,
		"ESC in run id":    `{"journal":62,"page":2,"run_id":"r\u001b[2J"}`,
		"markup run id":    `{"journal":62,"page":2,"run_id":"<script>alert(1)</script>"}`,
		"max_pages -5":     `{"journal":62,"page":1,"run_id":"r","nightly":true,"max_pages":-5,"stop_after_known":1}`,
		"junk marks":       `{"journal":62,"page":1,"run_id":"r","nightly":true,"max_pages":5,"stop_after_known":1,"marks":[{"page":-3,"papers":["\u001b"]}]}`,
		"no JSON":          `not a job`,
		"page 0":           `{"journal":62,"page":0,"run_id":"r"}`,
		"gap, no marks":    `{"journal":62,"page":2,"run_id":"r1","nightly":true,"max_pages":5,"stop_after_known":1,"in_gap":true,"prev_page":1}`,
		"format 3":         `{"v":3,"journal":62,"page":1,"run_id":"r"}`,
		"no walk":          `{"v":2,"journal":62,"page":1,"run_id":"r","nightly":true}`,
		"bad phase":        `{"v":2,"journal":62,"page":1,"run_id":"r","nightly":true,"walk":{"phase":"jump","max_pages":5,"stop_after_known":1}}`,
		"v2 gap, no marks": `{"v":2,"journal":62,"page":2,"run_id":"r","nightly":true,"walk":{"phase":"gap","max_pages":5,"stop_after_known":1}}`,
		"v2 junk head":     `{"v":2,"journal":62,"page":1,"run_id":"r","nightly":true,"walk":{"phase":"top","max_pages":5,"stop_after_known":1,"state":{"head":["\u001b]0;x\u0007"]}}}`,
		"v2 audit left":    `{"v":2,"journal":62,"page":1,"run_id":"r","nightly":true,"walk":{"phase":"audit","max_pages":5,"stop_after_known":1,"audit_pages":1,"audit_left":900}}`,
		"v2 recent":        `{"v":2,"journal":62,"page":1,"run_id":"r","nightly":true,"walk":{"phase":"top","max_pages":5,"stop_after_known":1,"recent":["a","b"],"recent_at":[1]}}`,
	}
	nc, err := nats.Connect(n.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	i := 0
	for name, data := range bad {
		i++
		subj := fmt.Sprintf("%s.62.%d", frontier.JobsSubject, 100+i)
		if strings.Contains(data, `"nightly":true`) {
			subj = fmt.Sprintf("%s.%d.walk", frontier.JobsSubject, 62)
		}
		if _, err := js.Publish(ctx, subj, []byte(data)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if subj == fmt.Sprintf("%s.%d.walk", frontier.JobsSubject, 62) {
			// One walk job at a time per subject: run the worker now.
			w := newWorker(t, n.URL(), srv.URL, n.URL()+"/papers.v?stream=V", frontier.WorkerOptions{IdleExit: 300 * time.Millisecond})
			if err := w.Run(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	w := newWorker(t, n.URL(), srv.URL, n.URL()+"/papers.v?stream=V", frontier.WorkerOptions{IdleExit: 300 * time.Millisecond})
	if err := w.Run(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := fr.Status(ctx)
	if err != nil || st.Pending != 0 || st.Dead != uint64(len(bad)) {
		t.Fatalf("status: %+v %v; want every bad job dead-lettered (%d)", st, err, len(bad))
	}
	if ws, err := fr.Ledger().WalkState(ctx, 62); err != nil || len(ws.Marks) != 0 {
		t.Errorf("a rejected walk wrote marks: %v %v", ws, err)
	}
	if ids := natstest.RecordIDs(t, n.URL(), "V"); len(ids) != 0 {
		t.Errorf("rejected jobs delivered %d records", len(ids))
	}
}

// A worker stopped while it holds a job (the grace after a signal ran
// out) hands the job back at once: another worker takes it long before
// the ack wait, and the worker's entry says it exited and holds nothing.
func TestAStoppedWorkerHandsItsJobBack(t *testing.T) {
	t.Parallel()
	n := natstest.Start(t)
	site := testsite.New()
	site.SynthJournal(13, 2, 20)
	srv := httptest.NewServer(site)
	defer srv.Close()
	fr := connect(t, n.URL(), frontier.Options{AckWait: time.Minute})
	if _, err := fr.Enqueue(ctx, pages("run-1", []int64{13}, 1, 2)...); err != nil {
		t.Fatal(err)
	}
	recordsURL := n.URL() + "/papers.new?stream=HANDBACK"
	wctx, cancel := context.WithCancel(ctx)
	stopped := newWorker(t, n.URL(), srv.URL, recordsURL, frontier.WorkerOptions{Identity: frontier.Identity{ID: "stopped"},
		OnJob: func(frontier.Job) { cancel() }})
	stopped.Run(wctx)
	start := time.Now()
	newWorker(t, n.URL(), srv.URL, recordsURL, frontier.WorkerOptions{IdleExit: time.Second}).Run(ctx)
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the job came back after %v: not handed back (ack wait 1m)", took)
	}
	if ids := natstest.RecordIDs(t, n.URL(), "HANDBACK"); len(ids) != 40 {
		t.Errorf("%d papers, want 40", len(ids))
	}
	st, err := fr.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range st.Workers {
		if w.ID == "stopped" && (w.State != frontier.WorkerExited || len(w.Held) != 0) {
			t.Errorf("the stopped worker: %+v", w)
		}
	}
	if st.Pending != 0 || st.Done != 2 || len(st.InFlightJobs) != 0 {
		t.Errorf("status: %d pending, %d done, in flight %+v", st.Pending, st.Done, st.InFlightJobs)
	}
}

// The workers bucket may hold anything anyone wrote: entries too large
// are skipped, texts cut short, counts kept from 0 to a bound, a last word
// from the future is no word, and the jobs an entry lists are bounded.
func TestHostileWorkerEntries(t *testing.T) {
	t.Parallel()
	n := natstest.Start(t)
	fr := connect(t, n.URL(), frontier.Options{})
	kv, err := natstest.JetStream(t, n.URL()).KeyValue(ctx, frontier.WorkersBucket)
	if err != nil {
		t.Fatal(err)
	}
	held := make([]frontier.HeldJob, 1500)
	for i := range held {
		held[i] = frontier.HeldJob{Journal: 1, Page: i + 1, Since: time.Now(), Heartbeat: time.Now()}
	}
	entries := map[string]any{
		"w.huge":   frontier.WorkerInfo{Identity: frontier.Identity{ID: strings.Repeat("x", 900<<10)}},
		"w.counts": frontier.WorkerInfo{Identity: frontier.Identity{ID: "counts", Host: strings.Repeat("h", 5000)}, LastSeen: time.Now().Add(100 * 365 * 24 * time.Hour), Jobs: frontier.JobCounts{Done: -7}, DoneLastMinute: 1 << 60, Held: held},
		"w.junk":   "not an entry",
	}
	for k, v := range entries {
		data, _ := json.Marshal(v)
		if _, err := kv.Put(ctx, k, data); err != nil {
			t.Fatal(err)
		}
	}
	ws, _, err := fr.Workers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 1 {
		t.Fatalf("%d workers read, want the one that is an entry of bounded size: %+v", len(ws), ws)
	}
	w := ws[0]
	if len(w.Host) > 300 || w.Jobs.Done != 0 || w.DoneLastMinute > 1<<20 || len(w.Held) > 1000 || w.State != frontier.WorkerGone {
		t.Errorf("the entry as read: host %d bytes, done %d, last minute %d, %d held, state %s", len(w.Host), w.Jobs.Done, w.DoneLastMinute, len(w.Held), w.State)
	}
	if _, err := fr.Status(ctx); err != nil {
		t.Error(err)
	}
}

// During an upgrade, a nightly job of the format before (published by the
// version before: no "v", the walk's fields at the top level, mid-walk
// past its top part at page 3) is run by this version's worker: the walk
// starts again from page 1 with the job's limits and marks, and the walk
// and the next night's deliver every paper of the listing, each once.
func TestWorkerRunsAJobOfTheFormatBefore(t *testing.T) {
	t.Parallel()
	n := natstest.Start(t)
	site := testsite.New()
	var listing []string
	for i := range 60 {
		listing = append(listing, fmt.Sprintf("83%04d", i))
	}
	site.SetListing(24, listing, 20)
	srv := httptest.NewServer(site)
	defer srv.Close()
	fr := connect(t, n.URL(), frontier.Options{AckWait: 5 * time.Second})
	nc, err := nats.Connect(n.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	old := `{"journal":24,"run_id":"20261205T020000Z-0123abcd","nightly":true,"page":3,"known_run":1,"walked":2,` +
		`"stop_after_known":1,"max_pages":50,"marked":true,"past_top":true,"in_gap":true,` +
		`"marks":[{"page":2,"papers":["830039"]}],"reached":2,"prev_page":2}`
	if _, err := js.Publish(ctx, fmt.Sprintf("%s.24.walk", frontier.JobsSubject), []byte(old)); err != nil {
		t.Fatal(err)
	}
	sinkURL := n.URL() + "/papers.upgrade?stream=UPGRADE"
	w := newWorker(t, n.URL(), srv.URL, sinkURL, frontier.WorkerOptions{IdleExit: time.Second})
	if err := w.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if got := w.run.Summary().PapersNew.Load(); got != 60 || w.Jobs().DeadLettered != 0 {
		t.Fatalf("the format-1 job: %d papers, %d dead-lettered; want the walk from page 1 over the 60", got, w.Jobs().DeadLettered)
	}
	if ids := natstest.RecordIDs(t, n.URL(), "UPGRADE"); len(ids) != 60 {
		t.Errorf("the records stream holds %d records, want 60", len(ids))
	}
	// The walk left this version's state: the next night proves its top
	// part on page 1 and delivers the 5 that arrived.
	site.SetListing(24, append([]string{"840001", "840002", "840003", "840004", "840005"}, listing...), 20)
	if p, d := walkNight(t, fr, n.URL(), srv.URL, sinkURL, 24, 50, "n2"); p != 1 || d != 5 {
		t.Errorf("the night after: %d pages, %d papers; want page 1, 5 papers", p, d)
	}
}

// A fleet's walk runs its audit after it, in the same chain of jobs, and
// leaves the audit's place in the walk state: the status says what the
// audits cover (here: every page of the journal read once, the round
// complete).
func TestFleetWalkAuditsAndStatusSaysSo(t *testing.T) {
	t.Parallel()
	n := natstest.Start(t)
	site := testsite.New()
	var listing []string
	for i := range 60 {
		listing = append(listing, fmt.Sprintf("85%04d", i))
	}
	site.SetListing(25, listing, 20)
	srv := httptest.NewServer(site)
	defer srv.Close()
	fr := connect(t, n.URL(), frontier.Options{AckWait: 5 * time.Second})
	sinkURL := n.URL() + "/papers.audit?stream=AUDIT"
	var notes []engine.WalkNote
	night := func(run string) (pages, papers int64) {
		ws, err := fr.Ledger().WalkState(ctx, 25)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := fr.Enqueue(ctx, frontier.WalkJob(25, run, engine.NewWalk(engine.Limits{StopAfterKnownPages: 1, MaxPages: 50}, 1, ws))); err != nil || got.Added != 1 {
			t.Fatalf("enqueue: %+v %v", got, err)
		}
		w := newWorker(t, n.URL(), srv.URL, sinkURL, frontier.WorkerOptions{IdleExit: time.Second})
		if err := w.Run(ctx); err != nil {
			t.Fatal(err)
		}
		notes, _ = w.run.Summary().WalkNotes()
		return w.Jobs().Done, w.run.Summary().PapersNew.Load()
	}
	// Night 1 walks the 3 pages to the last: the round is complete. The
	// fleet's ledger was empty: the worker says it is a first crawl, and
	// how a fleet fetches history.
	if p, d := night("n1"); p != 3 || d != 60 {
		t.Fatalf("night 1: %d pages, %d papers", p, d)
	}
	if len(notes) != 1 || notes[0].Text != engine.FleetFirstCrawlNote {
		t.Errorf("night 1's notes: %+v, want the fleet's first-crawl note", notes)
	}
	// Night 2: page 1 proves the walk done; the audit re-reads page 2.
	if p, d := night("n2"); p != 2 || d != 0 || len(notes) != 0 {
		t.Fatalf("night 2: %d pages, %d papers, notes %v; want page 1 and the audit's page 2, nothing to say", p, d, notes)
	}
	ws, err := fr.Ledger().WalkState(ctx, 25)
	if err != nil || ws.Audit.Next != 3 || ws.Audit.Round == 0 || ws.Audit.Pages != 3 {
		t.Fatalf("the audit's place after night 2: %+v %v", ws.Audit, err)
	}
	st, err := fr.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := fr.FillAudit(ctx, st); err != nil || st.Audit == nil || st.Audit.Journals != 1 || st.Audit.Unaudited != 0 || st.Audit.Round == 0 {
		t.Fatalf("the status's audit: %+v %v", st.Audit, err)
	}
}
