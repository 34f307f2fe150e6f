// Package engine is the one engine every crawl mode drives: a local
// backfill, a local nightly run and a fleet worker's job all fetch a page
// through the fetch port (fetch.Fetcher), deliver it through the same step, and count it
// in the same summary.
//
// Files:
//   - deliver.go: Deliver, the one delivery step (look up → decide → sink
//     write → ledger commit), and decide, the one rule of what a page
//     delivers
//   - revise.go: the revision rule: a paper's print (fingerprint), and
//     judge, which says whether a later read of it is the same, its next
//     revision, or poorer than what was delivered
//   - hold.go: holding back the records the parser has a finding on
//     (quality.hold), with their page's bytes, in the quarantine
//   - committer.go: the group committer (pages that queue up while a commit
//     runs go out in one sink write and one ledger commit; a backfill's
//     pages wait up to 10 ms for more)
//   - run.go: Run (one run over shared parts: fetcher, ledger, sink) and
//     Page, the step for one page
//   - backfill.go: a range of pages, committed in the background
//   - walk.go: Walk, the nightly walk as a state machine (its invariant,
//     its phases and their transitions: the table at the top), Next, the
//     one walk rule of local runs and the fleet alike, and the audit
//   - nightly.go: Nightly (a local run's walks), StepWalk (what follows a
//     step, for local runs and the fleet), StartWalk, FirstCrawl
//   - summary.go: what a run did (pages, papers, retries, quality, a page
//     log)
//   - metrics.go: pages by result, retries by cause
//
// The engine knows the ledger only through its port (package ledger): the
// bbolt store on one machine, the JetStream key-value ledger in a fleet.
package engine
