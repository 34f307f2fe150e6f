// Package sink delivers records: it knows nothing of pages or HTTP.
//
//   - sink.go: the Sink interface and its optional abilities (Committer,
//     Restorer, Describer), Open by URL, errors, Redact
//   - jsonl.go: JSON lines to a file (commit tokens, torn-line repair, {date}
//     files) or to standard output
//   - nats.go: NATS JetStream (msg-id dedupe, async publish with acks awaited)
//   - kafka.go: Kafka (idempotent producer, acks=all, key = record id)
//   - multi.go: fan-out to several sinks, acknowledged when all acknowledge
//   - retry.go: bounded retries with full-jitter backoff for retryable errors
//
// sinktest holds the conformance suite every implementation runs.
package sink
