// Package natstest starts real NATS servers for tests: an in-process
// nats-server with JetStream (the Go module's), a cluster of three of them,
// and Debian's nats-server binary as a process, so that the frontier and
// the NATS sink are tested against the servers they run on. Every server
// lives in a temporary directory and stops when its test ends.
package natstest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Server is one in-process nats-server with JetStream.
type Server struct {
	t    testing.TB
	opts server.Options
	srv  *server.Server
}

// Option changes a server's options before it starts.
type Option func(*server.Options)

// WithUser makes the server require a user and password.
func WithUser(user, pass string) Option {
	return func(o *server.Options) { o.Username, o.Password = user, pass }
}

// Start runs an in-process server on a free loopback port.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{t: t, opts: server.Options{Host: "127.0.0.1", Port: -1, JetStream: true,
		StoreDir: t.TempDir(), NoLog: true, NoSigs: true}}
	for _, o := range opts {
		o(&s.opts)
	}
	s.Restart()
	t.Cleanup(s.Stop)
	return s
}

// Restart starts the server again (same port, same store) after Stop.
func (s *Server) Restart() {
	s.t.Helper()
	o := s.opts
	srv, err := server.NewServer(&o)
	if err != nil {
		s.t.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(20 * time.Second) {
		s.t.Fatal("nats-server did not start")
	}
	s.srv = srv
	// A restart comes back on the same ports.
	s.opts.Port = srv.Addr().(*net.TCPAddr).Port
	if s.opts.Cluster.Port != 0 {
		s.opts.Cluster.Port = srv.ClusterAddr().Port
	}
}

// RestartWith stops the server and starts it again (same port, same
// store) with its options changed.
func (s *Server) RestartWith(opts ...Option) {
	s.t.Helper()
	s.Stop()
	for _, o := range opts {
		o(&s.opts)
	}
	s.Restart()
}

// Stop shuts the server down and waits until it is gone.
func (s *Server) Stop() {
	if s.srv != nil {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
		s.srv = nil
	}
}

// Running reports whether the server is up.
func (s *Server) Running() bool { return s.srv != nil }

// HostPort is the client address, 127.0.0.1:PORT.
func (s *Server) HostPort() string { return fmt.Sprintf("127.0.0.1:%d", s.opts.Port) }

// URL is the client URL, nats://127.0.0.1:PORT.
func (s *Server) URL() string { return "nats://" + s.HostPort() }

// Name is the server's name (its cluster name for a node).
func (s *Server) Name() string { return s.opts.ServerName }

// Raw is the running server, for leader checks.
func (s *Server) Raw() *server.Server { return s.srv }

// Cluster is three (or more) in-process servers forming a JetStream
// cluster on loopback.
type Cluster struct {
	Nodes []*Server
}

// StartCluster starts n clustered servers and waits until JetStream has a
// meta leader.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	clientPorts, routePorts := freePorts(t, n), freePorts(t, n)
	var routes []*url.URL
	for _, p := range routePorts {
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", p)})
	}
	c := &Cluster{}
	for i := range n {
		s := &Server{t: t, opts: server.Options{ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: clientPorts[i],
			JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
			Cluster: server.ClusterOpts{Name: "litcrawl-test", Host: "127.0.0.1", Port: routePorts[i]}, Routes: routes}}
		s.Restart()
		t.Cleanup(s.Stop)
		c.Nodes = append(c.Nodes, s)
	}
	c.WaitReady(t)
	return c
}

// WaitReady polls until the running nodes have a JetStream meta leader
// that knows each of them as a peer it can place a stream on (a leader
// elected before the others' first stats refuses a 3-replica stream with
// "no suitable peers for placement").
func (c *Cluster) WaitReady(t testing.TB) {
	t.Helper()
	Eventually(t, 30*time.Second, "the cluster has no JetStream meta leader that knows every running node", func() bool {
		running := 0
		for _, s := range c.Nodes {
			if s.Running() {
				running++
			}
		}
		for _, s := range c.Nodes {
			if s.Running() && s.srv.JetStreamIsLeader() {
				return len(s.srv.JetStreamClusterPeers()) >= running
			}
		}
		return false
	})
}

// URL lists every node: nats://h:p,nats://h:p,….
func (c *Cluster) URL() string {
	var us []string
	for _, s := range c.Nodes {
		us = append(us, s.URL())
	}
	return strings.Join(us, ",")
}

// StreamLeader is the node that leads the stream (in the global account),
// or nil when none does now.
func (c *Cluster) StreamLeader(stream string) *Server {
	for _, s := range c.Nodes {
		if s.Running() && s.srv.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, stream) {
			return s
		}
	}
	return nil
}

// freePorts finds n free loopback ports (they stay free with high
// probability until the servers take them).
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}

// Eventually polls cond every 20 ms until it holds, and fails the test
// with msg after timeout. It waits for a condition, never for a fixed time.
func Eventually(t testing.TB, timeout time.Duration, msg string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("after %v: %s", timeout, msg)
		case <-tick.C:
		}
	}
}

