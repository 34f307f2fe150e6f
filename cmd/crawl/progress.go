package main

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/litcrawl/litcrawl/fetch"
	"github.com/litcrawl/litcrawl/internal/engine"
)

// progressLogEvery is how often progress is logged when stderr is not a
// terminal.
const progressLogEvery = 10 * time.Second

// startProgress shows a run's progress while it goes on: on a terminal a
// progress bar (pages done of total, papers, retries, ETA; a spinner when
// the total is unknown), otherwise a log line every 10 seconds. total < 0
// means unknown. The returned function stops it.
func startProgress(w io.Writer, total int64, sum *engine.Summary, log *slog.Logger) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	if terminal(w) && !jsonNotices(w) { // JSON logs: no bar among the objects
		bar := progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(barWriter(w)), progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(total > 0),
			progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionClearOnFinish(),
			progressbar.OptionSpinnerType(14), progressbar.OptionSetDescription("pages"))
		go func() {
			defer close(finished)
			t := time.NewTicker(250 * time.Millisecond)
			defer t.Stop()
			for {
				bar.Describe(progressLine(sum))
				bar.Set64(sum.PagesSeen())
				select {
				case <-done:
					bar.Finish()
					return
				case <-t.C:
				}
			}
		}()
	} else {
		go func() {
			defer close(finished)
			t := time.NewTicker(progressLogEvery)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					var of any = total
					if total < 0 {
						of = "unknown" // an open range, a nightly walk
					}
					args := []any{"pages", sum.PagesSeen(), "of", of, "failed", sum.Failed.Load(),
						"papers_new", sum.PapersNew.Load(), "retries", sum.RetriesTotal()}
					msg := "progress"
					if wt, n, ok := sum.Waits.Longest(); ok {
						msg += "; " + waitText(wt, n, time.Now())
						args = append(args, "waiting_for", wt.Host, "waiting_cause", wt.Cause, "waiting_until", wt.Until.UTC().Format(time.RFC3339), "waits", n)
					}
					log.Info(msg, args...)
				}
			}
		}()
	}
	return func() {
		close(done)
		<-finished
	}
}

// progressLine is the bar's description, with the longest wait under way
// when there is one (a run that seems stalled says why).
func progressLine(s *engine.Summary) string {
	line := fmt.Sprintf("pages (%d new papers, %d retries, %d failed)", s.PapersNew.Load(), s.RetriesTotal(), s.Failed.Load())
	if w, n, ok := s.Waits.Longest(); ok {
		line += "; " + waitText(w, n, time.Now())
	}
	return line
}

// waitText says a wait: "waiting for HOST (cause) until 09:14:03, 1m52s
// more" (and how many other pages wait).
func waitText(w fetch.Wait, n int, now time.Time) string {
	t := fmt.Sprintf("waiting for %s (%s) until %s, %v more", w.Host, w.Cause, w.Until.Format(time.TimeOnly), w.Until.Sub(now).Round(time.Second))
	if n > 1 {
		t += fmt.Sprintf(" (%d pages waiting)", n)
	}
	return t
}
