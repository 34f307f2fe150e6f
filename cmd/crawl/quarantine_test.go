package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/natstest"
	"github.com/litcrawl/litcrawl/internal/state"
	"github.com/litcrawl/litcrawl/sink"
	"github.com/litcrawl/litcrawl/sink/quarantine"
	"github.com/litcrawl/litcrawl/sink/sinktest"
)

// A paper a sink refuses for its content never blocks it: the NATS server
// takes messages of at most max_payload bytes, and the largest papers of
// the listing are over it. The backfill delivers every other paper to
// NATS and all of them to JSONL, commits every page, keeps the refused ones
// in the quarantine beside the state and exits 3 naming it. A rerun has
// nothing to do. After the server's limit is raised, crawl quarantine
// retry delivers them, each once, and empties the quarantine.
func TestRefusedPapersAreQuarantinedNotBlocking(t *testing.T) {
	t.Parallel()
	_, srv := fixtureSite(t)
	dir := t.TempDir()
	// The sizes of the papers as the sinks encode them.
	probe := filepath.Join(dir, "probe.jsonl")
	base := []string{"backfill", "--journal", "501422", "--pages", "1-", "--base-url", srv.URL, "--delay", "0"}
	if code, _, errs := crawl(t, append(base, "--state-dir", filepath.Join(dir, "probe"), "--sink", "jsonl:"+probe)...); code != exitcode.OK {
		t.Fatalf("probe: exit %d: %s", code, errs)
	}
	data, _ := os.ReadFile(probe)
	var sizes []int
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		sizes = append(sizes, len(l))
	}
	limit := slices.Max(sizes) + 20
	n := natstest.Start(t, func(o *server.Options) { o.MaxPayload = int32(limit) })
	natsURL := n.URL() + "/papers.new?stream=PAPERS"
	out := filepath.Join(dir, "papers.jsonl")
	stateDir := filepath.Join(dir, "state")
	args := append(base, "--state-dir", stateDir, "--sink", "jsonl:"+out, "--sink", natsURL)
	code, _, errs := crawl(t, args...)
	qpath := filepath.Join(stateDir, quarantine.Name)
	if code != exitcode.Incomplete || !strings.Contains(errs, qpath) || !strings.Contains(errs, "crawl quarantine list") {
		t.Fatalf("exit %d, want 3 naming the quarantine %s: %s", code, qpath, errs)
	}
	c, err := quarantine.Read(qpath)
	rs := c.Entries
	if err != nil || len(c.Bad) != 0 || len(rs) == 0 || len(rs) >= len(sizes) {
		t.Fatalf("quarantine: %d entries (%d bad, %v) of %d papers", len(rs), len(c.Bad), err, len(sizes))
	}
	for _, r := range rs {
		if !strings.HasPrefix(r.Sink, "nats://") || !strings.Contains(r.Reason, "max_payload") || r.Record.ID == "" {
			t.Errorf("entry: %+v", r)
		}
	}
	if got := countLines(t, out); got != len(sizes) {
		t.Errorf("JSONL holds %d papers, want all %d", got, len(sizes))
	}
	if got := natstest.RecordIDs(t, n.URL(), "PAPERS"); len(got) != len(sizes)-len(rs) {
		t.Errorf("the stream holds %d papers, want %d", len(got), len(sizes)-len(rs))
	}
	code, stdout, _ := crawl(t, "quarantine", "list", "--state-dir", stateDir)
	if code != exitcode.OK || !strings.Contains(stdout, rs[0].Record.ID) || !strings.Contains(stdout, "max_payload") {
		t.Errorf("quarantine list: exit %d: %s", code, stdout)
	}
	code, stdout, _ = crawl(t, "quarantine", "list", "--state-dir", stateDir, "--json")
	var e sink.Refusal
	if code != exitcode.OK || json.Unmarshal([]byte(strings.SplitN(stdout, "\n", 2)[0]), &e) != nil || e.Record.ID != rs[0].Record.ID {
		t.Errorf("quarantine list --json: exit %d: %s", code, stdout)
	}
	if code, stdout, _ := crawl(t, "runs", "--state-dir", stateDir); code != exitcode.OK || !strings.Contains(stdout, fmt.Sprintf("%d quarantined", len(rs))) {
		t.Errorf("crawl runs does not note the quarantined records: exit %d:\n%s", code, stdout)
	}
	// Every page was committed: a rerun delivers nothing.
	if code, _, errs := crawl(t, args...); code != exitcode.OK || !strings.Contains(errs, "skipped") {
		t.Errorf("rerun: exit %d: %s", code, errs)
	}
	// Retried without the sink that refused them: kept, and the message
	// names the sink URL to give.
	code, _, errs = crawl(t, "quarantine", "retry", "--state-dir", stateDir, "--sink", "jsonl:"+out)
	if code != exitcode.Incomplete || !strings.Contains(errs, fmt.Sprintf("%d for sinks not given", len(rs))) ||
		!strings.Contains(errs, "retry with --sink '"+rs[0].Sink+"'") {
		t.Errorf("retry without the refusing sink: exit %d: %s", code, errs)
	}
	// The sink still refuses them: retry keeps them, their tries counted.
	// Given only the refusing sink, it keeps the JSONL sink's position in
	// the state's token (a crash after it must not duplicate JSONL lines).
	code, _, errs = crawl(t, "quarantine", "retry", "--state-dir", stateDir, "--sink", natsURL)
	if again, _ := quarantine.Read(qpath); code != exitcode.Incomplete || len(again.Entries) != len(rs) || again.Entries[0].Tries != 2 {
		t.Fatalf("retry against the same limit: exit %d, %d left: %s", code, len(again.Entries), errs)
	}
	st, err := state.OpenReadOnly(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := st.SinkToken(context.Background())
	st.Close()
	if !strings.Contains(string(tok), "papers.jsonl") {
		t.Errorf("a retry to one sink dropped the other's position from the state's token: %s", tok)
	}
	n.RestartWith(func(o *server.Options) { o.MaxPayload = int32(2 * limit) })
	code, _, errs = crawl(t, "quarantine", "retry", "--state-dir", stateDir, "--sink", "jsonl:"+out, "--sink", natsURL)
	if code != exitcode.OK || !strings.Contains(errs, "0 left") {
		t.Fatalf("retry: exit %d: %s", code, errs)
	}
	got := natstest.RecordIDs(t, n.URL(), "PAPERS")
	if len(got) != len(sizes) {
		t.Errorf("after retry the stream holds %d papers, want %d", len(got), len(sizes))
	}
	for _, r := range rs {
		if k := natstest.RevisionKey(r.Record.ID, r.Record.Revision); got[k] != 1 {
			t.Errorf("paper %s is %d times in the stream", k, got[k])
		}
	}
	if _, err := os.Stat(qpath); !os.IsNotExist(err) {
		t.Errorf("an emptied quarantine leaves its file: %v", err)
	}
	// The JSONL sink was restored and committed, not cut: a crawl after the
	// retry finds it whole.
	if code, _, errs := crawl(t, args...); code != exitcode.OK || countLines(t, out) != len(sizes) {
		t.Errorf("after retry: exit %d, %d lines: %s", code, countLines(t, out), errs)
	}
}

