// Package crawler fetches listing pages politely and resiliently. It knows
// nothing of JSONL or brokers: pages go through the parser, records go to a
// sink.Sink, and a page is committed to the state store only after every
// sink acknowledged its records.
//
// Files:
//   - errors.go: FetchError (URL, HTTP status, Retry-After) and the sentinel
//     causes (soft block, truncated, too large, off-site, robots), and which
//     of them are worth retrying
//   - policy.go: RetryPolicy (exponential backoff with full jitter,
//     Retry-After honoured and capped, cancellable waits)
//   - breaker.go: the per-host circuit breaker (open after N failures, one
//     probe after the cooldown)
//   - transport.go: the http.RoundTripper chain every fetch goes through:
//     allowed hosts only (redirects included), User-Agent, body cap that
//     fails loudly
//
// The crawl loop (backfill, nightly) is built on these with colly in the
// next steps of issue 4; colly's own robots handling, body cap, charset
// conversion, visited marking and uncancellable delays are not used, for
// the reasons the issue lists.
package crawler
