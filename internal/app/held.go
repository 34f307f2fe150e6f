package app

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/history"
	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/internal/state"
	"github.com/litcrawl/litcrawl/parser"
	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/sink"
	"github.com/litcrawl/litcrawl/sink/quarantine"
)

// HeldResult is what crawl quarantine retry --reparse did.
type HeldResult struct {
	Path      string
	Delivered int // read right now: delivered to every sink, gone from the quarantine
	Since     int // delivered since they were held (a crawl met them fixed on the site): gone from the quarantine
	Held      int // read with a finding still: kept
	NoPage    int // held without their page's bytes (too large): kept
	Bad       int // lines of the file that are no entry
}

// RetryHeld parses again, with this build's parser, the pages of the
// records the quality gate held back (quality.hold), and delivers those
// that now read without a finding to every sink, through the engine's
// one delivery step against the crawl state: as a crawl delivers them
// (revision 1, or the next revision of a paper delivered since), the
// state committing them as delivered. They leave the quarantine after the
// commit; killed in between, the next retry finds them delivered and only
// removes them.
func (e *Env) RetryHeld(ctx context.Context, o QuarantineRetry) (HeldResult, error) {
	res := HeldResult{Path: filepath.Join(o.StateDir, quarantine.Name)}
	err := withQuarantine(o.StateDir, &res.Bad, func(st *state.Store, path string) error {
		return e.retryHeldLocked(ctx, o, st, path, &res)
	})
	return res, err
}

func (e *Env) retryHeldLocked(ctx context.Context, o QuarantineRetry, st *state.Store, path string, res *HeldResult) error {
	c, err := quarantine.Read(path)
	if err != nil {
		return err
	}
	res.Bad = len(c.Bad)
	urls := o.Sinks
	if len(urls) == 0 {
		urls = e.Config.Sinks
	}
	if len(urls) == 0 && len(o.JournalSinks) == 0 {
		// Standard output would take them, and the state would count them
		// delivered: the crawls' file or table would never get them.
		return fmt.Errorf("the configuration names no sinks and no --sink was given: the held records would go to standard output and count as delivered; give --sink URL for each sink your crawls deliver to")
	}
	out, err := OpenSinks(ctx, urls, SinkOptions{Writer: st.WriterID(), Stdout: e.Stdout, Log: e.Log, Metrics: e.Metrics, PerJournal: o.JournalSinks})
	if err != nil {
		return err
	}
	defer out.Close()
	if err := restore(ctx, st, out, false, e.log()); err != nil {
		return err
	}
	runID := "reparse-" + NewRunID(time.Now())
	now := time.Now()
	var updated, pagesDone int64
	done := map[int]bool{} // entries delivered
	// Held papers a crawl delivered since (the site fixed them) leave.
	since, err := deliveredSince(ctx, st, c.Entries)
	if err != nil {
		return err
	}
	for i := range since {
		done[i] = true
		res.Since++
	}
	// One parse a page: entries of one page share its bytes.
	byPage := map[string][]int{}
	var order []string
	for i, r := range c.Entries {
		if r.Sink != sink.HeldBy || done[i] {
			continue
		}
		if r.Page == nil || len(r.Page.Gzip) == 0 {
			res.NoPage++
			continue
		}
		k := string(r.Page.Gzip)
		if byPage[k] == nil {
			order = append(order, k)
		}
		byPage[k] = append(byPage[k], i)
	}
	for _, k := range order {
		delivered, entries, err := e.reparsePage(ctx, o, st, out, c.Entries, byPage[k], runID, now, res)
		if err != nil {
			return err
		}
		if delivered != nil {
			pagesDone++
			updated += int64(delivered.Updated)
		}
		for _, i := range entries {
			done[i] = true
		}
	}
	keep := c.Entries[:0]
	for i, r := range c.Entries {
		if !done[i] {
			keep = append(keep, r)
		}
	}
	c.Entries = keep
	if err := quarantine.Replace(path, c); err != nil {
		return err
	}
	if res.Delivered == 0 && pagesDone == 0 {
		return nil // nothing delivered: no run to keep
	}
	papers := map[string]int64{"new": int64(res.Delivered) - updated, "updated": updated, "held": int64(res.Held)}
	var left error // the command's exit: 3 while held records remain
	if n := res.Held + res.NoPage; n > 0 {
		left = exitcode.IncompleteError(fmt.Errorf("%d held records remain in the quarantine", n))
	}
	if err := recordRun(st, history.Reparse, runID, now, pagesDone, papers, left); err != nil {
		return fmt.Errorf("run history: %w", err)
	}
	return nil
}

