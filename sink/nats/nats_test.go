package nats_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/litcrawl/litcrawl/internal/backoff"
	"github.com/litcrawl/litcrawl/internal/natstest"
	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/sink"
	natssink "github.com/litcrawl/litcrawl/sink/nats"
	"github.com/litcrawl/litcrawl/sink/sinktest"
)

// readStream returns every record in the stream, in stream order.
func readStream(t *testing.T, url, stream string) []record.Record {
	t.Helper()
	var out []record.Record
	for _, m := range natstest.Messages(t, url, stream) {
		var r record.Record
		if err := json.Unmarshal(m.Data, &r); err != nil {
			t.Fatalf("message %d is not a record: %v", m.Sequence, err)
		}
		if id := m.Header.Get(jetstream.MsgIDHeader); id != natssink.MsgID(&r) {
			t.Fatalf("message %d: Nats-Msg-Id %q, record id %q revision %d", m.Sequence, id, r.ID, r.Revision)
		}
		out = append(out, r)
	}
	return out
}

func TestNATSConformance(t *testing.T) {
	n := natstest.Start(t)
	var streams atomic.Int32
	sinktest.Run(t, func(t *testing.T) sinktest.Destination {
		stream := fmt.Sprintf("PAPERS%d", streams.Add(1))
		url := fmt.Sprintf("nats://%s/papers.%s?stream=%s", n.HostPort(), strings.ToLower(stream), stream)
		return sinktest.Destination{
			Open: func(t *testing.T) sink.Sink { return sinktest.Open(t, url, sink.Options{}) },
			Read: func(t *testing.T) []record.Record { return readStream(t, n.URL(), stream) },
			Raw: func(t *testing.T) [][]byte {
				var out [][]byte
				for _, m := range natstest.Messages(t, n.URL(), stream) {
					out = append(out, m.Data)
				}
				return out
			},
		}
	}, sinktest.Features{DedupeByID: true, Refuse: func(id string) record.Record { return sinktest.Oversized(id, 1<<20) }})
}

// The server restarts mid-stream: a Write made while it is away is retried
// until it is back, and the stream holds every record once.
func TestNATSSurvivesServerRestart(t *testing.T) {
	n := natstest.Start(t)
	url := fmt.Sprintf("nats://%s/papers.new?stream=PAPERS&ack_timeout=1s", n.HostPort())
	s := sink.Retry(sinktest.Open(t, url, sink.Options{}), sink.RetryPolicy{Attempts: 60, Base: 50 * time.Millisecond, Max: 500 * time.Millisecond})
	defer s.Close()
	a, b := sinktest.Records("before", 10), sinktest.Records("during", 10)
	if err := s.Write(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	n.Stop()
	done := make(chan error, 1)
	go func() { done <- s.Write(context.Background(), b) }()
	n.Restart() // same port, same store directory
	if err := <-done; err != nil {
		t.Fatalf("Write across the restart: %v", err)
	}
	if err := s.Write(context.Background(), a); err != nil { // a resend: dropped by msg-id
		t.Fatal(err)
	}
	got := readStream(t, n.URL(), "PAPERS")
	if len(got) != 20 {
		t.Fatalf("stream holds %d records, want 20", len(got))
	}
}

func TestNATSStreamChecks(t *testing.T) {
	n := natstest.Start(t)
	base := n.URL()
	// create=false and no stream.
	_, err := sink.Open(context.Background(), base+"/papers.new?stream=MISSING&create=false", sink.Options{})
	if err == nil || !strings.Contains(err.Error(), "stream MISSING does not exist") {
		t.Errorf("create=false: %v", err)
	}
	// An existing stream with a short duplicate window and other subjects.
	nc, _ := nats.Connect(base)
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "SHORT", Subjects: []string{"lit.*.new"}, Duplicates: time.Minute}); err != nil {
		t.Fatal(err)
	}
	_, err = sink.Open(context.Background(), base+"/other.subject?stream=SHORT", sink.Options{})
	if err == nil || !strings.Contains(err.Error(), "does not take subject other.subject") {
		t.Errorf("subject outside the stream: %v", err)
	}
	var logs natstest.LockedBuffer
	s, err := sink.Open(context.Background(), base+"/lit.cs.new?stream=SHORT", sink.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if !strings.Contains(logs.String(), "duplicate window is shorter") {
		t.Errorf("no warning about the 1m window: %q", logs.String())
	}
	// A created stream gets the asked window.
	s, err = sink.Open(context.Background(), base+"/made.here?stream=MADE&dupe_window=2h", sink.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	st, _ := js.Stream(context.Background(), "MADE")
	if w := st.CachedInfo().Config.Duplicates; w != 2*time.Hour {
		t.Errorf("duplicate window = %v, want 2h", w)
	}
}

func TestNATSURLErrors(t *testing.T) {
	tests := map[string]string{
		"nats://127.0.0.1:4222/papers":                           "expected ?stream=NAME",
		"nats://127.0.0.1:4222/?stream=P":                        "expected a subject",
		"nats:///papers?stream=P":                                "expected nats://HOST:PORT",
		"nats://127.0.0.1:4222/papers?stream=P&dupe_window=soon": `dupe_window="soon"`,
		"nats://127.0.0.1:4222/papers?stream=P&color=red":        `unknown parameter "color"`,
		"nats://127.0.0.1:4222/papers?stream=A.B":                "expected ?stream=NAME",
		"nats://127.0.0.1:4222/papers?stream=P&tls_cert=c.pem":   "tls_cert and tls_key go together",
		"nats://127.0.0.1:4222/papers.*?stream=P":                "a wildcard (* or >) cannot be published to",
		"nats://127.0.0.1:4222/papers.>?stream=P":                "a wildcard",
		"nats://127.0.0.1:4222/papers?stream=P&stream=Q":         `parameter "stream" given 2 times`,
		"tls://127.0.0.1:4222/papers?stream=P&tls=false":         "tls=false contradicts tls://",
		"nats://127.0.0.1:4222/papers?stream=P&tokne=s3cret":     `unknown parameter "tokne"`,
	}
	for url, want := range tests {
		_, err := sink.Open(context.Background(), url, sink.Options{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%q) = %v, want an error containing %q", url, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Open(%q) shows a mistyped secret's value: %v", url, err)
		}
	}
}

