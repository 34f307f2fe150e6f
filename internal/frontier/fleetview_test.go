package frontier_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/internal/frontier"
	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/internal/natstest"
	"github.com/litcrawl/litcrawl/internal/testsite"
)

// clusters start three-node clusters of the module's servers and of
// Debian's nats-server.
var clusters = []struct {
	kind  string
	start func(t *testing.T) natstest.Nodes
}{
	{"module", func(t *testing.T) natstest.Nodes { return natstest.StartCluster(t, 3).Any() }},
	{"debian 2.9.10", func(t *testing.T) natstest.Nodes { return natstest.StartBinaryCluster(t, 3).Any() }},
}

// With every stream and bucket on three servers, the fleet's view (status,
// its workers, its runs) answers within seconds, every time it is asked
// over a minute, while one server of the three is down: the one leading
// the jobs stream, or one following it; on the module's server and on
// Debian's 2.9.10.
func TestFleetViewWhileAServerIsDown(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs three-node clusters for a minute")
	}
	over := time.Minute
	if d, err := time.ParseDuration(os.Getenv("OUTAGE_FOR")); err == nil {
		over = d
	}
	for _, k := range clusters {
		for _, lose := range []string{"leader", "follower", "leader killed"} {
			if lose == "leader killed" && k.kind == "module" {
				continue // an in-process server cannot be killed -9
			}
			t.Run(k.kind+"/"+lose, func(t *testing.T) {
				t.Parallel()
				c := k.start(t)
				fr := connect(t, c.URL(nil), frontier.Options{Replicas: 3, AckWait: 5 * time.Second})
				if _, err := fr.Enqueue(ctx, pages("run-o", []int64{7}, 1, 20)...); err != nil {
					t.Fatal(err)
				}
				kv, err := natstest.JetStream(t, c.URL(nil)).KeyValue(ctx, frontier.WorkersBucket)
				if err != nil {
					t.Fatal(err)
				}
				for i := range 3 {
					wi := frontier.WorkerInfo{Identity: frontier.Identity{ID: fmt.Sprintf("w%d", i), Host: "h", Started: time.Now()}, LastSeen: time.Now(), Every: 2}
					data, _ := json.Marshal(wi)
					if _, err := kv.Put(ctx, "w.w"+fmt.Sprint(i), data); err != nil {
						t.Fatal(err)
					}
					if err := fr.PublishRun(ctx, fmt.Sprintf("w%d", i), []byte(`{"run_id":"w`+fmt.Sprint(i)+`"}`)); err != nil {
						t.Fatal(err)
					}
				}
				// A walk state in the papers bucket, for the audit's line.
				if err := fr.Ledger().SetWalkState(ctx, 7, ledger.WalkState{Head: []string{"p1"}, Audit: ledger.Audit{Next: 2, Since: time.Now().Unix()}}); err != nil {
					t.Fatal(err)
				}
				var lost natstest.Node
				natstest.Eventually(t, 30*time.Second, "the jobs stream has no leader", func() bool {
					lost = c.StreamLeader(frontier.JobsStream)
					return lost != nil
				})
				if lose == "leader killed" {
					lost = killed{lost.(killable)}
				}
				if lose == "follower" {
					for _, n := range c.Nodes {
						if n != lost {
							lost = n
							break
						}
					}
				}
				// The reader knows every server, the lost one too, as the
				// walkthrough's commands do.
				view := connect(t, c.URL(nil), frontier.Options{})
				lost.Stop()
				t.Logf("%s: stopped %s (%s)", c.Kind, lost.Name(), lose)
				var slowest time.Duration
				asks := 0
				tick := time.NewTicker(100 * time.Millisecond) // asked again and again, not in a tight loop
				defer tick.Stop()
				for end := time.Now().Add(over); time.Now().Before(end); asks++ {
					<-tick.C
					for _, read := range []struct {
						what string
						do   func(context.Context) error
					}{
						{"status", func(ctx context.Context) error {
							st, err := view.Status(ctx)
							if err == nil {
								err = view.FillAudit(ctx, st)
							}
							if err == nil {
								_, err = view.DeadLetters(ctx, 5)
							}
							return err
						}},
						{"workers", func(ctx context.Context) error {
							ws, _, err := view.Workers(ctx)
							if err == nil && len(ws) != 3 {
								err = fmt.Errorf("%d workers, want 3", len(ws))
							}
							return err
						}},
						{"runs", func(ctx context.Context) error {
							rs, _, err := view.Runs(ctx)
							if err == nil && len(rs) != 3 {
								err = fmt.Errorf("%d runs, want 3", len(rs))
							}
							return err
						}},
					} {
						start := time.Now()
						rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
						err := read.do(rctx)
						cancel()
						took := time.Since(start)
						slowest = max(slowest, took)
						// A stopped server hands its leaderships over; a killed
						// one leaves an election after nats-server's timeout
						// (4 to 9 s).
						if err != nil || took > 15*time.Second {
							t.Fatalf("after %d asks, %v into the outage: %s: %v (in %v)", asks, time.Since(end.Add(-over)).Round(time.Millisecond), read.what, err, took.Round(time.Millisecond))
						}
					}
				}
				t.Logf("%s, %s down: %d asks over %v, the slowest read %v", c.Kind, lose, asks, over, slowest.Round(time.Millisecond))
			})
		}
	}
}

