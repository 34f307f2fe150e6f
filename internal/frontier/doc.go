// Package frontier shares a crawl between many workers on many machines
// through NATS JetStream (nats-server 2.9.10 or newer, a single server or a
// cluster):
//
//   - jobs (one listing page each) live in a work-queue stream, a subject
//     per page (litcrawl.jobs.<journal>.<page>) and one per journal's
//     nightly walk (litcrawl.jobs.<journal>.walk); a job is published only
//     while its subject holds no message (an expected last subject sequence
//     of 0), so enqueueing a page again while its job is pending or in
//     flight adds nothing, and a journal has one walk at a time. Workers
//     take jobs through a durable pull consumer, which redelivers a job
//     whose worker died;
//   - a job that keeps failing goes to the dead-letter stream
//     (litcrawl.dead.<journal>) with its last error, then is terminated,
//     which removes it from the work queue on every supported server
//     (JetStream has no dead-letter queue; the max-deliveries advisory
//     covers a worker that died on the last try);
//   - the papers already delivered are keys of a key-value bucket: Ledger,
//     the engine's ledger port for a fleet (not atomic across keys: at
//     least once, keyed by paper id);
//   - a nightly walk is a chain of page jobs: the worker that did page p
//     asks the engine's stop rule whether the walk goes on, and replaces
//     its job by page p+1's on the walk subject;
//   - politeness is fleet-wide: a key-value entry per host holds the
//     earliest start of the next request, advanced with compare-and-set
//     (Pacer).
//
// Files:
//   - frontier.go: Connect, streams and buckets, replicas, the server version
//   - jobs.go: Job, Enqueue, the walk's next job
//   - validate.go: a job's bounds (Job.Validate), a run id's shape
//   - ledger.go: the fleet's ledger (and its walk states)
//   - worker.go: Worker, a driver of engine.Run
//   - workers.go: the workers bucket (each worker's word: state, jobs held,
//     jobs done) and the runs stream
//   - view.go: the fleet's view read by subject, without a consumer, bounded
//   - status.go: Status, DeadLetters
//   - pacer.go: Pacer, fleet-wide politeness
package frontier
