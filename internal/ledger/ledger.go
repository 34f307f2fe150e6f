// Package ledger is the port the delivery step remembers through: which
// papers were delivered before (by id and by DOI), and which pages were
// committed with their papers and the sinks' token. The engine delivers
// through it; the bbolt state store (package state) implements it for a
// crawl on one machine, and the JetStream key-value ledger (package
// frontier) for a fleet of workers. ledgertest is the conformance suite
// both run.
package ledger

import (
	"context"
	"time"

	"github.com/litcrawl/litcrawl/record"
)

// PageKey names one listing page.
type PageKey struct {
	Journal int64
	Page    int
}

// Paper identifies a paper: its record id, and its DOI when it has one. A
// paper seen once without its JSON (id "doi:…") and later with it is the
// same paper: a ledger finds it by either.
type Paper struct {
	ID, DOI string
	// Print, when not zero, is the paper's content as Commit is to
	// remember it: recorded with a new paper, and in place of the print a
	// known paper had (a new revision). Zero keeps what is there. Lookup
	// ignores it.
	Print Print
}

// DOIKey is the form of a DOI a ledger keys on (trimmed, lower-cased).
func DOIKey(doi string) string { return record.DOIKey(doi) }

// DOIKey is the paper's DOI as a ledger keys on it: its DOI, or the one
// its id names ("doi:…") when it has none; "" when it has neither.
func (p Paper) DOIKey() string { return record.PaperDOIKey(p.ID, p.DOI) }

// Delivery is what a ledger knows of a paper, relative to one run: never
// delivered, delivered earlier in the run, or delivered by an earlier run.
type Delivery uint8

const (
	NeverDelivered   Delivery = iota // never delivered
	DeliveredThisRun                 // delivered earlier in the same run
	DeliveredBefore                  // delivered by an earlier run
)

// Page is one delivered page, as a commit records it.
type Page struct {
	Key    PageKey
	Papers []Paper // the page's distinct papers (new or known)
	OnPage int     // records on the page
	RunID  string  // the run that delivered it
	At     time.Time
	// PapersOnly: the papers are some of the page's (the held records of
	// a quarantine retry): they are recorded, the page's status is not.
	PapersOnly bool
	// Updated counts the page's papers delivered as their next revision
	// (a ledger that tallies runs counts them).
	Updated int
}

// Group is what one commit records: pages whose records every sink has
// acknowledged, and the sinks' token after those records (nil keeps the
// token stored before).
type Group struct {
	Pages     []Page
	SinkToken []byte
	// Walks are journals' nightly walk states to set with the pages, as
	// SetWalkState would: where a walk or audit killed right after these
	// pages must carry on. A ledger that keeps walk states (WalkStates)
	// sets them in the same commit; one that does not ignores them.
	Walks map[int64]WalkState
}

// Ledger remembers what was delivered. Implementations are safe for
// concurrent use; every method blocks until it has an answer or ctx ends.
//
// Lookup tells, for each paper, whether it was delivered before, by its id
// or its DOI, and whether by runID or by an earlier run, and gives the
// print recorded with it (the one under its id, else under its DOI). The
// engine calls it once per page.
//
// Commit records a group: each page's papers as known (the first run to
// record a paper keeps it) with their prints (a paper's non-zero print
// replaces the one it had, under its id and under its DOI), each page as
// done, and the sinks' token. It
// returns how many papers of each page it recorded for the first time.
// Commit is all or nothing where the implementation can make it so (the
// bbolt store: one transaction). One that cannot (the fleet's key-value
// ledger: no transaction spans keys) says so in its documentation; a
// failed Commit may then have recorded part of the group, and a retry
// delivers the rest again: delivery stays at least once, keyed by paper
// id, which the queue sinks deduplicate on.
type Ledger interface {
	Lookup(ctx context.Context, papers []Paper, runID string) ([]Seen, error)
	Commit(ctx context.Context, g Group) (newPapers []int, err error)
}

// PageBook is the optional ability to remember pages: a backfill skips the
// pages committed by earlier runs, and records the pages that failed for
// the next run to retry.
type PageBook interface {
	PageDone(ctx context.Context, k PageKey) (bool, error)
	FailPage(ctx context.Context, k PageKey, runID string, cause error, at time.Time) error
}

// TokenStore is the optional ability to give back the sinks' token that
// the last Commit stored, so that sinks are rolled back to it on start.
type TokenStore interface {
	SinkToken(ctx context.Context) ([]byte, error)
}
