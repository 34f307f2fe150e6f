package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The "done" check, end to end: crawl parse fixtures/ with a JSONL
// sink and a NATS sink fanned out, against an in-process JetStream server.
func TestParseToJSONLAndNATS(t *testing.T) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true,
		StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	defer srv.Shutdown()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	addr := srv.Addr().(*net.TCPAddr)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	natsURL := fmt.Sprintf("nats://127.0.0.1:%d/papers.new?stream=PAPERS", addr.Port)
	for range 2 { // the second run is a resend: deduplicated by msg-id
		code, _, errs := crawl(t, "parse", "fixtures/", "--sink", "jsonl:"+out, "--sink", natsURL)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errs)
		}
	}
	data, _ := os.ReadFile(out)
	lines := strings.Count(string(data), "\n")
	ids := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		i := strings.Index(l, `"id":"`)
		ids[l[i+6:i+6+strings.Index(l[i+6:], `"`)]] = true
	}

	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	st, err := js.Stream(context.Background(), "PAPERS")
	if err != nil {
		t.Fatal(err)
	}
	info, _ := st.Info(context.Background())
	if lines == 0 || int(info.State.Msgs) != len(ids) {
		t.Errorf("JSONL has %d lines with %d distinct ids; the stream has %d messages, want one per id", lines, len(ids), info.State.Msgs)
	}
}
