// Package sink is the delivery core: it knows nothing of pages or HTTP,
// and links no broker client. The drivers live in packages of their own
// and register themselves by URL scheme when a program imports them
// (cmd/crawl imports all five):
//
//   - sink/jsonl: jsonl:PATH and - (standard output)
//   - sink/atom: atom:DIR (an Atom feed per journal, and an OPML list)
//   - sink/nats: nats://… and tls://… (NATS JetStream)
//   - sink/kafka: kafka://… (Kafka)
//   - sink/postgres: postgres://… and postgresql://… (a PostgreSQL table)
//
// Files of the core:
//
//   - sink.go: the Sink interface and its optional abilities (Committer,
//     Restorer, Describer, Unwrapper), errors, Options
//   - registry.go: Driver, Register, Open and CheckURL by URL scheme
//   - encode.go: Marshal, the one encoding of a record every sink sends
//   - gate.go: the open/closed state drivers share
//   - wrap.go: the one wrapper that forwards a sink's abilities
//   - multi.go: fan-out to several sinks, acknowledged when all acknowledge
//   - retry.go: bounded retries with full-jitter backoff for retryable errors
//   - observe.go: a Write observer (metrics)
//   - quarantine.go: what a sink refuses for a record's content
//     (ErrRefused, Refused) and the quarantine that keeps it (Quarantine,
//     Quarantined)
//
// sinkurl parses the broker drivers' URLs and query parameters; sinktest
// is the conformance suite every driver runs.
package sink
