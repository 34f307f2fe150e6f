package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/natstest"
	"github.com/litcrawl/litcrawl/record"
)

// crawl parse fixtures/ with a JSONL sink and a NATS sink fanned out,
// against an in-process JetStream server, twice: the second run is a
// resend, deduplicated by msg-id, so the stream holds one message per id.
func TestParseToJSONLAndNATS(t *testing.T) {
	t.Chdir(repoRoot) // paths relative to the repository, as the goldens hold them
	n := natstest.Start(t)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	for range 2 {
		code, _, errs := crawl(t, "parse", "fixtures/", "--append", "--sink", "jsonl:"+out, "--sink", n.URL()+"/papers.new?stream=PAPERS")
		if code != exitcode.OK {
			t.Fatalf("exit %d: %s", code, errs)
		}
	}
	data, _ := os.ReadFile(out)
	lines := strings.Count(string(data), "\n")
	ids := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r record.Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		ids[natstest.RevisionKey(r.ID, r.Revision)] = true
	}
	inStream := natstest.RecordIDs(t, n.URL(), "PAPERS")
	if lines == 0 || len(inStream) != len(ids) {
		t.Errorf("JSONL has %d lines with %d distinct revisions; the stream has %d, want each once", lines, len(ids), len(inStream))
	}
	for id, c := range inStream {
		if c != 1 || !ids[id] {
			t.Errorf("paper %s: %d times in the stream (in the JSONL: %v)", id, c, ids[id])
		}
	}
}
