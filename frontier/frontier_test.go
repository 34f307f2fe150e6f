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
	"github.com/nats-io/nats.go/jetstream"

	"github.com/litcrawl/litcrawl/crawler"
	"github.com/litcrawl/litcrawl/frontier"
	"github.com/litcrawl/litcrawl/sink"
	_ "github.com/litcrawl/litcrawl/sink/nats"
	"github.com/litcrawl/litcrawl/testsite"
)

func startNATS(t *testing.T) string {
	t.Helper()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	return srv.ClientURL()
}

func newCrawler(t *testing.T, site *httptest.Server, f *frontier.Frontier, out sink.Sink) *crawler.Crawler {
	t.Helper()
	c, err := crawler.New(context.Background(), crawler.Config{
		BaseURL: site.URL, FirstPage: "/literature_d{journal}.htm", PageN: "/literature_d{journal}_{page}.htm",
		Concurrency: 2, Timeout: 5 * time.Second, MaxBodyBytes: 4 << 20,
		Retry:            crawler.RetryPolicy{MaxAttempts: 3, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond, MaxRetryAfter: 10 * time.Millisecond},
		BreakerThreshold: 50, BreakerCooldown: 10 * time.Millisecond, SlowdownMax: 5 * time.Millisecond,
		UserAgent: "litcrawl-test", Robots: true, Pacer: &frontier.Pacer{KV: f.Pace, Delay: time.Millisecond},
	}, nil, out, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// recordsIn counts each record id in a stream.
func recordsIn(t *testing.T, js jetstream.JetStream, stream string) map[string]int {
	t.Helper()
	ctx := context.Background()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := st.Info(ctx)
	ids := map[string]int{}
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		var r struct{ ID string }
		json.Unmarshal(m.Data, &r)
		ids[r.ID]++
	}
	return ids
}

// Three workers and one that dies mid-job share a backfill of a flaky
// site: the frontier drains, every paper reaches the records stream
// exactly once, and a page that cannot be fetched is dead-lettered with
// its error.
func TestWorkersShareABackfill(t *testing.T) {
	natsURL := startNATS(t)
	site := testsite.New()
	site.SynthJournal(11, 5, 20)
	site.SynthJournal(12, 5, 20)
	site.Inject(testsite.PagePath(11, 3), testsite.Fault{Kind: testsite.Status, Status: 403})
	p := testsite.Profiles["flaky"]
	p.SlowBy = time.Millisecond
	site.SetProfile(p, 3)
	srv := httptest.NewServer(site)
	defer srv.Close()

	ctx := context.Background()
	fr, err := frontier.Connect(ctx, natsURL, frontier.Options{AckWait: time.Second, MaxDeliver: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	var jobs []frontier.Job
	for _, j := range []int64{11, 12} {
		for pg := 1; pg <= 6; pg++ { // page 6 is past the end
			jobs = append(jobs, frontier.Job{Journal: j, Page: pg, RunID: "run-1"})
		}
	}
	if n, err := fr.Enqueue(ctx, jobs...); err != nil || n != 12 {
		t.Fatalf("enqueue: %d %v", n, err)
	}
	if n, _ := fr.Enqueue(ctx, jobs...); n != 0 {
		t.Fatalf("a second enqueue added %d jobs; each job is published once", n)
	}

	recordsURL := natsURL + "/papers.new?stream=RECORDS"
	var wg sync.WaitGroup
	run := func(die bool) {
		out, err := sink.Open(ctx, recordsURL, sink.Options{})
		if err != nil {
			t.Error(err)
			return
		}
		defer out.Close()
		f, err := frontier.Connect(ctx, natsURL, frontier.Options{AckWait: time.Second, MaxDeliver: 4})
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		w := &frontier.Worker{F: f, Crawler: newCrawler(t, srv, f, out), Out: out, Concurrency: 2,
			IdleExit: 3 * time.Second, RetryBase: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond}
		if die {
			// This worker dies as soon as it holds a job: that job must be
			// redelivered to another worker after its ack wait.
			w.OnJob = func(frontier.Job) { cancel() }
		}
		w.Run(wctx)
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
	dls, _ := fr.DeadLetters(ctx)
	if len(dls) != 1 || dls[0].Job.Journal != 11 || dls[0].Job.Page != 3 || !strings.Contains(dls[0].Error, "HTTP 403") {
		t.Errorf("dead letters: %+v", dls)
	}
	js, _ := jetstream.New(fr.NC)
	ids := recordsIn(t, js, "RECORDS")
	if len(ids) != 180 {
		t.Errorf("%d papers in the records stream, want 180 (200 less the dead page's 20)", len(ids))
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("paper %s is in the records stream %d times", id, n)
		}
	}
}

// A nightly walk is a chain of page jobs: the first night walks to the
// last page; the next one stops at the first page of papers known before.
func TestNightlyWalkChain(t *testing.T) {
	natsURL := startNATS(t)
	site := testsite.New()
	var listing []string
	for i := range 100 {
		listing = append(listing, fmt.Sprintf("77%04d", i))
	}
	site.SetListing(21, listing, 20)
	srv := httptest.NewServer(site)
	defer srv.Close()
	ctx := context.Background()
	fr, err := frontier.Connect(ctx, natsURL, frontier.Options{AckWait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	out, err := sink.Open(ctx, natsURL+"/papers.nightly?stream=NIGHTLY", sink.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	night := func(run string) map[string]int {
		fr.Enqueue(ctx, frontier.Job{Journal: 21, Page: 1, RunID: run, Nightly: true, StopAfterKnown: 1, MaxPages: 50})
		var wg sync.WaitGroup
		counts := make([]map[string]int, 2)
		for i := range 2 {
			wg.Go(func() {
				w := &frontier.Worker{F: fr, Crawler: newCrawler(t, srv, fr, out), Out: out, IdleExit: time.Second}
				w.Run(ctx)
				counts[i] = w.Counts()
			})
		}
		wg.Wait()
		total := map[string]int{}
		for _, c := range counts {
			for k, v := range c {
				total[k] += v
			}
		}
		return total
	}
	if c := night("n1"); c["pages"] != 5 || c["papers_delivered"] != 100 || site.Hits(testsite.PagePath(21, 6)) != 0 {
		t.Fatalf("night 1: %v (the walk must end at the last page its pager names)", c)
	}
	var fresh []string
	for i := range 10 {
		fresh = append(fresh, fmt.Sprintf("78%04d", i))
	}
	site.SetListing(21, append(fresh, listing...), 20)
	if c := night("n2"); c["pages"] != 2 || c["papers_delivered"] != 10 || site.Hits(testsite.PagePath(21, 3)) != 1 {
		t.Fatalf("night 2: %v (want pages 1-2, 10 new papers)", c)
	}
}

// A worker that dies on a job's last try: the server stops delivering it
// and says so in an advisory, and a watching worker dead-letters it.
func TestWorkerDiedOnLastTry(t *testing.T) {
	natsURL := startNATS(t)
	site := testsite.New()
	site.SynthJournal(41, 1, 5)
	srv := httptest.NewServer(site)
	defer srv.Close()
	ctx := context.Background()
	opts := frontier.Options{AckWait: 300 * time.Millisecond, MaxDeliver: 1}
	fr, err := frontier.Connect(ctx, natsURL, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	out, err := sink.Open(ctx, natsURL+"/papers.adv?stream=ADV", sink.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	// The victim takes the job, and dies with it (its only try).
	f2, err := frontier.Connect(ctx, natsURL, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()
	dctx, die := context.WithCancel(ctx)
	took := make(chan struct{})
	victim := &frontier.Worker{F: f2, Crawler: newCrawler(t, srv, f2, out), Out: out, IdleExit: time.Second,
		OnJob: func(frontier.Job) { die(); close(took) }}
	go victim.Run(dctx)
	fr.Enqueue(ctx, frontier.Job{Journal: 41, Page: 1, RunID: "r"})
	<-took
	// The watcher starts while the victim's try is still in its ack wait:
	// the server gives up on the job after it, and the watcher hears so.
	watcher := &frontier.Worker{F: fr, Crawler: newCrawler(t, srv, fr, out), Out: out, IdleExit: 2 * time.Second}
	if err := watcher.Run(ctx); err != nil {
		t.Fatal(err)
	}
	dls, _ := fr.DeadLetters(ctx)
	if len(dls) != 1 || !strings.Contains(dls[0].Error, "max deliveries reached") || dls[0].Job.Page != 1 || watcher.Counts()["pages"] != 0 {
		t.Fatalf("dead letters %+v, watcher %v", dls, watcher.Counts())
	}
	if st, _ := fr.Status(ctx); st.Pending != 0 {
		t.Errorf("the dead job is still pending: %+v", st)
	}
}
