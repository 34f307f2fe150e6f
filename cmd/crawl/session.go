package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/litcrawl/litcrawl/internal/app"
)

// session is one invocation of the command: what its parts share (the
// signal state, the metrics, what runs at the end), held by the command's
// context and never at package level, so that invocations run side by side
// (the CLI tests run in parallel).
type session struct {
	// stop is closed by the first SIGINT/SIGTERM (nil: never): work stops
	// starting; the context is cancelled only when the shutdown timeout
	// runs out (stopOnSignal).
	stop   chan struct{}
	signal atomic.Pointer[os.Signal] // the first signal received
	// quietStop: the first signal ends the command without the crawl's
	// "stopping" notice (crawl serve).
	quietStop atomic.Bool
	// readOnly: the command only reads (readOnlyCmd); the first signal
	// ends it at once, with no word about pages in flight.
	readOnly atomic.Bool
	// registry holds every metric of the invocation (--metrics-addr,
	// --metrics-file); metrics are the crawl's, registered in it.
	registry *prometheus.Registry
	metrics  *app.Metrics

	mu       sync.Mutex
	endFuncs []func()
}

type sessionKey struct{}

func newSession(stop chan struct{}) *session {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return &session{stop: stop, registry: r, metrics: app.NewMetrics(r)}
}

// sessionOf is the invocation ctx belongs to (a new one when none: a
// command run without run, as a test may).
func sessionOf(ctx context.Context) *session {
	if s, ok := ctx.Value(sessionKey{}).(*session); ok {
		return s
	}
	return newSession(nil)
}

// of is the session of cmd's invocation.
func of(cmd *cobra.Command) *session { return sessionOf(cmd.Context()) }

// atEnd runs f when the command has finished, whatever its outcome (the
// last one given first).
func (s *session) atEnd(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endFuncs = append(s.endFuncs, f)
}

func (s *session) end() {
	s.mu.Lock()
	fs := s.endFuncs
	s.endFuncs = nil
	s.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// signalCode is the exit code of the first signal received, or 0.
func (s *session) signalCode() int {
	if sig := s.signal.Load(); sig != nil {
		return signalExitCode(*sig)
	}
	return 0
}

// notices is stderr as the command writes it: with --log-format json,
// every line is one JSON object (say). While a progress bar is drawn on
// its last line (barWriter), a line written clears the bar first, so a
// warning never lands on the bar's line; the bar is drawn again under it.
type notices struct {
	io.Writer
	json bool

	mu       sync.Mutex
	barShown bool // the last line holds a progress bar
}

func (n *notices) Write(p []byte) (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.barShown {
		io.WriteString(n.Writer, "\r\x1b[K")
		n.barShown = false
	}
	return n.Writer.Write(p)
}

// barWriter is where a progress bar draws on w: under notices, it marks
// the last line as the bar's.
func barWriter(w io.Writer) io.Writer {
	if n, ok := w.(*notices); ok {
		return barLine{n}
	}
	return w
}

type barLine struct{ n *notices }

func (b barLine) Write(p []byte) (int, error) {
	b.n.mu.Lock()
	defer b.n.mu.Unlock()
	b.n.barShown = !bytes.HasSuffix(p, []byte("\n"))
	return b.n.Writer.Write(p)
}

// jsonNotices says whether w wants JSON lines.
func jsonNotices(w io.Writer) bool {
	n, ok := w.(*notices)
	return ok && n.json
}

// terminal says whether w is a terminal (under notices too).
func terminal(w io.Writer) bool {
	if n, ok := w.(*notices); ok {
		w = n.Writer
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// readOnlyKey marks a command that only reads (its annotation).
const readOnlyKey = "crawl/read-only"

// readOnlyCmd marks cmd as a command that only reads: status, runs,
// report, config show, quarantine list, state check and find. The first
// SIGINT/SIGTERM cancels its context and ends it with the signal's code,
// at once (within readOnlyGrace), and says nothing about pages in flight.
func readOnlyCmd(cmd *cobra.Command) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[readOnlyKey] = "yes"
	return cmd
}

// isReadOnly says whether cmd was marked with readOnlyCmd.
func isReadOnly(cmd *cobra.Command) bool { return cmd.Annotations[readOnlyKey] != "" }
