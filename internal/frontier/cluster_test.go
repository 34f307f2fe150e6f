package frontier_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/internal/backoff"
	"github.com/litcrawl/litcrawl/internal/frontier"
	"github.com/litcrawl/litcrawl/internal/natstest"
	"github.com/litcrawl/litcrawl/internal/testsite"
)

// A three-node JetStream cluster loses the server that leads the jobs
// stream while three workers crawl a flaky site: the frontier drains, no
// job is lost, every paper is in the (replicated) records stream exactly
// once, and status answers throughout.
func TestClusterSurvivesLosingALeader(t *testing.T) { clusterRun(t, false) }

// As above, and the lost server comes back mid-run and rejoins.
func TestClusterLeaderRestarts(t *testing.T) { clusterRun(t, true) }

func clusterRun(t *testing.T, restart bool) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs a three-node cluster")
	}
	start := time.Now()
	c := natstest.StartCluster(t, 3)
	const journals, pagesEach, papers = 3, 8, 20
	site := testsite.New()
	var js []int64
	for j := range journals {
		js = append(js, int64(501+j))
		site.SynthJournal(int64(501+j), pagesEach, papers)
	}
	p := testsite.Profiles["flaky"]
	p.SlowBy = 5 * time.Millisecond
	site.SetProfile(p, 11)
	srv := httptest.NewServer(site)
	defer srv.Close()

	// Everything replicated on three servers: the jobs, the dead letters,
	// the papers and pace buckets, the records stream.
	opts := frontier.Options{AckWait: 2 * time.Second, MaxDeliver: 30, Replicas: 3}
	fr := connect(t, c.URL(), opts)
	if got, err := fr.Enqueue(ctx, pages("run-c", js, 1, pagesEach)...); err != nil || got.Added != journals*pagesEach {
		t.Fatalf("enqueue: %+v %v", got, err)
	}
	total := journals * pagesEach
	// Each worker knows one server only: the one on the lost node must
	// find the others by itself.
	var jobsStarted atomic.Int64
	lose := make(chan struct{})
	wctx, stopWorkers := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var workers []*worker
	for _, node := range c.Nodes {
		w := newWorker(t, node.URL(), srv.URL, node.URL()+"/papers.cluster?stream=CLUSTER_RECORDS&replicas=3",
			frontier.WorkerOptions{Concurrency: 2, Retry: backoff.Policy{Base: 200 * time.Millisecond, Max: 2 * time.Second},
				OnJob: func(frontier.Job) {
					if jobsStarted.Add(1) == int64(total/3) {
						close(lose)
					}
				}})
		workers = append(workers, w)
		wg.Go(func() { w.Run(wctx) })
	}
	defer func() { stopWorkers(); wg.Wait() }()

	<-lose
	var leader *natstest.Server
	natstest.Eventually(t, 20*time.Second, "the jobs stream has no leader", func() bool {
		leader = c.StreamLeader(frontier.JobsStream)
		return leader != nil
	})
	lostAt := time.Now()
	leader.Stop()
	t.Logf("%v: lost %s, the jobs stream's leader, after %d of %d jobs started", time.Since(start).Round(time.Millisecond), leader.Name(), jobsStarted.Load(), total)

	// Status answers throughout (it waits out the election), until the
	// frontier is drained.
	asked := time.Now()
	statusFr := connect(t, survivors(c, leader), frontier.Options{})
	slowest := time.Since(asked) // crawl status connects, then reads
	var drainedAt time.Time
	natstest.Eventually(t, 70*time.Second, "the frontier did not drain", func() bool {
		if restart && !leader.Running() && time.Since(lostAt) > time.Second {
			leader.Restart() // mid-run: the lost server comes back
			t.Logf("%v: %s restarted", time.Since(start).Round(time.Millisecond), leader.Name())
		}
		asked := time.Now()
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		st, err := statusFr.Status(sctx)
		if err != nil {
			t.Fatalf("status did not answer during the outage: %v", err)
		}
		slowest = max(slowest, time.Since(asked))
		if st.Pending == 0 && st.InFlight == 0 {
			drainedAt = time.Now()
			return true
		}
		return false
	})
	stopWorkers()
	wg.Wait()
	if restart && !leader.Running() {
		leader.Restart() // the run drained within a second: the server comes back after it
		t.Logf("%v: %s restarted after the drain", time.Since(start).Round(time.Millisecond), leader.Name())
	}

	st, err := statusFr.Status(ctx)
	if err != nil || st.Pending != 0 || st.Dead != 0 {
		t.Fatalf("status after the drain: %+v %v; want nothing pending or dead", st, err)
	}
	ids := natstest.RecordIDs(t, survivors(c, leader), "CLUSTER_RECORDS")
	dups := 0
	for _, n := range ids {
		if n != 1 {
			dups++
		}
	}
	var done, retried int64
	for _, w := range workers {
		done += w.Jobs().Done
		retried += w.Jobs().Retried
	}
	t.Logf("%d jobs, %d papers in the records stream (%d duplicated), %d jobs done (with redeliveries), %d retried; "+
		"drained %v after the loss; slowest status %v; whole test %v",
		total, len(ids), dups, done, retried, drainedAt.Sub(lostAt).Round(time.Millisecond), slowest.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	if len(ids) != total*papers || dups != 0 {
		t.Fatalf("%d papers (%d duplicated) in the records stream, want %d each once", len(ids), dups, total*papers)
	}
	// The worker that knew only the lost server found another by itself.
	for i, n := range c.Nodes {
		if n == leader && !restart {
			if now := workers[i].f.Server(); now == n.URL() || now == "" {
				t.Errorf("the worker of the lost server is on %q", now)
			}
		}
	}
	if restart {
		natstest.Eventually(t, 30*time.Second, "the restarted server did not catch up with the cluster", func() bool {
			return leader.Raw().JetStreamIsCurrent()
		})
	}
}

// survivors lists the running nodes' URLs.
func survivors(c *natstest.Cluster, lost *natstest.Server) string {
	var us []string
	for _, n := range c.Nodes {
		if n != lost {
			us = append(us, n.URL())
		}
	}
	return strings.Join(us, ",")
}
