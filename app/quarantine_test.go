package app

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/litcrawl/litcrawl/ledger"
	"github.com/litcrawl/litcrawl/sink"
	"github.com/litcrawl/litcrawl/sink/quarantine"
	"github.com/litcrawl/litcrawl/sink/sinktest"
	"github.com/litcrawl/litcrawl/state"
)

// A retry killed between marking its records and rewriting the quarantine
// is settled by the next run: records whose delivery was committed (the
// state's token moved on from the one they were marked with) leave the
// quarantine; the others stay, to be retried, and are not delivered twice.
func TestPendingRetryIsSettled(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Commit(ctx, ledger.Group{SinkToken: []byte(`{"sinks":{"a":1}}`)}); err != nil {
		t.Fatal(err)
	}
	tok, _ := st.SinkToken(ctx)
	recs := sinktest.Records("p", 3)
	path := filepath.Join(dir, quarantine.Name)
	quarantine.Replace(path, []sink.Refusal{
		{Sink: "s", Reason: "r", Tries: 1, Record: recs[0]},                                               // not being retried
		{Sink: "s", Reason: "r", Tries: 1, Record: recs[1], Pending: tokenDigest(tok)},                    // retry not committed
		{Sink: "s", Reason: "r", Tries: 1, Record: recs[2], Pending: tokenDigest([]byte("an older one"))}, // committed since
	})
	if _, err := resolvePending(ctx, st, path); err != nil {
		t.Fatal(err)
	}
	rs, _, _ := quarantine.Read(path)
	if len(rs) != 2 || rs[0].Record.ID != "p-0" || rs[1].Record.ID != "p-1" || rs[1].Pending != "" {
		t.Fatalf("after settling: %+v", rs)
	}
}