// Three workers announce themselves fast (an ack wait of 1 s: ten times a
// second, and at each job taken or let go) while status is asked again
// and again: every sample shows each worker once, at most one job in
// flight per worker (concurrency 1), and no more jobs done than were
// enqueued; on the module's server and on Debian's 2.9.10.
func TestStatusIsOneTrueReading(t *testing.T) {
	t.Parallel()
	for _, k := range []struct {
		kind string
		url  func(t *testing.T) string
	}{
		{"module", func(t *testing.T) string { return natstest.Start(t).URL() }},
		{"debian 2.9.10", func(t *testing.T) string { return natstest.StartBinary(t).URL }},
	} {
		t.Run(k.kind, func(t *testing.T) {
			t.Parallel()
			url := k.url(t)
			site := testsite.New()
			site.SynthJournal(21, 15, 20)
			site.SynthJournal(22, 15, 20)
			p := testsite.Profiles["flaky"]
			p.SlowBy = 20 * time.Millisecond
			site.SetProfile(p, 5)
			srv := httptest.NewServer(site)
			defer srv.Close()
			fr := connect(t, url, frontier.Options{AckWait: time.Second, MaxDeliver: 20})
			if got, err := fr.Enqueue(ctx, pages("run-s", []int64{21, 22}, 1, 15)...); err != nil || got.Added != 30 {
				t.Fatalf("enqueue: %+v %v", got, err)
			}
			const workers = 3
			var wg sync.WaitGroup
			wctx, stop := context.WithCancel(ctx)
			defer func() { stop(); wg.Wait() }()
			for i := range workers {
				w := newWorker(t, url, srv.URL, url+"/papers.s?stream=S_RECORDS", frontier.WorkerOptions{Concurrency: 1,
					Identity: frontier.Identity{ID: fmt.Sprintf("w%d", i), Host: "h", PID: i + 1}})
				wg.Go(func() { w.Run(wctx) })
			}
			natstest.Eventually(t, 20*time.Second, "the workers did not announce themselves", func() bool {
				ws, _, err := fr.Workers(ctx)
				return err == nil && len(ws) == workers
			})
			samples, sawInFlight := 0, 0
			for {
				st, err := fr.Status(ctx)
				if err != nil {
					t.Fatal(err)
				}
				samples++
				ids := map[string]bool{}
				for _, w := range st.Workers {
					if ids[w.ID] {
						t.Fatalf("sample %d: worker %s shown twice", samples, w.ID)
					}
					ids[w.ID] = true
				}
				if len(st.Workers) != workers || len(st.InFlightJobs) > workers || st.Done > int64(st.Enqueued) || st.WorkersNotShown != 0 {
					t.Fatalf("sample %d: %d workers, %d jobs in flight, %d done of %d enqueued, %d not shown; want %d, at most %d, done <= enqueued, 0",
						samples, len(st.Workers), len(st.InFlightJobs), st.Done, st.Enqueued, st.WorkersNotShown, workers, workers)
				}
				var perJournal int64
				for _, j := range st.Journals {
					perJournal += j.Done
				}
				if perJournal > int64(st.Enqueued) {
					t.Fatalf("sample %d: the journals' done add up to %d of %d enqueued", samples, perJournal, st.Enqueued)
				}
				if len(st.InFlightJobs) > 0 {
					sawInFlight++
				}
				if st.Pending == 0 {
					break
				}
			}
			t.Logf("%s: %d samples while %d workers ran, %d with jobs in flight", k.kind, samples, workers, sawInFlight)
			if samples < 10 || sawInFlight == 0 {
				t.Errorf("%d samples, %d with jobs in flight: the run was too short to sample", samples, sawInFlight)
			}
			st, err := fr.Status(ctx)
			if err != nil || st.Done != 30 || st.Enqueued != 30 {
				t.Errorf("after the run: %+v %v; want 30 done of 30 enqueued", st, err)
			}
		})
	}
}