// crawl quarantine list prints no terminal escape, bidi override, line
// separator or invisible filler from an entry, its sink name included.
func TestQuarantineListIsSafeForATerminal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := sinktest.Records("e", 1)[0]
	rec.Title = "T\u202e\u2028\u3164itle"
	quarantine.Replace(filepath.Join(dir, quarantine.Name), quarantine.Contents{Entries: []sink.Refusal{{
		Sink: "jsonl:/x\u001b]0;pwned\u0007\u001b[2J\u202e.jsonl", Reason: "r\u001b[31m\u034f", Tries: 1, Record: rec}}})
	code, stdout, _ := crawl(t, "quarantine", "list", "--state-dir", dir)
	if code != exitcode.OK || strings.ContainsAny(stdout, "\u001b\u0007\u202e\u2028\u3164\u034f") || !strings.Contains(stdout, "e-0") {
		t.Errorf("exit %d: %q", code, stdout)
	}
}

// crawl quarantine list shows a refusal's reason as every message is
// shown: a URL's password in it redacted (a file written by hand, or by an
// older version, may hold one).
func TestQuarantineListRedactsTheReason(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := sinktest.Records("e", 1)[0]
	quarantine.Replace(filepath.Join(dir, quarantine.Name), quarantine.Contents{Entries: []sink.Refusal{{
		Sink: "nats://u:SINKPW@h:1/s?stream=S", Reason: "publish to nats://u:REASONPW@h:1 failed", Tries: -5, Record: rec}}})
	code, stdout, _ := crawl(t, "quarantine", "list", "--state-dir", dir)
	if code != exitcode.OK || strings.Contains(stdout, "REASONPW") || strings.Contains(stdout, "SINKPW") || strings.Contains(stdout, "-5×") {
		t.Errorf("exit %d: %q", code, stdout)
	}
}