// Credentials from the URL or the environment work, and a refused
// password never shows in the error.
func TestNATSCredentials(t *testing.T) {
	n := natstest.Start(t, natstest.WithUser("crawler", "s3cret-pw"))
	good := fmt.Sprintf("nats://crawler:s3cret-pw@%s/papers.new?stream=P", n.HostPort())
	s := sinktest.Open(t, good, sink.Options{})
	if d := sink.Describe(s); strings.Contains(d, "s3cret-pw") {
		t.Errorf("Describe leaks the password: %s", d)
	}
	s.Close()

	_, err := sink.Open(context.Background(), fmt.Sprintf("nats://crawler:wrong-pw@%s/papers.new?stream=P", n.HostPort()), sink.Options{})
	if err == nil || strings.Contains(err.Error(), "wrong-pw") || !strings.Contains(err.Error(), "REDACTED") {
		t.Errorf("refused login: %v", err)
	}

	t.Setenv("NATS_USER", "crawler")
	t.Setenv("NATS_PASSWORD", "s3cret-pw")
	s = sinktest.Open(t, fmt.Sprintf("nats://%s/papers.new?stream=P", n.HostPort()), sink.Options{})
	s.Close()
	// An explicit URL credential is never overridden by the environment.
	_, err = sink.Open(context.Background(), fmt.Sprintf("nats://crawler:wrong-pw@%s/papers.new?stream=P", n.HostPort()), sink.Options{})
	if err == nil {
		t.Error("the environment's password replaced the URL's")
	}
}

// BenchmarkNATSWrite: asynchronous publishes to an in-process JetStream
// server (file storage), waiting for every ack of each page.
func BenchmarkNATSWrite(b *testing.B) {
	n := natstest.Start(b)
	s, err := sink.Open(context.Background(), fmt.Sprintf("nats://%s/papers.bench?stream=BENCH", n.HostPort()), sink.Options{})
	if err != nil {
		b.Fatal(err)
	}
	sinktest.Bench(b, s)
}

// replicas= asks for a replica count: a new stream is created with it, and
// an existing stream with another count is moved in place where the
// server can hold it (the frontier's cluster test moves them to three); a
// single server cannot hold three, and the error says so and what to do,
// on the module's server and on Debian's 2.9.10 (which, asked, records
// three replicas and keeps one).
func TestNATSReplicas(t *testing.T) {
	for _, server := range []string{"module", "debian"} {
		t.Run(server, func(t *testing.T) {
			if server == "module" {
				replicasOn(t, natstest.Start(t).URL())
			} else {
				replicasOn(t, natstest.StartBinary(t).URL)
			}
		})
	}
}

