package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/litcrawl/litcrawl/testsite"
)

// Three worker processes of the built binary share a backfill of a flaky
// site; one is killed mid-run. The frontier drains and every paper reaches
// the records stream exactly once.
func TestWorkerProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	defer ns.Shutdown()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	natsURL := ns.ClientURL()
	site := testsite.New()
	site.SynthJournal(31, 4, 20)
	site.SynthJournal(32, 4, 20)
	p := testsite.Profiles["flaky"]
	p.SlowBy = time.Millisecond
	site.SetProfile(p, 5)
	srv := httptest.NewServer(site)
	defer srv.Close()

	cfgPath := filepath.Join(repoRoot, "config.yaml")
	code, _, errs := crawl(t, "enqueue", "--frontier", natsURL, "--journal", "31", "--journal", "32", "--pages", "1-5", "--ack-wait", "1s", "--config", cfgPath)
	if code != exitOK || !strings.Contains(errs, "enqueued 10 jobs") {
		t.Fatalf("enqueue: exit %d: %s", code, errs)
	}
	worker := func() *exec.Cmd {
		return exec.Command(bin, "worker", "--frontier", natsURL, "--ack-wait", "1s", "--base-url", srv.URL, "--delay", "0",
			"--sink", natsURL+"/papers.fleet?stream=FLEET", "--exit-when-idle", "3s", "--config", cfgPath)
	}
	// The first worker is killed after its first job.
	victim := worker()
	stderr, _ := victim.StderrPipe()
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if out, err := worker().CombinedOutput(); err != nil {
				t.Errorf("worker: %v\n%s", err, out)
			}
		})
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "job done") {
			victim.Process.Kill()
			break
		}
	}
	victim.Wait()
	wg.Wait()

	code, out, errs := crawl(t, "status", "--frontier", natsURL, "--ack-wait", "1s")
	if code != exitOK || !strings.Contains(out, "jobs: 0 pending (0 in flight), 0 dead-lettered") {
		t.Errorf("status: exit %d: %s%s", code, out, errs)
	}
	nc, _ := nats.Connect(natsURL)
	defer nc.Close()
	js, _ := jetstream.New(nc)
	st, err := js.Stream(context.Background(), "FLEET")
	if err != nil {
		t.Fatal(err)
	}
	info, _ := st.Info(context.Background())
	ids := map[string]int{}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(context.Background(), seq)
		if err != nil {
			t.Fatal(err)
		}
		var r struct{ ID string }
		json.Unmarshal(m.Data, &r)
		ids[r.ID]++
	}
	if len(ids) != 160 {
		t.Errorf("%d papers in the records stream, want 160", len(ids))
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("paper %s %d times", id, n)
		}
	}
}

func TestDistributedUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"enqueue", "--journal", "1", "--pages", "1-2"}, "--frontier"},
		{[]string{"enqueue", "--frontier", "nats://127.0.0.1:1", "--journal", "1"}, "either --pages A-B or --nightly"},
		{[]string{"enqueue", "--frontier", "nats://127.0.0.1:1", "--journal", "1", "--pages", "1-"}, "needs its last page"},
		{[]string{"worker"}, "--frontier"},
		{[]string{"status"}, "--frontier"},
	} {
		code, _, errs := crawl(t, tt.args...)
		if code != exitUsage || !strings.Contains(errs, tt.want) {
			t.Errorf("%v: exit %d, stderr %q", tt.args, code, errs)
		}
	}
}
