// Package history reads and shows the run history: the runs a state
// directory recorded (state.Run), each as a RunView with its summary
// (RunSummary, which a run writes to the history and to its --report
// file), and --report files read back. RunView is the one run every
// reader of the history gets: crawl runs, crawl runs show, the report.
// The report and crawl runs draw from it; it links no sink driver,
// broker client or archive reader.
//
// Files:
//   - history.go: History, RunView, Read
//   - summary.go: Kind, RunSummary, the quality verdict of a summary
//   - summaryfile.go: --report files read back (SummaryFile)
//   - failures.go: failed pages grouped by how they failed (GroupFailures),
//     for the summary and runs show
package history