// Binary is Debian's nats-server (or any nats-server on PATH) run as a
// process with JetStream on a free loopback port.
type Binary struct {
	URL     string
	Version string
	cmd     *exec.Cmd
}

// StartBinary starts the nats-server binary. When it is not installed the
// test is skipped with how to install it, unless CI is set: then it fails,
// since CI installs it (.ci/run).
func StartBinary(t testing.TB) *Binary {
	t.Helper()
	path, version := binaryPath(t)
	port := freePorts(t, 1)[0]
	dir := t.TempDir()
	cmd := exec.Command(path, "-js", "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-sd", dir, "-l", filepath.Join(dir, "server.log"))
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	b := &Binary{URL: fmt.Sprintf("nats://127.0.0.1:%d", port), Version: version, cmd: cmd}
	waitListening(t, port, version)
	return b
}

// binaryPath finds the nats-server binary and its version; without one the
// test is skipped (failed under CI).
func binaryPath(t testing.TB) (path, version string) {
	t.Helper()
	path, err := exec.LookPath("nats-server")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/nats-server"); serr == nil {
			path, err = "/usr/sbin/nats-server", nil
		}
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("nats-server is not installed; CI installs it with apt-get install -y nats-server (.ci/run)")
		}
		t.Skip("nats-server is not installed: apt-get install nats-server (Debian's 2.9.10) to run this test")
	}
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", path, err)
	}
	return path, strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(string(out), "nats-server:")), "v")
}

func waitListening(t testing.TB, port int, version string) {
	t.Helper()
	Eventually(t, 20*time.Second, "nats-server "+version+" does not accept connections", func() bool {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
}

// BinaryCluster is three (or more) nats-server processes (Debian's 2.9.10
// in CI) forming a JetStream cluster on loopback.
type BinaryCluster struct {
	Version string
	Nodes   []*BinaryNode
}

// BinaryNode is one server of a BinaryCluster.
type BinaryNode struct {
	t    testing.TB
	name string
	port int
	args []string
	path string
	cmd  *exec.Cmd
	done chan struct{}
}

// StartBinaryCluster starts n clustered nats-server processes and waits
// until each of them answers JetStream requests with a meta leader.
func StartBinaryCluster(t testing.TB, n int) *BinaryCluster {
	t.Helper()
	path, version := binaryPath(t)
	clientPorts, routePorts := freePorts(t, n), freePorts(t, n)
	var routes []string
	for _, p := range routePorts {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	c := &BinaryCluster{Version: version}
	for i := range n {
		dir := t.TempDir()
		nd := &BinaryNode{t: t, name: fmt.Sprintf("n%d", i+1), port: clientPorts[i], path: path,
			args: []string{"-js", "-n", fmt.Sprintf("n%d", i+1), "-a", "127.0.0.1", "-p", fmt.Sprint(clientPorts[i]), "-sd", dir,
				"-l", filepath.Join(dir, "server.log"), "--cluster_name", "litcrawl-test",
				"--cluster", fmt.Sprintf("nats://127.0.0.1:%d", routePorts[i]), "--routes", strings.Join(routes, ",")}}
		nd.Restart()
		t.Cleanup(nd.Kill)
		c.Nodes = append(c.Nodes, nd)
	}
	c.WaitReady(t)
	return c
}

// WaitReady polls until a running node answers for a JetStream meta
// leader that knows every running node.
func (c *BinaryCluster) WaitReady(t testing.TB) {
	t.Helper()
	running := 0
	for _, nd := range c.Nodes {
		if nd.Running() {
			running++
		}
	}
	Eventually(t, 60*time.Second, "the nats-server cluster has no meta leader that knows every running node", func() bool {
		nc, err := nats.Connect(c.URL(), nats.Timeout(time.Second))
		if err != nil {
			return false
		}
		defer nc.Close()
		m, err := nc.Request("$JS.API.INFO", nil, time.Second)
		if err != nil {
			return false
		}
		var info struct {
			Error *struct{} `json:"error"`
		}
		if json.Unmarshal(m.Data, &info) != nil || info.Error != nil {
			return false
		}
		js, _ := jetstream.New(nc)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		// A replicated stream placed and removed: the cluster can hold one.
		name := fmt.Sprintf("READY_%d", time.Now().UnixNano())
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{"ready." + name}, Replicas: running, Storage: jetstream.MemoryStorage}); err != nil {
			return false
		}
		js.DeleteStream(ctx, name)
		return true
	})
}

// URL lists every node: nats://h:p,nats://h:p,….
func (c *BinaryCluster) URL() string {
	var us []string
	for _, nd := range c.Nodes {
		us = append(us, nd.URL())
	}
	return strings.Join(us, ",")
}

// Name is the server's name.
func (nd *BinaryNode) Name() string { return nd.name }

// HostPort is the client address, 127.0.0.1:PORT.
func (nd *BinaryNode) HostPort() string { return fmt.Sprintf("127.0.0.1:%d", nd.port) }

// URL is the client URL, nats://127.0.0.1:PORT.
func (nd *BinaryNode) URL() string { return "nats://" + nd.HostPort() }

// Running reports whether the process is up.
func (nd *BinaryNode) Running() bool { return nd.cmd != nil }

// Restart starts the process again (same ports, same store).
func (nd *BinaryNode) Restart() {
	nd.t.Helper()
	cmd := exec.Command(nd.path, nd.args...)
	if err := cmd.Start(); err != nil {
		nd.t.Fatalf("start %s: %v", nd.path, err)
	}
	nd.cmd, nd.done = cmd, make(chan struct{})
	go func() { cmd.Wait(); close(nd.done) }()
	waitListening(nd.t, nd.port, nd.name)
}

// Stop ends the process with SIGTERM (a server shut down) and waits.
func (nd *BinaryNode) Stop() { nd.signal(syscall.SIGTERM) }

// Kill ends the process with SIGKILL (a machine lost) and waits.
func (nd *BinaryNode) Kill() { nd.signal(syscall.SIGKILL) }

func (nd *BinaryNode) signal(sig syscall.Signal) {
	if nd.cmd == nil {
		return
	}
	nd.cmd.Process.Signal(sig)
	<-nd.done
	nd.cmd = nil
}

// Messages returns every message of a stream, in stream order.
func Messages(t testing.TB, url, stream string) []*jetstream.RawStreamMsg {
	t.Helper()
	st := openStream(t, url, stream)
	ctx := context.Background()
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("stream %s message %d: %v", stream, seq, err)
		}
		out = append(out, m)
	}
	return out
}

