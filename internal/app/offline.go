package app

import (
	"context"
	"fmt"
	"time"

	"github.com/litcrawl/litcrawl/internal/archive"
	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/parser"
	"github.com/litcrawl/litcrawl/sink"
)

// memoryDelivery delivers pages a run does not fetch (crawl parse, crawl replay)
// through the engine's one delivery step, with a ledger in memory: each
// paper once (by id and by DOI), where it first appears, exactly as a crawl
// delivers the same pages. Not safe for concurrent use: pages are
// delivered in the order given.
type memoryDelivery struct {
	ledger *ledger.Memory
	out    sink.Sink
	runID  string
}

// newMemoryDelivery delivers to out, the records carrying runID.
func newMemoryDelivery(out sink.Sink, runID string) *memoryDelivery {
	return &memoryDelivery{ledger: ledger.NewMemory(), out: out, runID: runID}
}

// Deliver delivers one page's records not delivered before; it returns how
// many it sent.
func (p *memoryDelivery) Deliver(ctx context.Context, page *parser.Page) (int, error) {
	ds, err := engine.Deliver(ctx, p.ledger, p.out, []engine.Item{{
		Key: ledger.PageKey{Journal: page.JournalID, Page: page.PageNo}, Page: page, RunID: p.runID}})
	if err != nil {
		return 0, err
	}
	return ds[0].Sent, nil
}

// Replay is a replay of an archive's listing pages.
type Replay struct {
	Archive string   // a directory of WARC files
	Sinks   []string // sink URLs (none: standard output)
	// JournalSinks are the sinks of the journals whose records go to
	// sinks of their own.
	JournalSinks map[int64][]string
}

// Replayed is what a replay did.
type Replayed struct {
	RunID         string
	Pages, Papers int
}

// Replay re-parses every archived listing page that came back whole (HTTP
// 200, a listing page) and delivers its records (Pages): the records of a
// replay are those an offline backfill of the same archive delivers.
func (e *Env) Replay(ctx context.Context, r Replay) (Replayed, error) {
	res := Replayed{RunID: "replay-" + NewRunID(time.Now())}
	out, err := OpenSinks(ctx, r.Sinks, SinkOptions{Stdout: e.Stdout, Log: e.log(), Metrics: e.Metrics, PerJournal: r.JournalSinks})
	if err != nil {
		return res, err
	}
	pages := newMemoryDelivery(out, res.RunID)
	scheme := e.Config.Site.Scheme()
	err = archive.Responses(r.Archive, func(a archive.Response) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		journal, pageNo, listing := scheme.ParseURL(a.URL)
		if a.Status != 200 || !listing {
			return nil
		}
		page, err := parser.Parse(a.Body, parser.Options{URL: a.URL, Journal: journal, Page: pageNo,
			ContentType: a.Header.Get("Content-Type"), FetchedAt: a.Date, RunID: res.RunID})
		if err != nil || !page.IsListing() {
			return nil // a soft block or an error page, as the live run saw it
		}
		n, err := pages.Deliver(ctx, page)
		res.Pages++
		res.Papers += n
		return err
	})
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return res, fmt.Errorf("replay: %w", err)
	}
	return res, nil
}