// reparsePage parses one held page again (the entries idx of rs share
// it) and delivers the records that now read right; the others get the
// new finding as their reason. It returns what the delivery did (nil:
// nothing delivered) and the entries delivered.
func (e *Env) reparsePage(ctx context.Context, o QuarantineRetry, st *state.Store, out sink.Sink, rs []sink.Refusal, idx []int,
	runID string, now time.Time, res *HeldResult) (*engine.Delivered, []int, error) {
	hold := func(i int, reason string) {
		rs[i].Reason, rs[i].Tries, rs[i].At = reason, rs[i].Tries+1, now.UTC()
		res.Held++
	}
	hp := rs[idx[0]].Page
	page, err := reparse(hp, runID, e.Config.Fetch.MaxBodyBytes)
	if err != nil {
		for _, i := range idx {
			hold(i, "held by quality.hold; its page could not be parsed again: "+err.Error())
		}
		return nil, nil, nil
	}
	findings := page.Findings(now)
	if o.findings != nil {
		findings = o.findings(page, now)
	}
	var recs []record.Record
	var deliver []int
	for _, i := range idx {
		switch pos, why := heldAgain(page, findings, rs[i].Record); {
		case pos == 0:
			hold(i, "held by quality.hold; parsed again, its page no longer gives this paper")
		case why != "":
			hold(i, "held by quality.hold: "+why)
		default:
			recs = append(recs, page.Records[pos-1])
			deliver = append(deliver, i)
		}
	}
	if len(recs) == 0 {
		return nil, nil, nil
	}
	it := engine.Item{Key: ledger.PageKey{Journal: hp.Journal, Page: hp.Page}, PapersOnly: true, RunID: runID, Citations: e.Config.Updates.Citations,
		Page: &parser.Page{Records: recs, JournalID: page.JournalID, PageNo: page.PageNo}}
	ds, err := engine.Deliver(ctx, st, out, []engine.Item{it})
	if err != nil {
		return nil, nil, fmt.Errorf("deliver the records held from %s: %w", cmp.Or(hp.URL, hp.Capture), err)
	}
	res.Delivered += ds[0].Sent
	res.Since += len(deliver) - ds[0].Sent
	return &ds[0], deliver, nil
}

// deliveredSince are the held entries whose paper the ledger knows as
// delivered: a crawl met it since, read right (the site fixed it), or a
// retry delivered it and was killed before it rewrote the quarantine.
func deliveredSince(ctx context.Context, l ledger.Ledger, rs []sink.Refusal) (map[int]bool, error) {
	var idx []int
	var papers []ledger.Paper
	for i, r := range rs {
		if r.Sink == sink.HeldBy {
			idx = append(idx, i)
			papers = append(papers, ledger.Paper{ID: r.Record.ID, DOI: r.Record.DOI})
		}
	}
	out := map[int]bool{}
	if len(papers) == 0 {
		return out, nil
	}
	seen, err := l.Lookup(ctx, papers, "")
	if err != nil {
		return nil, err
	}
	for k, s := range seen {
		if s.Delivery != ledger.NeverDelivered {
			out[idx[k]] = true
		}
	}
	return out, nil
}

// reparse parses a held page's bytes again, if they are at most max
// bytes decompressed (fetch.max_body_bytes: what a fetch takes).
func reparse(hp *sink.HeldPage, runID string, maxHeldPage int64) (*parser.Page, error) {
	zr, err := gzip.NewReader(bytes.NewReader(hp.Gzip))
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(io.LimitReader(zr, maxHeldPage+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > maxHeldPage {
		return nil, fmt.Errorf("the page is over fetch.max_body_bytes (%d bytes) decompressed", maxHeldPage)
	}
	fetched, _ := time.Parse(time.RFC3339, hp.FetchedAt) // zero for a file's page
	return parser.Parse(body, parser.Options{URL: hp.URL, Capture: hp.Capture, Journal: hp.Journal, Page: hp.Page,
		ContentType: hp.ContentType, FetchedAt: fetched, RunID: runID})
}

// heldAgain finds a held record in its page parsed again (by id, else by
// its place on the page): its position (0: not there) and, when the
// parser still has a finding on it, what.
func heldAgain(page *parser.Page, findings []parser.Finding, held record.Record) (int, string) {
	pos := 0
	for i, r := range page.Records {
		if r.ID == held.ID {
			pos = i + 1
			break
		}
	}
	if pos == 0 && held.Source.Position > 0 && held.Source.Position <= len(page.Records) {
		pos = held.Source.Position
	}
	if pos == 0 {
		return 0, ""
	}
	for _, f := range findings {
		if f.Position == pos {
			return pos, fmt.Sprintf("%s: %s (%.80q)", f.Field, f.Why, f.Value)
		}
	}
	return pos, ""
}
