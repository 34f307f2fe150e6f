// Package app is the application layer between the command line and the
// engine: it turns options into a running crawl and a result. It opens the
// state and the sinks (rolling the sinks back to the state's token),
// chooses the transport (live, recording an archive, or offline from one),
// builds the fetcher from the configuration, records the run history with
// its errors checked, applies the quality gate, writes the run report and
// prints the summary. The local crawl (Crawl) and the fleet worker (Work)
// share all of it; a command is flags → options → an exit code.
//
// Files: app.go (Env, errors), crawl.go (Crawl), fleet.go (Work, Enqueue,
// Status), parts.go (fetcher, transport, sinks), quality.go (the gate),
// report.go (--report), summary.go (the summary, text or JSON), metrics.go.
package app
