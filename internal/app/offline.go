package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/litcrawl/litcrawl/fetch"
	"github.com/litcrawl/litcrawl/internal/archive"
	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/history"
	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/internal/state"
	"github.com/litcrawl/litcrawl/parser"
	"github.com/litcrawl/litcrawl/sink"
	"github.com/litcrawl/litcrawl/sink/quarantine"
)

// pageDelivery delivers pages a run does not fetch (crawl parse, crawl
// replay) through the engine's one delivery step: with a ledger in memory
// (each paper once, by id and by DOI, where it first appears, and again as
// its next revision where a later page shows it changed, exactly as a crawl
// delivers the same pages), or with the crawl state (crawl replay
// --updates: what the state's runs did not deliver, and the papers they
// delivered that the pages now show changed). Not safe for concurrent use:
// pages are delivered in the order given.
type pageDelivery struct {
	ledger    ledger.Ledger
	out       sink.Sink
	runID     string
	citations bool
}

// newMemoryDelivery delivers to out, the records carrying runID.
func newMemoryDelivery(out sink.Sink, runID string) *pageDelivery {
	return &pageDelivery{ledger: ledger.NewMemory(), out: out, runID: runID}
}

// Deliver delivers one page: what it sent, and what of it was a revision.
func (p *pageDelivery) Deliver(ctx context.Context, page *parser.Page) (engine.Delivered, error) {
	ds, err := engine.Deliver(ctx, p.ledger, p.out, []engine.Item{{
		Key: ledger.PageKey{Journal: page.JournalID, Page: page.PageNo}, Page: page, RunID: p.runID, Citations: p.citations}})
	if err != nil {
		return engine.Delivered{}, err
	}
	return ds[0], nil
}

// Replay is a replay of an archive's listing pages.
type Replay struct {
	Archive string   // a directory of WARC files
	Sinks   []string // sink URLs (none: standard output)
	// JournalSinks are the sinks of the journals whose records go to
	// sinks of their own.
	JournalSinks map[int64][]string
	// StateDir, when set, is the crawl state the replay delivers against
	// (crawl replay --updates): papers its runs never delivered, and the
	// next revision of those the pages show changed; the sinks are rolled
	// back to the state's last commit first, as a crawl's are.
	StateDir string
}

// Replayed is what a replay did.
type Replayed struct {
	RunID string
	Pages int
	// New and Updated count the records delivered: papers delivered for
	// the first time, and known ones as their next revision; Waiting
	// counts the reads of papers a page shows changed but lacking what was
	// delivered; Held the records held back for a finding (--updates,
	// quality.hold), in Quarantine.
	New, Updated, Waiting, Held int
	Quarantine                  string
}

// recordRun keeps a run that delivered pages it did not fetch (crawl
// replay --updates, crawl quarantine retry --reparse) in the state's
// history, ended by err: crawl runs and the report show what it did.
func recordRun(st *state.Store, kind history.Kind, id string, started time.Time, pages int64, papers map[string]int64, err error) error {
	code := exitcode.Of(err)
	sum := history.RunSummary{RunID: id, Kind: kind, Started: started.UTC().Format(time.RFC3339), DurationSeconds: time.Since(started).Seconds(),
		Pages: map[string]int64{"done": pages}, Papers: papers, Retries: map[string]int{}, Failures: []engine.PageFailure{}, ExitCode: &code}
	if err != nil {
		sum.Error = err.Error()
	}
	data, jerr := json.Marshal(sum)
	if jerr != nil {
		return jerr
	}
	return st.PutRun(state.Run{ID: id, Kind: string(kind), Started: started, Finished: time.Now(), Summary: data})
}

// Replay re-parses every archived listing page that came back whole (HTTP
// 200, a listing page) and delivers its records (Pages): the records of a
// replay are those an offline backfill of the same archive delivers.
func (e *Env) Replay(ctx context.Context, r Replay) (Replayed, error) {
	res := Replayed{RunID: "replay-" + NewRunID(time.Now())}
	started := time.Now()
	opts := SinkOptions{Stdout: e.Stdout, Log: e.log(), Metrics: e.Metrics, PerJournal: r.JournalSinks}
	pages := newMemoryDelivery(nil, res.RunID)
	pages.citations = e.Config.Updates.Citations
	var hold *quarantine.File
	var st *state.Store
	if r.StateDir != "" && len(r.Sinks) == 0 && len(r.JournalSinks) == 0 {
		// Standard output would take them, and the state would count
		// them delivered: the crawls' sinks would never get them.
		return res, fmt.Errorf("replay --updates: the configuration names no sinks and no --sink was given: the records would go to standard output and count as delivered; give --config (the crawls' configuration) or --sink URL for each sink the crawls deliver to")
	}
	if r.StateDir != "" {
		// A state that is not there is a mistyped path, not a first
		// delivery of every paper of the archive.
		if err := state.Stat(r.StateDir); err != nil {
			return res, fmt.Errorf("replay --updates: the crawl state %s: %w (give the --state-dir of the crawls whose sinks the replay corrects)", r.StateDir, err)
		}
		var err error
		if st, err = state.Open(r.StateDir); err != nil {
			return res, err
		}
		defer st.Close()
		opts.Writer = st.WriterID()
		pages.ledger = st
		if e.Config.Quality.Holds() {
			hold = quarantine.In(r.StateDir)
			res.Quarantine = hold.Path()
		}
	}
	out, err := OpenSinks(ctx, r.Sinks, opts)
	if err != nil {
		return res, err
	}
	pages.out = out
	if r.StateDir != "" {
		if err := restore(ctx, pages.ledger, out, false, e.log()); err != nil {
			out.Close()
			return res, err
		}
	}
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
		if hold != nil {
			var held int
			if page, held, err = engine.HoldBack(ctx, hold, fetch.Result{Page: page, Body: a.Body, URL: a.URL}, time.Now()); err != nil {
				return err
			}
			res.Held += held
		}
		d, err := pages.Deliver(ctx, page)
		res.Pages++
		res.New += d.Sent - d.Updated
		res.Updated += d.Updated
		res.Waiting += d.Poorer
		return err
	})
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return res, fmt.Errorf("replay: %w", err)
	}
	if res.Held > 0 {
		err = exitcode.QualityError(heldRecords(int64(res.Held), res.Quarantine))
	}
	if st != nil {
		papers := map[string]int64{"new": int64(res.New), "updated": int64(res.Updated), "held": int64(res.Held), "updates_waiting": int64(res.Waiting)}
		if herr := recordRun(st, history.Replay, res.RunID, started, int64(res.Pages), papers, err); herr != nil {
			return res, errors.Join(err, fmt.Errorf("run history: %w", herr))
		}
	}
	return res, err
}
