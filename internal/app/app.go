package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/litcrawl/litcrawl/internal/config"
	"github.com/litcrawl/litcrawl/internal/exitcode"
)

// Env is what every command shares: the configuration (flags already
// applied), the logger and where output goes.
type Env struct {
	Config *config.Config
	Log    *slog.Logger
	// JSON: the log is JSON, so summaries are JSON log lines too.
	JSON bool
	// Stdout receives records for the "-" sink; Stderr the text summary.
	Stdout, Stderr io.Writer
	// Metrics, when set, count fetches, pages and sink writes.
	Metrics *Metrics
	// Stop, when closed, stops starting work (the first signal); nil never.
	Stop <-chan struct{}
	// Signalled, when set, is the exit code of the signal that stopped
	// the run (130, 143), or 0: the run history records it.
	Signalled func() int
}

// exitCode is the code the run ends with, signals included.
func (e *Env) exitCode(err error) int {
	if e.Signalled != nil {
		if c := e.Signalled(); c != 0 {
			return c
		}
	}
	return exitcode.Of(err)
}

// untilStop is ctx, also ended by the first signal (Env.Stop): for waits
// that start nothing and may be given up at once, such as a sink that does
// not answer at start.
func (e *Env) untilStop(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if e.Stop != nil {
		go func() {
			select {
			case <-e.Stop:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return ctx, cancel
}

func (e *Env) log() *slog.Logger {
	if e.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return e.Log
}

// ErrPagesFailed: the run finished, but some pages failed (exit 3); the
// next run retries them. errors.Is tells it.
var ErrPagesFailed = errors.New("pages failed")

type pagesFailed struct{ n int64 }

func (e pagesFailed) Error() string {
	if e.n == 1 {
		return "1 page failed; the next run retries it"
	}
	return fmt.Sprintf("%d pages failed; the next run retries them", e.n)
}
func (e pagesFailed) Is(target error) bool { return target == ErrPagesFailed }

// failedPages is the error of a run whose n pages failed (exit 3).
func failedPages(n int64) error { return exitcode.IncompleteError(pagesFailed{n}) }

// ErrQuarantined: the run finished, but a sink refused records for their
// content; they are in the quarantine (exit 3). errors.Is tells it.
var ErrQuarantined = errors.New("records quarantined")

type quarantined struct {
	n    int64
	path string
}

func (e quarantined) Error() string {
	return fmt.Sprintf("%d records refused by a sink are kept in the quarantine %s: crawl quarantine list shows them, crawl quarantine retry delivers them again", e.n, e.path)
}
func (e quarantined) Is(target error) bool { return target == ErrQuarantined }

// quarantinedRecords is the error of a run that left n records in the
// quarantine at path (exit 3).
// heldRecords says that n records were held back for their findings
// (quality.hold), in the quarantine at path.
func heldRecords(n int64, path string) error {
	return fmt.Errorf("%d %s held back, not delivered: the parser has a finding on them (quality.hold); they are in the quarantine %s with their pages: crawl quarantine list shows them, and after a parser fix crawl quarantine retry --reparse delivers them (docs/operations.md#exit-4)", n, plural(n, "record", "records"), path)
}

func quarantinedRecords(n int64, path string) error {
	return exitcode.IncompleteError(quarantined{n, path})
}

// NewRunID names a run: its start time (ids sort by it) and 8 random hex
// digits, so two runs never share an id, even in the same second (a
// nightly run must not take the previous run's papers for its own).
func NewRunID(now time.Time) string {
	var b [4]byte
	rand.Read(b[:])
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// plural is one or many, for n.
func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