// killable is a node that can be lost with kill -9; killed is one that
// is, when stopped.
type killable interface {
	natstest.Node
	Kill()
}

type killed struct{ killable }

func (k killed) Stop() { k.Kill() }

// What anyone who can write to the fleet's buckets and streams may put
// there does not stop the fleet's view: a key too long to ask for (its get
// would pass the server's control line and cost the connection), more
// worker entries than a read takes (walked, not listed), a walk state
// under a long key, and more job subjects than a status lists per journal.
// Each is left out and counted; the connection stays up.
func TestFleetViewAgainstHostileKeys(t *testing.T) {
	t.Parallel()
	n := natstest.Start(t)
	fr := connect(t, n.URL(), frontier.Options{})
	js := natstest.JetStream(t, n.URL())
	workers, err := js.KeyValue(ctx, frontier.WorkersBucket)
	if err != nil {
		t.Fatal(err)
	}
	papers, err := js.KeyValue(ctx, frontier.PapersBucket)
	if err != nil {
		t.Fatal(err)
	}
	entry := func(id string) []byte {
		data, _ := json.Marshal(frontier.WorkerInfo{Identity: frontier.Identity{ID: id, Started: time.Now()}, LastSeen: time.Now(), Every: 2})
		return data
	}
	long := "w." + strings.Repeat("L", 4000)
	if _, err := workers.Put(ctx, long, entry("long")); err != nil {
		t.Fatal(err)
	}
	if _, err := workers.Put(ctx, "w.real", entry("real")); err != nil {
		t.Fatal(err)
	}
	if _, err := papers.Put(ctx, "walk.7"+strings.Repeat("7", 4000), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, frontier.RunsSubject+"."+strings.Repeat("r", 4000), []byte(`{"run_id":"r"}`)); err != nil {
		t.Fatal(err)
	}
	ws, notShown, err := fr.Workers(ctx)
	if err != nil || len(ws) != 1 || ws[0].ID != "real" || notShown != 1 {
		t.Fatalf("workers beside a long key: %d read (%+v), %d not shown, %v; want the real one, 1 not shown", len(ws), ws, notShown, err)
	}
	if runs, notRead, err := fr.Runs(ctx); err != nil || len(runs) != 0 || notRead != 1 {
		t.Fatalf("runs beside a long subject: %d, %d not read, %v", len(runs), notRead, err)
	}
	st, err := fr.Status(ctx)
	if err == nil {
		err = fr.FillAudit(ctx, st)
	}
	if err != nil || fr.Closed() {
		t.Fatalf("status beside long keys: %v (connection closed: %v)", err, fr.Closed())
	}

	// More entries than a read takes: walked in order, the rest counted.
	for i := range frontier.MaxWorkersRead + 50 {
		if _, err := workers.Put(ctx, fmt.Sprintf("w.many-%05d", i), entry(fmt.Sprintf("many-%05d", i))); err != nil {
			t.Fatal(err)
		}
	}
	// A worker that announces itself now is read first, however many
	// entries came before it.
	if _, err := workers.Put(ctx, "w.fresh", entry("fresh")); err != nil {
		t.Fatal(err)
	}
	ws, notShown, err = fr.Workers(ctx)
	if err != nil || len(ws) > frontier.MaxWorkersRead || len(ws)+notShown != frontier.MaxWorkersRead+53 {
		t.Fatalf("%d workers read, %d not shown, %v; want at most %d, and every entry counted", len(ws), notShown, err, frontier.MaxWorkersRead)
	}
	if !slices.ContainsFunc(ws, func(w frontier.WorkerInfo) bool { return w.ID == "fresh" }) {
		t.Errorf("the worker that announced itself last is not among the %d read", len(ws))
	}

	// More job subjects than a status lists: the totals, not per journal.
	for i := range 20_001 {
		if _, err := js.PublishAsync(fmt.Sprintf("%s.9.%d", frontier.JobsSubject, i+1), []byte(`{"v":2,"journal":9,"page":1,"run_id":"r"}`)); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 999 || i == 20_000 { // a thousand in flight at most
			select {
			case <-js.PublishAsyncComplete():
			case <-time.After(time.Minute):
				t.Fatal("the jobs were not published")
			}
		}
	}
	if st, err = fr.Status(ctx); err != nil || st.Pending != 20_001 || !st.JournalsNotCounted {
		t.Fatalf("status over 20,001 job subjects: pending %d, not counted per journal %v, %v", st.Pending, st.JournalsNotCounted, err)
	}
}
