// Package sinktest is the conformance suite that every sink.Sink
// implementation runs: records come back exactly as written, concurrent
// writers lose nothing, Close and cancellation behave, and, where the sink
// promises it, order is kept and redelivery does not duplicate.
package sinktest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/litcrawl/litcrawl/internal/backoff"
	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/sink"
)

// Features says what an implementation promises beyond the basics.
type Features struct {
	// Ordered: a single writer's records come back in write order, and a
	// batch's records stay together and in order with concurrent writers.
	Ordered bool
	// Restore: the sink is a sink.Committer and sink.Restorer, and a reopen
	// restored to a token drops what was written after it.
	Restore bool
	// DedupeByID: writing a batch again delivers each record once.
	DedupeByID bool
	// Reencoded: the destination keeps a record as a JSON value, not as
	// the bytes sent (a jsonb column orders keys its own way): Raw's bytes
	// are compared with sink.Marshal's as JSON values.
	Reencoded bool
	// Refuse makes a record with the given id that the sink refuses for
	// its content (sink.ErrRefused): every driver has one (a NUL for
	// PostgreSQL, a record over the size a message or line may have).
	Refuse func(id string) record.Record
	// Keeps, for a sink that keeps a view of a record (a feed entry), is
	// that view: records are compared by it (nil: whole).
	Keeps func(record.Record) record.Record
	// Latest: the destination keeps one record a paper, its latest
	// revision (a table upserted by id, a feed's entry), rather than every
	// revision delivered (a file, a stream).
	Latest bool
}

// Destination is one empty place to deliver to (a file, a stream, a
// topic). Open may be called more than once (a reopen after a crash) and
// must reach the same place; Read returns everything delivered so far, in
// delivery order.
type Destination struct {
	Open func(t *testing.T) sink.Sink
	Read func(t *testing.T) []record.Record
	// Raw, when set, returns the bytes each delivered record became (a
	// JSONL line without its newline, a message body, a Kafka value), in
	// delivery order: the suite checks they are exactly sink.Marshal's.
	Raw func(t *testing.T) [][]byte
}

// Run runs the suite. fresh makes a new, empty destination for each test.
func Run(t *testing.T, fresh func(t *testing.T) Destination, f Features) {
	t.Run("WriteReadBack", func(t *testing.T) { writeReadBack(t, fresh(t), f) })
	t.Run("EmptyBatch", func(t *testing.T) { emptyBatch(t, fresh(t), f) })
	t.Run("ConcurrentWriters", func(t *testing.T) { concurrentWriters(t, fresh(t), f) })
	t.Run("CloseAndWriteAfterClose", func(t *testing.T) { closeTwice(t, fresh(t), f) })
	t.Run("CancelledContext", func(t *testing.T) { cancelled(t, fresh(t)) })
	t.Run("SameBytesAsMarshal", func(t *testing.T) { sameBytes(t, fresh(t), f.Reencoded) })
	if f.Restore {
		t.Run("RestoreAfterCrash", func(t *testing.T) { restoreAfterCrash(t, fresh(t), f) })
		t.Run("RevisionsOnceAfterCrash", func(t *testing.T) { revisionsAfterCrash(t, fresh(t), f) })
	}
	if f.Refuse != nil {
		t.Run("RefusedRecordQuarantined", func(t *testing.T) { refusedQuarantined(t, fresh(t), f) })
	}
	if f.DedupeByID {
		t.Run("RedeliveryDeduped", func(t *testing.T) { redelivery(t, fresh(t), f) })
	}
}

// Records makes n distinct records whose ids start with prefix. Their text
// holds what encoders get wrong: non-ASCII, markup characters, quotes.
func Records(prefix string, n int) []record.Record {
	out := make([]record.Record, n)
	for i := range out {
		cites := i % 3
		out[i] = record.Record{
			SchemaVersion: record.SchemaVersion,
			ID:            fmt.Sprintf("%s-%d", prefix, i),
			DOI:           fmt.Sprintf("10.1000/%s.%d", prefix, i),
			Title:         fmt.Sprintf(`Paper %d of %s: <fast> & "safe"`, i, prefix),
			TitleCN:       "论文标题",
			Authors:       []string{"Ann Lee", "Théo Pierron"},
			Published:     "2024-09-02",
			Journal:       &record.Journal{ID: 501422, Name: "arXiv - CS"},
			Citations:     &cites,
			Source:        record.Source{Page: 1, Position: i + 1, Capture: "sinktest"},
		}
	}
	return out
}

