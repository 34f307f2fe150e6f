package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/parser"
	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/sink"
)

// Item is one fetched page waiting to be delivered.
type Item struct {
	Key   ledger.PageKey
	Page  *parser.Page
	RunID string // the run its records carry, and that the ledger records
	// Redeliver sends the page's records even if delivered before.
	Redeliver bool
	// Citations makes a change of a paper's citation count alone a new
	// revision (updates.citations).
	Citations bool
	// PapersOnly: the records are not the whole page (the held records of
	// a quarantine retry): the commit records their papers, not the page.
	PapersOnly bool
	// Hold, when set, is asked with the page's papers and what the ledger
	// knows of them whether to hold the page back: then nothing of it is
	// delivered or committed (a walk whose jump landed below the gap it
	// looked for goes back before it delivers the papers there, so that
	// they are met in order: Walk.Hold).
	Hold func(papers []ledger.Paper, seen []ledger.Delivery) bool
	// Walk, when set, is asked with what delivering the page did for its
	// journal's walk state to commit with it (ledger.Group.Walks): a
	// nightly walk killed after this commit carries on from it
	// (Walk.CrashState).
	Walk func(d Delivered) ledger.WalkState
}

// Delivered is what delivering one page did.
type Delivered struct {
	Records         int // records on the page
	FromEarlierRuns int // distinct papers on it delivered by an earlier run
	NewToRun        int // distinct papers on it not met earlier in this run (new, or known only to earlier runs)
	Sent            int // records sent to the sinks
	Updated         int // of them, known papers sent as their next revision
	Poorer          int // known papers the page shows changed but lacking what was delivered: not sent
	// Restless are papers sent as revision ManyRevisions or later: a site
	// that shows a paper in alternating versions makes one every read.
	Restless    []string
	NewToLedger int  // papers the ledger recorded for the first time
	Last        bool // the page's pager says it is the last page
	Held        bool // held back (Item.Hold): nothing delivered or committed
	Group       int  // pages committed together with it (itself included)
	// Papers are the page's distinct papers, in page order, and Delivery what
	// the ledger knew of each before the page: a nightly walk finds its
	// bounds with them (Walk).
	Papers   []ledger.Paper
	Delivery []ledger.Delivery
}

// Deliver is the one delivery step, for local runs and the fleet alike:
// it looks each page's papers up in the ledger (one Lookup per page),
// decides what each page delivers, writes those records to the sink in one
// Write, and only then commits the pages, their papers and the sink's token
// in one ledger Commit. A failure before the commit commits nothing: the
// pages are delivered again later, and the sink's token (or its dedupe by
// id) keeps the records from being there twice.
func Deliver(ctx context.Context, l ledger.Ledger, out sink.Sink, items []Item) ([]Delivered, error) {
	ds := make([]Delivered, len(items))
	group := ledger.Group{Pages: make([]ledger.Page, 0, len(items))}
	var send []record.Record
	var sent sentInGroup
	for i, it := range items {
		recs, papers := distinct(it.Page.Records)
		found, err := l.Lookup(ctx, papers, it.RunID)
		if err != nil {
			return nil, fmt.Errorf("look up the papers of %s: %w", pageName(it.Key), err)
		}
		seen := ledger.Deliveries(found)
		if it.Hold != nil && it.Hold(papers, seen) {
			ds[i] = Delivered{Records: len(it.Page.Records), Held: true, Papers: papers, Delivery: seen,
				Last: it.Page.LastPage != 0 && it.Page.LastPage == it.Key.Page}
			continue
		}
		dc := decide(recs, papers, found, it, &sent)
		send = append(send, dc.send...)
		ds[i] = Delivered{Records: len(it.Page.Records), FromEarlierRuns: dc.knownBefore, NewToRun: dc.freshToRun, Sent: len(dc.send),
			Updated: dc.updated, Poorer: dc.poorer, Restless: dc.restless,
			Last: it.Page.LastPage != 0 && it.Page.LastPage == it.Key.Page, Papers: papers, Delivery: seen}
		group.Pages = append(group.Pages, ledger.Page{Key: it.Key, Papers: papers, OnPage: len(it.Page.Records), RunID: it.RunID, At: time.Now(), PapersOnly: it.PapersOnly, Updated: dc.updated})
		if it.Walk != nil {
			if group.Walks == nil {
				group.Walks = map[int64]ledger.WalkState{}
			}
			group.Walks[it.Key.Journal] = it.Walk(ds[i])
		}
	}
	if len(group.Pages) == 0 {
		return ds, nil // every page held back
	}
	if len(send) > 0 {
		if err := out.Write(ctx, send); err != nil {
			return nil, fmt.Errorf("deliver %d pages (from %s): %w", len(items), pageName(items[0].Key), err)
		}
	}
	if c, ok := out.(sink.Committer); ok {
		tok, err := c.Token()
		if err != nil {
			return nil, fmt.Errorf("sink token: %w", err)
		}
		group.SinkToken = tok
	}
	newPapers, err := l.Commit(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("commit %d pages (from %s): %w", len(items), pageName(items[0].Key), err)
	}
	k := 0
	for i := range ds {
		if ds[i].Held {
			continue
		}
		ds[i].NewToLedger, ds[i].Group = newPapers[k], len(group.Pages)
		k++
	}
	return ds, nil
}

