package sink_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/sink"
	"github.com/litcrawl/litcrawl/sink/sinktest"
)

// lockedBuffer is a log destination that the client's callback goroutines
// may write to while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// natsServer runs an in-process nats-server with JetStream in a temporary
// directory. port 0 picks a free one.
type natsServer struct {
	t       testing.TB
	opts    server.Options
	srv     *server.Server
	storeAt string
}

func startNATS(t testing.TB, port int, user, pass string) *natsServer {
	t.Helper()
	n := &natsServer{t: t, storeAt: t.TempDir()}
	n.opts = server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: n.storeAt,
		NoLog: true, NoSigs: true, Username: user, Password: pass}
	if port == 0 {
		n.opts.Port = -1
	}
	n.start()
	t.Cleanup(n.stop)
	return n
}

func (n *natsServer) start() {
	n.t.Helper()
	srv, err := server.NewServer(&n.opts)
	if err != nil {
		n.t.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		n.t.Fatal("nats-server did not start")
	}
	n.srv = srv
	// A restart must come back on the same port.
	n.opts.Port = srv.Addr().(*net.TCPAddr).Port
}

func (n *natsServer) stop() {
	if n.srv != nil {
		n.srv.Shutdown()
		n.srv.WaitForShutdown()
		n.srv = nil
	}
}

func (n *natsServer) hostPort() string { return fmt.Sprintf("127.0.0.1:%d", n.opts.Port) }

// readStream returns every record in the stream, in stream order.
func readStream(t *testing.T, n *natsServer, stream string) []record.Record {
	t.Helper()
	nc, err := nats.Connect("nats://"+n.hostPort(), nats.UserInfo(n.opts.Username, n.opts.Password))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []record.Record
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("message %d: %v", seq, err)
		}
		var r record.Record
		if err := json.Unmarshal(m.Data, &r); err != nil {
			t.Fatalf("message %d is not a record: %v", seq, err)
		}
		if id := m.Header.Get(jetstream.MsgIDHeader); id != r.ID {
			t.Fatalf("message %d: Nats-Msg-Id %q, record id %q", seq, id, r.ID)
		}
		out = append(out, r)
	}
	return out
}

func TestNATSConformance(t *testing.T) {
	n := startNATS(t, 0, "", "")
	var streams atomic.Int32
	sinktest.Run(t, func(t *testing.T) sinktest.Destination {
		stream := fmt.Sprintf("PAPERS%d", streams.Add(1))
		url := fmt.Sprintf("nats://%s/papers.%s?stream=%s", n.hostPort(), strings.ToLower(stream), stream)
		return sinktest.Destination{
			Open: func(t *testing.T) sink.Sink { return openT(t, url, sink.Options{}) },
			Read: func(t *testing.T) []record.Record { return readStream(t, n, stream) },
		}
	}, sinktest.Features{DedupeByID: true})
}

// The server restarts mid-stream: a Write made while it is away is retried
// until it is back, and the stream holds every record once.
func TestNATSSurvivesServerRestart(t *testing.T) {
	n := startNATS(t, 0, "", "")
	url := fmt.Sprintf("nats://%s/papers.new?stream=PAPERS&ack_timeout=1s", n.hostPort())
	s := sink.Retry(openT(t, url, sink.Options{}), sink.RetryPolicy{Attempts: 60, Base: 50 * time.Millisecond, Max: 500 * time.Millisecond})
	defer s.Close()
	a, b := sinktest.Records("before", 10), sinktest.Records("during", 10)
	if err := s.Write(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	n.stop()
	done := make(chan error, 1)
	go func() { done <- s.Write(context.Background(), b) }()
	n.start() // same port, same store directory
	if err := <-done; err != nil {
		t.Fatalf("Write across the restart: %v", err)
	}
	if err := s.Write(context.Background(), a); err != nil { // a resend: dropped by msg-id
		t.Fatal(err)
	}
	got := readStream(t, n, "PAPERS")
	if len(got) != 20 {
		t.Fatalf("stream holds %d records, want 20", len(got))
	}
}

func TestNATSStreamChecks(t *testing.T) {
	n := startNATS(t, 0, "", "")
	base := "nats://" + n.hostPort()
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
	var logs lockedBuffer
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
	}
	for url, want := range tests {
		_, err := sink.Open(context.Background(), url, sink.Options{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%q) = %v, want an error containing %q", url, err, want)
		}
	}
}

// Credentials from the URL or the environment work, and a refused
// password never shows in the error.
func TestNATSCredentials(t *testing.T) {
	n := startNATS(t, 0, "crawler", "s3cret-pw")
	good := fmt.Sprintf("nats://crawler:s3cret-pw@%s/papers.new?stream=P", n.hostPort())
	s := openT(t, good, sink.Options{})
	if d := sink.Describe(s); strings.Contains(d, "s3cret-pw") {
		t.Errorf("Describe leaks the password: %s", d)
	}
	s.Close()

	_, err := sink.Open(context.Background(), fmt.Sprintf("nats://crawler:wrong-pw@%s/papers.new?stream=P", n.hostPort()), sink.Options{})
	if err == nil || strings.Contains(err.Error(), "wrong-pw") || !strings.Contains(err.Error(), "REDACTED") {
		t.Errorf("refused login: %v", err)
	}

	t.Setenv("NATS_USER", "crawler")
	t.Setenv("NATS_PASSWORD", "s3cret-pw")
	s = openT(t, fmt.Sprintf("nats://%s/papers.new?stream=P", n.hostPort()), sink.Options{})
	s.Close()
	// An explicit URL credential is never overridden by the environment.
	_, err = sink.Open(context.Background(), fmt.Sprintf("nats://crawler:wrong-pw@%s/papers.new?stream=P", n.hostPort()), sink.Options{})
	if err == nil {
		t.Error("the environment's password replaced the URL's")
	}
}

// startNATSB starts a server for a benchmark and returns its host:port.
func startNATSB(b *testing.B) string { return startNATS(b, 0, "", "").hostPort() }
