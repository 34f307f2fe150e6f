package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/internal/state"
	"github.com/litcrawl/litcrawl/parser"
	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/sink"
	_ "github.com/litcrawl/litcrawl/sink/jsonl"
	"github.com/litcrawl/litcrawl/sink/sinktest"
)

func recs(ids ...string) []record.Record {
	var out []record.Record
	for _, id := range ids {
		out = append(out, record.Record{ID: id, DOI: "10.1/" + id})
	}
	return out
}

func ids(rs []record.Record) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

// decide sends what the ledger has never seen and the group has not sent
// yet; it counts only earlier runs' papers as known.
func TestDecide(t *testing.T) {
	u, this, before := ledger.NeverDelivered, ledger.DeliveredThisRun, ledger.DeliveredBefore
	for _, tt := range []struct {
		name      string
		recs      []record.Record
		seen      []ledger.Delivery
		redeliver bool
		sent      []string
		want      []string
		known     int
	}{
		{"all new", recs("a", "b"), []ledger.Delivery{u, u}, false, nil, []string{"a", "b"}, 0},
		{"known before", recs("a", "b"), []ledger.Delivery{before, u}, false, nil, []string{"b"}, 1},
		{"delivered earlier this run", recs("a", "b"), []ledger.Delivery{this, this}, false, nil, nil, 0},
		{"sent by an earlier page of the group", recs("a", "b"), []ledger.Delivery{u, u}, false, []string{"a"}, []string{"b"}, 0},
		{"redeliver", recs("a", "b"), []ledger.Delivery{before, this}, true, nil, []string{"a", "b"}, 1},
	} {
		var sent sentInGroup
		for _, id := range tt.sent {
			sent.add(record.Record{ID: id}, ledger.Print{})
		}
		got, known := decideSeen(tt.recs, tt.seen, tt.redeliver, &sent)
		if !slices.Equal(ids(got), tt.want) || known != tt.known {
			t.Errorf("%s: sent %v known %d; want %v, %d", tt.name, ids(got), known, tt.want, tt.known)
		}
	}
	// The same paper under two ids in a group: seen first without its
	// JSON, then with its site id, it is one paper, whose second sighting
	// is its revision 2 under the site id, replacing the first; seen the
	// other way round, the poorer sighting sends nothing.
	var sent sentInGroup
	first, _ := decideSeen([]record.Record{{ID: "doi:10.1/x", DOI: "10.1/X"}}, []ledger.Delivery{u}, false, &sent)
	second, _ := decideSeen([]record.Record{{ID: "42", DOI: "10.1/x"}}, []ledger.Delivery{u}, false, &sent)
	if len(first) != 1 || len(second) != 1 || second[0].Revision != 2 || second[0].Replaces != "doi:10.1/x" {
		t.Errorf("one paper under two ids: sent %v then %v", first, second)
	}
	sent = nil
	first, _ = decideSeen([]record.Record{{ID: "42", DOI: "10.1/x"}}, []ledger.Delivery{u}, false, &sent)
	second, _ = decideSeen([]record.Record{{ID: "doi:10.1/x", DOI: "10.1/X"}}, []ledger.Delivery{u}, false, &sent)
	if len(first) != 1 || len(second) != 0 {
		t.Errorf("one paper under two ids, the site id first: sent %v then %v", ids(first), ids(second))
	}
	// Two site ids the site gave one DOI: the second is taken as known (by
	// its DOI, as a crawl always has), never as a revision of the first.
	sent = nil
	first, _ = decideSeen([]record.Record{{ID: "42", DOI: "10.1/x", Title: "One"}}, []ledger.Delivery{u}, false, &sent)
	second, _ = decideSeen([]record.Record{{ID: "43", DOI: "10.1/x", Title: "Another"}}, []ledger.Delivery{u}, false, &sent)
	if len(first) != 1 || len(second) != 0 {
		t.Errorf("two site ids with one DOI: sent %v then %v", first, second)
	}
}

// decideSeen is decide over papers known without prints.
func decideSeen(recs []record.Record, seen []ledger.Delivery, redeliver bool, sent *sentInGroup) ([]record.Record, int) {
	found := make([]ledger.Seen, len(seen))
	papers := make([]ledger.Paper, len(seen))
	for i, d := range seen {
		found[i].Delivery = d
		papers[i] = ledger.Paper{ID: recs[i].ID, DOI: recs[i].DOI}
	}
	d := decide(slices.Clone(recs), papers, found, Item{Redeliver: redeliver}, sent)
	return d.send, d.knownBefore
}

// Walk.Next is the nightly stop rule.
func TestWalkNext(t *testing.T) {
	w := Walk{Page: 1, StopAfterKnown: 2, MaxPages: 4}
	steps := []struct {
		d     Delivered
		goOn  bool
		known int
	}{
		{Delivered{Records: 20, FromEarlierRuns: 3}, true, 0},
		{Delivered{Records: 20, FromEarlierRuns: 20}, true, 1},
		{Delivered{Records: 20, FromEarlierRuns: 19}, true, 0},  // the run resets
		{Delivered{Records: 20, FromEarlierRuns: 20}, false, 1}, // page 4 is max_pages
	}
	for i, s := range steps {
		var goOn bool
		w, goOn = w.Next(s.d)
		if goOn != s.goOn || w.KnownRun != s.known || w.Page != i+2 {
			t.Fatalf("after page %d: %+v go on %v; want go on %v, known run %d", i+1, w, goOn, s.goOn, s.known)
		}
	}
	if _, goOn := (Walk{Page: 1, StopAfterKnown: 2, MaxPages: 9}).Next(Delivered{Records: 5, Last: true}); goOn {
		t.Error("the walk went on past the last page its pager names")
	}
	w = Walk{Page: 3, KnownRun: 1, StopAfterKnown: 2, MaxPages: 9}
	if _, goOn := w.Next(Delivered{Records: 20, FromEarlierRuns: 20}); goOn {
		t.Error("two known pages in a row did not stop the walk")
	}
	if _, goOn := (Walk{Page: 1, StopAfterKnown: 1, MaxPages: 9}).Next(Delivered{}); !goOn {
		t.Error("an empty page counted as known")
	}
}