func replicasOn(t *testing.T, url string) {
	s, err := sink.Open(context.Background(), url+"/papers.r?stream=REPL&replicas=1", sink.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, url := range []string{url + "/papers.r?stream=REPL&replicas=3", url + "/papers.q?stream=NEW3&replicas=3"} {
		_, err = sink.Open(context.Background(), url, sink.Options{})
		if err == nil || !strings.Contains(err.Error(), "single server, not a cluster") || !strings.Contains(err.Error(), "set replicas= on the sink URL to 1") {
			t.Errorf("%s: %v", url, err)
		}
	}
	if _, err := sink.Open(context.Background(), url+"/papers.r?stream=REPL&replicas=9", sink.Options{}); err == nil || !strings.Contains(err.Error(), `replicas="9": expected a number of replicas from 1 to 5`) {
		t.Errorf("replicas=9: %v", err)
	}
	if st := natstest.StreamConfig(t, url, "REPL"); st.Replicas > 1 {
		t.Errorf("the stream has %d replicas on a single server", st.Replicas)
	}
}

// A stream made with a max_msg_size below the server's max_payload refuses
// a larger record with JetStream error 10054: that is a refusal (the
// record goes to the quarantine), not a sink failure that blocks every
// later run.
func TestStreamMaxMsgSizeIsARefusal(t *testing.T) {
	n := natstest.Start(t)
	nc, err := nats.Connect(n.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "SMALL", Subjects: []string{"papers.small"}, MaxMsgSize: 4000}); err != nil {
		t.Fatal(err)
	}
	s := sinktest.Open(t, n.URL()+"/papers.small?stream=SMALL", sink.Options{})
	defer s.Close()
	good := sinktest.Records("m", 3)
	bad := sinktest.Oversized("m-big", 5000)
	err = s.Write(context.Background(), []record.Record{good[0], bad})
	if !errors.Is(err, sink.ErrRefused) || errors.Is(err, backoff.ErrRetryable) {
		t.Fatalf("Write = %v, want a refusal", err)
	}
	var kept []sink.Refusal
	q := quarantineFunc(func(rs []sink.Refusal) { kept = append(kept, rs...) })
	if err := sink.Quarantined(s, q, nil).Write(context.Background(), []record.Record{good[0], bad, good[1], good[2]}); err != nil {
		t.Fatal(err)
	}
	if ids := natstest.RecordIDs(t, n.URL(), "SMALL"); len(kept) != 1 || len(ids) != 3 || ids["m-0"] != 1 {
		t.Errorf("quarantined %d, stream %v", len(kept), ids)
	}
}

type quarantineFunc func([]sink.Refusal)

func (f quarantineFunc) Put(_ context.Context, rs []sink.Refusal) error { f(rs); return nil }

// A sink opened as the cluster's JetStream meta leader goes (a worker
// starting while a server is restarted) waits out the election: the
// stream lookup is asked again, each try bounded, rather than one
// request spending the whole start unanswered or a 503 ending it.
func TestNATSOpensThroughAnElection(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster")
	}
	c := natstest.StartCluster(t, 3)
	url := "nats://" + c.Nodes[0].HostPort() + "," + c.Nodes[1].HostPort() + "," + c.Nodes[2].HostPort() + "/papers.e?stream=ELECT&replicas=3"
	s, err := sink.Open(context.Background(), url, sink.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	// The stream's three replicas are up and current before a server
	// goes: the test is of the sink's start, not of a stream still
	// forming when its leader is lost.
	js := natstest.JetStream(t, c.URL())
	natstest.Eventually(t, 30*time.Second, "the stream's replicas never became current", func() bool {
		st, err := js.Stream(context.Background(), "ELECT")
		if err != nil {
			return false
		}
		cl := st.CachedInfo().Cluster
		if cl == nil || cl.Leader == "" || len(cl.Replicas) != 2 {
			return false
		}
		for _, r := range cl.Replicas {
			if !r.Current {
				return false
			}
		}
		return true
	})
	for _, n := range c.Nodes {
		if n.Raw().JetStreamIsLeader() {
			n.Stop()
		}
	}
	start := time.Now()
	errs := make(chan error, 3)
	for i := range 3 {
		go func() {
			s, err := sink.Open(context.Background(), url, sink.Options{})
			if err == nil {
				err = sink.Retry(s, sink.DefaultRetry).Write(context.Background(), []record.Record{{ID: fmt.Sprint("p", i), Title: "t"}})
				s.Close()
			}
			errs <- err
		}()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatalf("open during the election (%v after the leader went): %v", time.Since(start).Round(time.Millisecond), err)
		}
	}
	t.Logf("opened %v after the meta leader went", time.Since(start).Round(time.Millisecond))
}

// Workers delivering one paper at once (a paper that moved to the next
// page between two workers' fetches) each get it acknowledged: the
// server's "duplicate message id is in process" is tried again, not a
// failure, and the stream holds the paper once.
func TestNATSOnePaperFromManyWritersAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster")
	}
	c := natstest.StartCluster(t, 3)
	url := c.Nodes[0].URL()
	const writers = 8
	sinks := make([]sink.Sink, writers)
	for i := range sinks {
		s, err := sink.Open(context.Background(), url+"/papers.d?stream=DUP&replicas=3", sink.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		sinks[i] = sink.Retry(s, sink.RetryPolicy{Attempts: 20, MaxElapsed: 10 * time.Second, Base: 10 * time.Millisecond, Max: 100 * time.Millisecond})
	}
	for round := range 20 {
		recs := []record.Record{{ID: fmt.Sprint("same-", round), Title: "t"}}
		errs := make(chan error, writers)
		for _, s := range sinks {
			go func() { errs <- s.Write(context.Background(), recs) }()
		}
		for range writers {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
	if got := natstest.RecordIDs(t, url, "DUP"); len(got) != 20 {
		t.Fatalf("the stream holds %d papers, want 20: %v", len(got), got)
	}
	for id, n := range natstest.RecordIDs(t, url, "DUP") {
		if n != 1 {
			t.Errorf("paper %s is in the stream %d times", id, n)
		}
	}
}