// RecordIDs counts each revision of a record in a stream of records
// (JSON bodies with an "id"), by RevisionKey.
func RecordIDs(t testing.TB, url, stream string) map[string]int {
	t.Helper()
	ids := map[string]int{}
	for _, m := range Messages(t, url, stream) {
		var r struct {
			ID       string
			Revision int
		}
		if err := json.Unmarshal(m.Data, &r); err != nil {
			t.Fatalf("stream %s message %d is not a record: %v", stream, m.Sequence, err)
		}
		ids[RevisionKey(r.ID, r.Revision)]++
	}
	return ids
}

// RevisionKey is how RecordIDs counts a record: its id, and for revision
// 2 and later "@" and the revision (as the NATS sink's message ids).
func RevisionKey(id string, revision int) string {
	if revision > 1 {
		return fmt.Sprintf("%s@%d", id, revision)
	}
	return id
}

// StreamConfig is a stream's configuration as the server reports it.
func StreamConfig(t testing.TB, url, stream string) jetstream.StreamConfig {
	t.Helper()
	return openStream(t, url, stream).CachedInfo().Config
}

// JetStream is a JetStream client of url on a connection that closes
// with the test.
func JetStream(t testing.TB, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// openStream binds to a stream on a connection that closes with the test.
func openStream(t testing.TB, url, stream string) jetstream.Stream {
	t.Helper()
	st, err := JetStream(t, url).Stream(context.Background(), stream)
	if err != nil {
		t.Fatalf("stream %s: %v", stream, err)
	}
	return st
}

// LockedBuffer is what a client's callback goroutines, or a process's
// output, write while the test reads it.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Node is one server of a cluster: in process (Server) or a nats-server
// process (BinaryNode).
type Node interface {
	Name() string
	URL() string
	HostPort() string
	Running() bool
	Stop()
}

// Nodes is a cluster of either kind, for tests that run on both.
type Nodes struct {
	// Kind names the servers: "module" or "nats-server 2.9.10".
	Kind  string
	Nodes []Node
}

// Any is the cluster as Nodes.
func (c *Cluster) Any() Nodes {
	n := Nodes{Kind: "module"}
	for _, s := range c.Nodes {
		n.Nodes = append(n.Nodes, s)
	}
	return n
}

// Any is the cluster as Nodes.
func (c *BinaryCluster) Any() Nodes {
	n := Nodes{Kind: "nats-server " + c.Version}
	for _, s := range c.Nodes {
		n.Nodes = append(n.Nodes, s)
	}
	return n
}

// URL lists the nodes but except (nil: every node).
func (c Nodes) URL(except Node) string {
	var us []string
	for _, n := range c.Nodes {
		if n != except {
			us = append(us, n.URL())
		}
	}
	return strings.Join(us, ",")
}

// StreamLeader is the running node that leads the stream, as the cluster
// reports it, or nil when none does now.
func (c Nodes) StreamLeader(stream string) Node {
	var urls []string
	for _, n := range c.Nodes {
		if n.Running() {
			urls = append(urls, n.URL())
		}
	}
	nc, err := nats.Connect(strings.Join(urls, ","), nats.Timeout(time.Second))
	if err != nil {
		return nil
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil || s.CachedInfo().Cluster == nil {
		return nil
	}
	for _, n := range c.Nodes {
		if n.Running() && n.Name() == s.CachedInfo().Cluster.Leader {
			return n
		}
	}
	return nil
}