func key(r record.Record) string {
	b, _ := json.Marshal(r)
	return string(b)
}

func keys(rs []record.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = key(r)
	}
	return out
}

// view is each record as the sink keeps it (Keeps).
func (f Features) view(rs []record.Record) []record.Record {
	if f.Keeps == nil {
		return rs
	}
	out := make([]record.Record, len(rs))
	for i, r := range rs {
		out[i] = f.Keeps(r)
	}
	return out
}

// sameMultiset reports whether got and want hold the same records the same
// number of times.
func sameMultiset(t *testing.T, f Features, got, want []record.Record) {
	t.Helper()
	g, w := keys(f.view(got)), keys(f.view(want))
	slices.Sort(g)
	slices.Sort(w)
	if !slices.Equal(g, w) {
		t.Fatalf("delivered %d records, want %d; first difference:\n%s", len(got), len(want), firstDiff(g, w))
	}
}

func firstDiff(g, w []string) string {
	for i := range max(len(g), len(w)) {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return " got: " + a + "\nwant: " + b
		}
	}
	return "(none)"
}

func write(t *testing.T, s sink.Sink, recs []record.Record) {
	t.Helper()
	if err := s.Write(context.Background(), recs); err != nil {
		t.Fatalf("Write: %v", err)
	}
}

func closeSink(t *testing.T, s sink.Sink) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func writeReadBack(t *testing.T, d Destination, f Features) {
	s := d.Open(t)
	var all []record.Record
	for b := range 5 {
		batch := Records(fmt.Sprintf("b%d", b), 7)
		write(t, s, batch)
		all = append(all, batch...)
	}
	closeSink(t, s)
	got := d.Read(t)
	sameMultiset(t, f, got, all)
	if f.Ordered && !slices.Equal(keys(got), keys(all)) {
		t.Fatal("records came back out of write order")
	}
}

func emptyBatch(t *testing.T, d Destination, f Features) {
	s := d.Open(t)
	write(t, s, nil)
	write(t, s, Records("one", 1))
	closeSink(t, s)
	sameMultiset(t, f, d.Read(t), Records("one", 1))
}