// distinct is a page's records with a repeated paper (the same id twice)
// kept once, and the papers the ledger is asked about.
func distinct(recs []record.Record) ([]record.Record, []ledger.Paper) {
	out := make([]record.Record, 0, len(recs))
	papers := make([]ledger.Paper, 0, len(recs))
	seen := make(map[string]bool, len(recs))
	for _, r := range recs {
		if seen[r.ID] {
			continue
		}
		seen[r.ID] = true
		out = append(out, r)
		papers = append(papers, ledger.Paper{ID: r.ID, DOI: r.DOI})
	}
	return out, papers
}

// sentInGroup is what earlier pages of a group met, by id and by DOI: the
// print each paper has after them (the one they record, else the
// ledger's), and the id it was met under, so that a later page of the
// group showing the paper again is judged against it.
type sentInGroup map[string]metInGroup

type metInGroup struct {
	print ledger.Print
	id    string
}

// get finds r's paper among those the group met: its print, whether it
// was met, and whether the print is r's to be judged against. A paper met
// by r's DOI under another site id is another paper the site gave the
// same DOI (the ledger takes it as known, as a crawl always has), not an
// earlier revision of r's: its print is not r's.
func (s *sentInGroup) get(r record.Record) (p ledger.Print, met, judged bool) {
	if m, ok := (*s)[r.ID]; ok {
		return m.print, true, true
	}
	if r.DOI != "" {
		m, ok := (*s)["doi:"+ledger.DOIKey(r.DOI)]
		return m.print, ok, ok && !(hasSiteID(m.id) && hasSiteID(r.ID))
	}
	return ledger.Print{}, false, false
}

func (s *sentInGroup) has(r record.Record) bool {
	_, ok, _ := s.get(r)
	return ok
}

func (s *sentInGroup) add(r record.Record, p ledger.Print) {
	if *s == nil {
		*s = sentInGroup{}
	}
	(*s)[r.ID] = metInGroup{p, r.ID}
	if r.DOI != "" {
		(*s)["doi:"+ledger.DOIKey(r.DOI)] = metInGroup{p, r.ID}
	}
}

// decision is what decide made of a page.
type decision struct {
	send        []record.Record // the records to send, numbered
	knownBefore int             // papers an earlier run delivered
	freshToRun  int             // papers this run meets for the first time
	updated     int             // known papers sent as their next revision
	poorer      int             // known papers changed on a read poorer than what was delivered
	restless    []string        // papers sent as revision ManyRevisions or later
}

// ManyRevisions is the revision from which a paper sent is said in the
// log: a site that alternates two versions of a paper makes a revision
// every read, for every sink.
const ManyRevisions = 10

