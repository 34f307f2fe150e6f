// Package fetch is the port between the engine and what fetches listing
// pages: a Request for one page, its parsed Result, the Fetcher that makes
// one from the other, and the two outcomes the engine branches on. The
// crawler implements it over HTTP (colly, robots, breaker, retries); tests
// implement it in memory. It holds no code that fetches, so a package that
// drives fetches links no HTTP client.
package fetch

import (
	"context"
	"errors"

	"github.com/litcrawl/litcrawl/parser"
)

// Fetcher fetches and parses listing pages. Fetch blocks until the page
// is parsed, has failed for good (after the fetcher's own retries), or ctx
// ends; it is safe for concurrent use. Its error is ErrEndOfListing (a
// page past the last), one wrapping ErrUnreachable (the host never
// answered: a wrong base URL), ctx's error, or another failure of the page.
type Fetcher interface {
	Fetch(ctx context.Context, r Request) (Result, error)
}

// Request asks for one listing page.
type Request struct {
	Journal int64
	Page    int
	// RunID is recorded in the records' source.
	RunID string
	// OnTryFailed, when set, is told of every try that failed with a
	// retryable error (the last one included), with the try's cause
	// (network, http-5xx, http-429, truncated, soft-block, ...): summaries
	// and metrics count retries by cause with it.
	OnTryFailed func(cause string)
}

// Result is a fetched and parsed listing page.
type Result struct {
	Page  *parser.Page // nil when the fetch failed
	Tries int          // tries made
	URL   string
	// Body is what Page was parsed from: a record held back for what the
	// parser found in it keeps its page's bytes, to be parsed again.
	Body []byte
}

var (
	// ErrEndOfListing: the page is past the journal's last page.
	ErrEndOfListing = errors.New("past the end of the listing")
	// ErrUnreachable: every try of a page failed to reach a host that has
	// not answered once (no connection, no such host): a wrong base URL
	// rather than a host that went down. Permanent; a local run stops on it.
	ErrUnreachable = errors.New("the host has not answered once in this run (no connection, or no such host): check the base URL")
)

// Failure is an error of Fetch that judged whether another try may
// succeed (the HTTP fetcher's *crawler.FetchError is one): a fleet
// worker hands a page back for another try when the failure says so, or
// when the error is not a fetch's failure at all (the worker's own).
// Retryability itself is said one way, backoff's: a Failure that may
// succeed again also answers errors.Is(err, backoff.ErrRetryable).
type Failure interface {
	error
	Retryable() bool
}