func concurrentWriters(t *testing.T, d Destination, f Features) {
	s := d.Open(t)
	const writers, batches, size = 4, 5, 6
	var wg sync.WaitGroup
	errs := make(chan error, writers*batches)
	var all []record.Record
	var batchList [][]record.Record
	for w := range writers {
		for b := range batches {
			batch := Records(fmt.Sprintf("w%d-b%d", w, b), size)
			all = append(all, batch...)
			batchList = append(batchList, batch)
		}
	}
	for w := range writers {
		wg.Go(func() {
			for b := range batches {
				if err := s.Write(context.Background(), batchList[w*batches+b]); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent Write: %v", err)
	}
	closeSink(t, s)
	got := d.Read(t)
	sameMultiset(t, f, got, all)
	if !f.Ordered {
		return
	}
	// Each batch's records are contiguous and in order.
	gk := keys(got)
	for _, batch := range batchList {
		bk := keys(batch)
		i := slices.Index(gk, bk[0])
		if i < 0 || i+len(bk) > len(gk) || !slices.Equal(gk[i:i+len(bk)], bk) {
			t.Fatalf("batch %s was interleaved with another or reordered", batch[0].ID)
		}
	}
}

func closeTwice(t *testing.T, d Destination, f Features) {
	s := d.Open(t)
	write(t, s, Records("c", 2))
	closeSink(t, s)
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v (Close must be idempotent)", err)
	}
	if err := s.Write(context.Background(), Records("late", 1)); !errors.Is(err, sink.ErrClosed) {
		t.Fatalf("Write after Close = %v, want sink.ErrClosed", err)
	}
	sameMultiset(t, f, d.Read(t), Records("c", 2))
}

func cancelled(t *testing.T, d Destination) {
	s := d.Open(t)
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Write(ctx, Records("x", 3)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Write with a cancelled context = %v, want context.Canceled", err)
	}
}

// restoreAfterCrash: batch A is committed (its token stored), batch B is
// written but the process dies before its commit; the rerun restores the
// token and writes B again. Each record must be there once.
func restoreAfterCrash(t *testing.T, d Destination, f Features) {
	s := d.Open(t)
	a, b := Records("a", 5), Records("b", 5)
	write(t, s, a)
	tok, err := s.(sink.Committer).Token()
	if err != nil {
		t.Fatalf("Token: %v", err)
	}
	write(t, s, b)
	closeSink(t, s) // the crash: B is out, its commit never happened

	s2 := d.Open(t)
	if err := s2.(sink.Restorer).Restore(context.Background(), tok); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	write(t, s2, b)
	closeSink(t, s2)
	got := d.Read(t)
	sameMultiset(t, f, got, append(slices.Clone(a), b...))
}

// Revisions makes the next revision of records: another title, the
// revision one more, changed naming the title.
func Revisions(recs []record.Record) []record.Record {
	out := slices.Clone(recs)
	for i := range out {
		out[i].Revision = max(out[i].Revision, 1) + 1
		out[i].Title += " (corrected)"
		out[i].Changed = []string{"title"}
	}
	return out
}

// revisionsAfterCrash: revision 1 of four papers is committed; revision 2
// of two of them is written, and the process dies before its commit; the
// rerun restores the token and writes revision 2 again. Every revision is
// there once (a file, a stream), or each paper once as its latest
// revision (Latest).
func revisionsAfterCrash(t *testing.T, d Destination, f Features) {
	s := d.Open(t)
	v1 := Records("rev", 4)
	for i := range v1 {
		v1[i].Revision = 1
	}
	v2 := Revisions(v1[:2])
	write(t, s, v1)
	tok, err := s.(sink.Committer).Token()
	if err != nil {
		t.Fatalf("Token: %v", err)
	}
	write(t, s, v2)
	closeSink(t, s) // killed before the commit of revision 2

	s2 := d.Open(t)
	if err := s2.(sink.Restorer).Restore(context.Background(), tok); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	write(t, s2, v2)
	closeSink(t, s2)
	want := append(slices.Clone(v1), v2...)
	if f.Latest {
		want = append(slices.Clone(v2), v1[2:]...)
	}
	sameMultiset(t, f, d.Read(t), want)
}

// sameBytes: a record is the same bytes in every sink, as sink.Marshal
// makes them (no HTML escaping).
func sameBytes(t *testing.T, d Destination, reencoded bool) {
	if d.Raw == nil {
		t.Skip("the destination does not give raw bytes")
	}
	s := d.Open(t)
	recs := Records("bytes", 3)
	write(t, s, recs)
	closeSink(t, s)
	raw := d.Raw(t)
	want := map[string]bool{}
	for i := range recs {
		b, err := sink.Marshal(&recs[i])
		if err != nil {
			t.Fatal(err)
		}
		want[canonical(t, b, reencoded)] = true
	}
	if len(raw) != len(recs) {
		t.Fatalf("%d raw records, want %d", len(raw), len(recs))
	}
	for _, b := range raw {
		if !want[canonical(t, b, reencoded)] {
			t.Fatalf("delivered bytes differ from sink.Marshal's:\n%s", b)
		}
		if strings.Contains(string(b), `\u003c`) || strings.Contains(string(b), `\u0026`) {
			t.Fatalf("HTML-escaped record: %s", b)
		}
	}
}

// canonical is b as it is, or, for a re-encoding destination, as the
// JSON value it holds (keys sorted, no white space).
func canonical(t *testing.T, b []byte, reencoded bool) string {
	if !reencoded {
		return string(b)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// Bench writes pages of 20 records to s (one Write per page, as the crawler
// does) until b is done, and reports records/s. It closes s.
func Bench(b *testing.B, s sink.Sink) {
	b.Helper()
	defer s.Close()
	pages := 0
	for b.Loop() {
		recs := Records(fmt.Sprintf("p%d", pages), 20)
		pages++
		if err := s.Write(context.Background(), recs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(pages*20)/b.Elapsed().Seconds(), "records/s")
}

// redelivery: a batch written twice is there once; so is a paper's next
// revision written twice, which is not taken for a resend of the first.
func redelivery(t *testing.T, d Destination, f Features) {
	s := d.Open(t)
	a := Records("again", 6)
	write(t, s, a)
	write(t, s, a)
	b := Revisions(a[:3])
	write(t, s, b)
	write(t, s, b)
	closeSink(t, s)
	want := append(slices.Clone(a), b...)
	if f.Latest {
		want = append(slices.Clone(b), a[3:]...)
	}
	sameMultiset(t, f, d.Read(t), want)
}

// Open opens the sink a URL names, failing the test if it cannot.
func Open(t testing.TB, url string, opts sink.Options) sink.Sink {
	t.Helper()
	s, err := sink.Open(context.Background(), url, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", url, err)
	}
	return s
}

// ReadJSONL reads a JSONL file strictly: every line must be a whole
// record, and the file must end with a newline. A missing file is empty.
func ReadJSONL(t testing.TB, path string) []record.Record {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Fatalf("%s does not end with a newline", path)
	}
	var out []record.Record
	for i, l := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var r record.Record
		if err := json.Unmarshal(l, &r); err != nil {
			t.Fatalf("%s line %d is not a record: %v: %q", path, i+1, err, l)
		}
		out = append(out, r)
	}
	return out
}

// memQuarantine keeps refusals in memory.
type memQuarantine struct {
	mu sync.Mutex
	rs []sink.Refusal
}

func (q *memQuarantine) Put(_ context.Context, rs []sink.Refusal) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.rs = append(q.rs, rs...)
	return nil
}

// refusedQuarantined: the driver refuses its hostile record with
// sink.ErrRefused (never retryable); through sink.Quarantined, a batch
// holding it delivers every other record, in order where the sink keeps
// order, and the refused one alone goes to the quarantine with the sink's
// name and the reason.
func refusedQuarantined(t *testing.T, d Destination, f Features) {
	ctx := context.Background()
	s := d.Open(t)
	defer s.Close()
	bad := f.Refuse("refused-0")
	err := s.Write(ctx, []record.Record{bad})
	if !errors.Is(err, sink.ErrRefused) || errors.Is(err, backoff.ErrRetryable) {
		t.Fatalf("the hostile record: Write = %v, want an error that is sink.ErrRefused and not retryable", err)
	}
	good := Records("q", 5)
	batch := append(append(slices.Clone(good[:2]), bad), good[2:]...)
	q := &memQuarantine{}
	var counted int
	qs := sink.Quarantined(s, q, func(n int) { counted += n })
	if err := qs.Write(ctx, batch); err != nil {
		t.Fatalf("a batch with one refused record: %v", err)
	}
	if len(q.rs) != 1 || q.rs[0].Record.ID != bad.ID || q.rs[0].Sink != sink.Describe(s) || q.rs[0].Reason == "" || counted != 1 {
		t.Fatalf("quarantine holds %d refusals (counted %d), want the one record %s from %s with its reason: %+v", len(q.rs), counted, bad.ID, sink.Describe(s), q.rs)
	}
	got := d.Read(t)
	if f.Ordered {
		if !slices.Equal(keys(got), keys(good)) {
			t.Fatalf("delivered, in order:\n%s", firstDiff(keys(got), keys(good)))
		}
	} else {
		sameMultiset(t, f, got, good)
	}
	if c, ok := qs.(sink.Committer); ok != (f.Restore) {
		t.Errorf("the quarantine wrapper hides the sink's token (Committer %v, want %v)", ok, f.Restore)
	} else if ok {
		if _, err := c.Token(); err != nil {
			t.Errorf("token after a quarantined batch: %v", err)
		}
	}
}

// Oversized is a record with the given id whose encoding is over n bytes
// (its abstract is long): a sink bounding a record's size refuses it.
func Oversized(id string, n int) record.Record {
	r := Records(id, 1)[0]
	r.ID = id
	r.Abstract = strings.Repeat("x", n)
	return r
}
