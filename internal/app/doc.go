// Package app is the application layer between the command line and the
// engine: it turns options into a running crawl and a result. It opens the
// state and the sinks (rolling the sinks back to the state's token),
// chooses the transport (live, recording an archive, or offline from one),
// builds the fetcher from the configuration, records the run history with
// its errors checked, applies the quality gate, writes the --report file
// and prints the summary. The local crawl (Crawl) and the fleet worker
// (Work) are one run session (session.go) each; a command is flags →
// options → an error that is its exit code (internal/exitcode).
//
// Files:
//   - app.go: Env (what every use case is given), the errors of a run's end
//     (ErrPagesFailed, ErrQuarantined), run ids
//   - session.go: the run session: what a run opens and how it ends
//     (verdict, the one rule of it: the run's error, the quality gate,
//     failed pages, records quarantined; the summary kept, printed and
//     written)
//   - crawl.go: Crawl, a local backfill or nightly run
//   - fleet.go: Work (a fleet worker's session), Enqueue, the fleet's view
//     (status, its runs)
//   - parts.go: the fetcher's configuration, the transport (live, recording
//     an archive, offline), the sinks opened and restored to the state
//   - summary.go: a run's summary (history.RunSummary), printed
//   - summaryfile.go: the --report file (the summary with its page log)
//   - offline.go: delivering pages a run does not fetch (parse, replay)
//     through the engine's step, with a ledger in memory or the crawl
//     state (replay --updates); Replay
//   - parse.go: Parse (crawl parse)
//   - output.go: the check that an output file is a file of its own
//   - quarantine.go: RetryQuarantine (crawl quarantine retry)
//   - held.go: RetryHeld (crawl quarantine retry --reparse: the records the
//     quality gate held back, their pages parsed again)
//   - rebuild.go: Rebuild (crawl state rebuild)
//   - metrics.go: the Prometheus metrics of a run
package app