// decide is the one rule of what a page delivers. recs are its distinct
// records, papers theirs, and found what the ledger knows of each. A
// record is sent when the ledger has never seen its paper (by id or DOI)
// and no earlier page of the same group met it: as revision 1. A paper
// known (to the ledger, or to an earlier page of the group) whose content
// changed (judge) is sent as its next revision. With it.Redeliver every
// record is sent. decide sets on papers the prints the commit is to record: a new
// paper's, a new revision's, and a first print of a paper delivered before
// prints were kept.
//
// knownBefore counts the papers an earlier run delivered: the nightly stop
// rule asks for it (papers delivered earlier in this run do not count as
// known). freshToRun counts the papers this run meets for the first time
// (new, or known only to earlier runs): the repeat rule asks for it.
func decide(recs []record.Record, papers []ledger.Paper, found []ledger.Seen, it Item, sent *sentInGroup) decision {
	var d decision
	for i := range recs {
		r := &recs[i]
		seen := found[i].Delivery
		if seen == ledger.DeliveredBefore {
			d.knownBefore++
		}
		base, inGroup, judged := sent.get(*r)
		if seen != ledger.DeliveredThisRun && !inGroup {
			d.freshToRun++
		}
		if !judged {
			base = found[i].Print
		}
		fp := fingerprint(r)
		if seen == ledger.NeverDelivered && !inGroup {
			r.Revision = 1
			papers[i].Print = fp.withRevision(1)
			d.send = append(d.send, *r)
			sent.add(*r, papers[i].Print)
			continue
		}
		old := fprint(base)
		v, changed := judge(base, fp, it.Citations)
		if it.Redeliver && !fp.siteID() && old.siteID() {
			// A read without the JSON of a paper delivered under its
			// site id: sent, it would be another paper.
			d.poorer++
			sent.add(*r, base)
			continue
		}
		if it.Redeliver && v == poorer {
			// Sent as the site shows it now (--redeliver): its next
			// revision, and its print, so that a fuller read later is a
			// change again.
			v, changed = revise, changed|old.has()&^fp.has()
		}
		switch {
		case v == revise:
			r.Revision = old.revision() + 1
			r.Changed = changedNames(changed, fp, old)
			if fp.siteID() && !old.siteID() && r.DOI != "" {
				r.Replaces = record.DOIID(r.DOI)
			}
			papers[i].Print = fp.withRevision(r.Revision)
			d.send = append(d.send, *r)
			d.updated++
			if r.Revision >= ManyRevisions {
				d.restless = append(d.restless, r.ID)
			}
			sent.add(*r, papers[i].Print)
			continue
		case v == poorer:
			d.poorer++
		case v == baseline && !hasSiteID(r.ID) && it.Redeliver:
			// No print, and no site id: maybe a paper delivered under its
			// site id, read today without its JSON. Not sent.
			d.poorer++
			sent.add(*r, base)
			continue
		case v == baseline && hasSiteID(r.ID) && found[i].ByID:
			// Delivered before prints were kept: this read is its
			// revision 1 from now on (a read without the JSON is not: it
			// may lack what was delivered).
			papers[i].Print = fp.withRevision(1)
			base = papers[i].Print
		}
		sent.add(*r, base)
		if it.Redeliver {
			r.Revision = max(old.revision(), 1)
			d.send = append(d.send, *r)
		}
	}
	return d
}

// changedNames names the fields of a revision that changed: those judge
// found, "id" when the paper got its site id, "content" when the print
// could not tell which field (two 4-bit hashes alike: about one change of
// one field in 15).
func changedNames(changed fieldMask, fresh, old fprint) []string {
	names := changed.names()
	if fresh.siteID() && !old.siteID() {
		names = append(names, "id")
	}
	if len(names) == 0 {
		names = []string{"content"}
	}
	return names
}

func pageName(k ledger.PageKey) string { return fmt.Sprintf("journal %d page %d", k.Journal, k.Page) }
