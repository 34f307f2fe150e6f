// Package history reads and shows the run history: the runs a state
// directory recorded (state.Run), each as a RunView with its summary
// (RunReport, which a run writes to the history and to --report), and
// --report files read back. The report and crawl runs draw from it; it
// links no sink, broker or archive package.
//
// Files: history.go (History, RunView, Read), report.go (RunReport, the
// quality verdict), reportfile.go (--report files).
package history
