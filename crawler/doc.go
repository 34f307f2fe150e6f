// Package crawler fetches listing pages politely and resiliently and
// parses them: the Fetcher. It knows nothing of state stores, sinks or
// runs: the engine decides which pages to fetch and what to deliver, and
// drives a Fetcher that any number of runs may share.
//
// Files:
//   - errors.go: FetchError (URL, HTTP status, Retry-After) and the sentinel
//     causes (soft block, truncated, too large, off-site, robots), which of
//     them are worth retrying, and Cause (a retry's kind)
//   - policy.go: RetryPolicy (exponential backoff with full jitter,
//     Retry-After honoured and capped, cancellable waits)
//   - breaker.go: the per-host circuit breaker (open after N failures, one
//     probe after the cooldown)
//   - transport.go: the http.RoundTripper chain every fetch goes through:
//     allowed hosts only (redirects included), User-Agent, body cap that
//     fails loudly
//   - fetch.go: colly as the request executor, and judging a response
//     (status, Retry-After, truncated documents)
//   - limiter.go: per-host politeness (concurrency, delay + jitter,
//     slow-down after soft blocks, Crawl-delay), cancellable
//   - robots.go: robots.txt per host (temoto/robotstxt), fetched with
//     retries through the transport
//   - fetcher.go: Config, Fetcher (one page: robots, breaker, limiter,
//     pacer, retries, fetch, judge, parse), implementing the fetch port
//     (fetch.Request, fetch.Result, fetch.Failure)
//   - metrics.go: fetches by status class, breaker state
//
// Where colly serves and where it does not: colly executes the requests
// (one per call, synchronously, in the engine's bounded pool). Its
// robots.txt handling (one fetch, no retry, no size cap, no Crawl-delay, a
// 5xx read as "disallow all"), its MaxBodySize (silent truncation), its
// charset conversion, its visited marking (a failed URL would not be
// fetched again) and its LimitRule delays (not cancellable) are switched
// off or bypassed: the crawler does each itself.
package crawler