// The repeat rule: pages in a row with no paper not already met in this
// run stop the walk; a page of papers known only to earlier runs is not a
// repeat (a backfill over known pages goes on), and StopAfterKnown 0 never
// stops on known pages.
func TestWalkNextStopsOnRepeats(t *testing.T) {
	w := Walk{Page: 1, StopAfterRepeat: 3, MaxPages: 1000}
	var goOn bool
	for i, d := range []Delivered{
		{Records: 20, NewToRun: 20},
		{Records: 20, FromEarlierRuns: 20, NewToRun: 20}, // known before, new to the run
		{Records: 20, NewToRun: 0},
		{Records: 20, NewToRun: 0},
		{Records: 20, NewToRun: 1}, // one new paper resets the count
		{Records: 20, NewToRun: 0},
		{Records: 20, NewToRun: 0},
	} {
		if w, goOn = w.Next(d); !goOn {
			t.Fatalf("page %d stopped the walk: %+v", i+1, w)
		}
	}
	if w, goOn = w.Next(Delivered{Records: 20}); goOn || w.RepeatRun != 3 {
		t.Fatalf("three repeats in a row: %+v go on %v; want a stop", w, goOn)
	}
}

// deliveryParts are a real state file and a JSONL sink in a temporary
// directory, closed when the test ends.
func deliveryParts(t *testing.T) (*state.Store, sink.Sink, string) {
	t.Helper()
	dir := t.TempDir()
	st, err := state.Open(filepath.Join(dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	out := sinktest.Open(t, "jsonl:"+filepath.Join(dir, "p.jsonl"), sink.Options{})
	t.Cleanup(func() { out.Close() })
	return st, out, dir
}

// Deliver writes a group in one sink write and commits it with the sink's
// token; a second delivery of the same pages sends nothing.
func TestDeliverGroup(t *testing.T) {
	st, out, dir := deliveryParts(t)
	page := func(n int, ids ...string) Item {
		return Item{Key: ledger.PageKey{Journal: 5, Page: n}, Page: &parser.Page{Records: recs(ids...), LastPage: 2}, RunID: "r1"}
	}
	ctx := context.Background()
	ds, err := Deliver(ctx, st, out, []Item{page(1, "a", "b", "a"), page(2, "b", "c")})
	if err != nil {
		t.Fatal(err)
	}
	if ds[0].Sent != 2 || ds[1].Sent != 1 || ds[0].NewToLedger != 2 || ds[1].NewToLedger != 1 || ds[0].Last || !ds[1].Last || ds[1].Group != 2 {
		t.Errorf("delivered %+v", ds)
	}
	if got := ids(sinktest.ReadJSONL(t, filepath.Join(dir, "p.jsonl"))); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("the file holds %v", got)
	}
	if tok, _ := st.SinkToken(ctx); tok == nil {
		t.Error("no sink token committed")
	}
	ds, err = Deliver(ctx, st, out, []Item{page(1, "a", "b")})
	if err != nil || ds[0].Sent != 0 || ds[0].NewToLedger != 0 {
		t.Errorf("again: %+v %v", ds, err)
	}
}

// A page handed to a run again after failing (a worker's redelivered job)
// counts once as failed, with its last error.
func TestSummaryCountsAFailedPageOnce(t *testing.T) {
	s := NewSummary()
	k := ledger.PageKey{Journal: 1, Page: 2}
	s.addFailure(k, errors.New("HTTP 503"))
	s.addFailure(k, errors.New("HTTP 502"))
	s.addFailure(ledger.PageKey{Journal: 1, Page: 3}, errors.New("HTTP 403"))
	if f := s.Failures(); s.Failed.Load() != 2 || len(f) != 2 || f[0].Error != "HTTP 502" {
		t.Errorf("failed %d: %+v", s.Failed.Load(), f)
	}
}

// A page handed on (a fleet's job to be tried again, maybe by another
// worker) is no failure of the run: it leaves the failures, counts as a
// "job" retry, and the failures after it keep their places.
func TestRetryLaterTakesAPageOutOfTheFailures(t *testing.T) {
	s := NewSummary()
	for p := 1; p <= 3; p++ {
		s.addFailure(ledger.PageKey{Journal: 5, Page: p}, fmt.Errorf("page %d", p))
	}
	s.RetryLater(ledger.PageKey{Journal: 5, Page: 2})
	s.addFailure(ledger.PageKey{Journal: 5, Page: 3}, fmt.Errorf("page 3 again"))
	f := s.Failures()
	if s.Failed.Load() != 2 || len(f) != 2 || f[0].Page != 1 || f[1].Page != 3 || f[1].Error != "page 3 again" ||
		s.Journals()[5].PagesFailed != 2 || s.Retries()["job"] != 1 {
		t.Errorf("after RetryLater: failed %d, failures %+v, journal %+v, retries %v", s.Failed.Load(), f, s.Journals()[5], s.Retries())
	}
}
