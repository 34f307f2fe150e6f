package engine

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/litcrawl/litcrawl/fetch"
	"github.com/litcrawl/litcrawl/parser"
	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/sink"
)

// Holding back (quality.hold: implausible). A record the parser has a
// finding on (a field that does not look like what it is: page text as a
// journal name, a title that reads as names) is not delivered: it goes to
// the quarantine with the finding as its reason and its page's bytes, and
// the rest of the page is delivered. Its paper is not committed as
// delivered, so the next read of the page meets it again (and the
// quarantine keeps it once); crawl quarantine retry --reparse parses the
// kept page with the parser of the day and delivers the record once it
// reads right.

// HoldBack is holdBack for a page read from elsewhere (crawl replay
// --updates: an archive's), its findings found now.
func HoldBack(ctx context.Context, q sink.Quarantine, res fetch.Result, now time.Time) (*parser.Page, int, error) {
	return holdBack(ctx, q, res, res.Page.Findings(now), now)
}

// holdBack takes the records with a finding out of a fetched page, keeps
// them in the quarantine q (durably, before the page is delivered), and
// returns the page with the others.
func holdBack(ctx context.Context, q sink.Quarantine, res fetch.Result, findings []parser.Finding, now time.Time) (*parser.Page, int, error) {
	why := map[int][]string{}
	for _, f := range findings {
		if f.Position > 0 && f.Position <= len(res.Page.Records) {
			why[f.Position] = append(why[f.Position], fmt.Sprintf("%s: %s (%.80q)", f.Field, f.Why, f.Value))
		}
	}
	if len(why) == 0 {
		return res.Page, 0, nil
	}
	page := heldPage(res)
	var held []sink.Refusal
	kept := make([]record.Record, 0, len(res.Page.Records)-len(why))
	for i, r := range res.Page.Records {
		w, ok := why[i+1]
		if !ok {
			kept = append(kept, r)
			continue
		}
		held = append(held, sink.Refusal{At: now.UTC(), Sink: sink.HeldBy, Tries: 1, Record: r, Page: page,
			Reason: "held by quality.hold: " + strings.Join(w, "; ")})
	}
	if err := q.Put(ctx, held); err != nil {
		return nil, 0, fmt.Errorf("hold back %d records: %w", len(held), err)
	}
	out := *res.Page
	out.Records = kept
	return &out, len(held), nil
}

// heldPage is what a held record keeps of its page.
func heldPage(res fetch.Result) *sink.HeldPage {
	p := &sink.HeldPage{URL: res.URL, Journal: res.Page.JournalID, Page: res.Page.PageNo}
	if len(res.Page.Records) > 0 {
		src := res.Page.Records[0].Source
		p.FetchedAt, p.Capture = src.FetchedAt, src.Capture
	}
	var b bytes.Buffer
	w, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	w.Write(res.Body)
	w.Close()
	if b.Len() <= sink.MaxHeldPageBytes && len(res.Body) > 0 {
		p.Gzip = b.Bytes()
	}
	return p
}
