// Command crawl fetches, parses and delivers the "latest literature" listings
// of scholarly journals. Run "crawl --help" for the commands.
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"regexp"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/litcrawl/litcrawl/internal/app"
	"github.com/litcrawl/litcrawl/internal/config"
	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/textsafe"
	"github.com/litcrawl/litcrawl/sink"
)

// gcPercent is the crawl's default GOGC. Its live heap is small (about
// 10 MB: the pages in flight and the commit queue) and it allocates about
// 450 KB a page, so with Go's default of 100 it collects about every 15
// pages. At 200, a backfill measured about 20 % less CPU for about 6 MB
// more peak RSS, still flat with the length of the crawl. A GOGC set in the
// environment wins.
const gcPercent = 200

// limitMemory sets the crawl's soft memory limit (Go's GOMEMLIMIT) from its
// concurrency, unless GOMEMLIMIT is set: 14 MiB plus 2 MiB a request in
// flight, plus 6 MiB for the state's recent papers (4 MiB at most, see
// internal/state/recent.go, and their copy while they are merged): 28 MiB at
// concurrency 4. The live heap is the pages in flight
// and the commit queue, about 5 MB at concurrency 4; without a limit, the
// heap's peaks ride on whatever was live at the last collection, so the
// longer a crawl runs, the higher its highest peak (peak RSS 37 MB after
// 1,000 pages, 44 MB after 20,000). With it, 34.5 and 37 MB. The limit is
// soft: a crawl that needs more (very large pages) gets it, and the
// collector then runs more often, never with more than half the CPU.
func limitMemory(concurrency int) {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit((14 + 6 + 2*int64(concurrency)) << 20)
	}
}

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	// The first SIGINT/SIGTERM stops starting pages; the pages in flight
	// finish within shutdownTimeout, are delivered and committed, and the
	// sinks are closed. A second signal exits at once; the state stays
	// consistent (every commit is one transaction).
	sess := newSession(make(chan struct{}))
	ctx := context.WithValue(context.Background(), sessionKey{}, sess)
	stderr := &notices{Writer: os.Stderr, json: wantsJSON(os.Args[1:])}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		sess.signal.Store(&s)
		close(sess.stop) // before the message: whoever reads it knows the stop is in effect
		if sess.readOnly.Load() {
			// A command that only reads has nothing to finish: its
			// context ends now, and if a read does not let go at once,
			// the process does.
			time.AfterFunc(readOnlyGrace, func() { os.Exit(signalExitCode(s)) })
		} else if !sess.quietStop.Load() {
			sayf(stderr, slog.LevelWarn, "crawl: %v: stopping (pages in flight finish within shutdown_timeout); a second signal exits at once", s)
		}
		s = <-sigs
		os.Exit(signalExitCode(s))
	}()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// readOnlyGrace is how long a command that only reads may take to end
// after the first signal.
const readOnlyGrace = time.Second

func signalExitCode(s os.Signal) int {
	if s == syscall.SIGTERM {
		return exitcode.Terminated
	}
	return exitcode.Interrupted
}

// run executes the command line args and returns the process exit code.
// A panic that reaches it is exit 1 with one line saying what failed (not
// Go's exit 2, the usage code, with a trace).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	if _, ok := stderr.(*notices); !ok {
		stderr = &notices{Writer: stderr, json: wantsJSON(args)}
	}
	defer exitOnPanic(stderr, &code)
	sess := sessionOf(ctx)
	ctx = context.WithValue(ctx, sessionKey{}, sess)
	defer sess.end()
	root := newRootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	failed, err := root.ExecuteContextC(ctx)
	if failed == nil {
		failed = root
	}
	if err != nil && strings.HasPrefix(err.Error(), "unknown command ") {
		err = exitcode.UsageError(err) // cobra's own: a usage error like any other
	}
	if sig := sess.signal.Load(); sig != nil {
		if err != nil && !errors.Is(err, context.Canceled) {
			sayf(stderr, slog.LevelError, "crawl: %v", err)
		}
		return signalExitCode(*sig)
	}
	if err == nil {
		return exitcode.OK
	}
	if exitcode.IsQuiet(err) {
		return exitcode.Of(err)
	}
	code = exitcode.Of(err)
	if code == exitcode.Usage {
		hint := fmt.Sprintf("See '%s --help'.", failed.CommandPath())
		if jsonNotices(stderr) {
			say(stderr, slog.LevelError, "crawl: "+err.Error(), "exit", code, "hint", hint)
		} else {
			// (cobra's "Did you mean this?" indents its names with a tab)
			fmt.Fprintf(stderr, "crawl: %s\n%s\n", textsafe.Lines(strings.ReplaceAll(err.Error(), "\t", "    ")), hint)
		}
		return code
	}
	say(stderr, slog.LevelError, "crawl: "+err.Error(), "exit", code)
	return code
}

// buildVersion, when set at build time (go build -ldflags "-X
// main.buildVersion=v1.4.0"), is the version --version names.
var buildVersion string

// version is the version the binary was built as: -ldflags' when given,
// else the module's ("(devel)" in a checkout), with the commit, its date
// and whether the tree was modified when the build recorded them (go
// build in a git checkout does; go run does not).
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return cmp.Or(buildVersion, "(unknown)")
	}
	v := cmp.Or(buildVersion, info.Main.Version)
	var rev, at, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value[:min(len(s.Value), 12)]
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = ", modified"
			}
		}
	}
	if rev != "" {
		v += fmt.Sprintf(" (%s %s%s)", rev, at, dirty)
	} else if buildVersion == "" {
		v += " (no revision recorded: go build in a git checkout records it, unless GOFLAGS holds -buildvcs=false)"
	}
	return v + " " + info.GoVersion
}

// shortVersion is the version in one word, as a worker announces it to
// crawl status: the release ("v1.4.0"), or "devel-" and the revision a
// build in a git checkout records ("devel-0123abcd4567", "-modified"
// when the tree was), or "unknown".
func shortVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return cmp.Or(buildVersion, "unknown")
	}
	var rev string
	dirty := false
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value[:min(len(s.Value), 12)]
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = true
		}
	}
	return oneWordVersion(buildVersion, info.Main.Version, rev, dirty)
}

// pseudoVersion is a version Go stamps on a build of a revision with no
// tag (v0.0.0-20261206050711-7a78bbacf95b, "+dirty" when modified).
var pseudoVersion = regexp.MustCompile(`^v\d+\.\d+\.\d+-(?:[0-9A-Za-z.]*\.)?\d{14}-([0-9a-f]{12})(\+dirty)?$`)

// oneWordVersion is shortVersion's rule: the version set at build time,
// else the module's release, else "devel-" and the revision.
func oneWordVersion(build, module, rev string, dirty bool) string {
	if build != "" {
		return build
	}
	if m := pseudoVersion.FindStringSubmatch(module); m != nil {
		rev, dirty = m[1], dirty || m[2] != ""
		module = ""
	}
	if module != "" && module != "(devel)" {
		return module
	}
	if rev == "" {
		return "unknown"
	}
	if dirty {
		return "devel-" + rev + "-modified"
	}
	return "devel-" + rev
}

// exitOnPanic, deferred, turns a panic into exit 1 and one line on
// stderr; CRAWL_TRACE=1 adds the stack.
func exitOnPanic(stderr io.Writer, code *int) {
	p := recover()
	if p == nil {
		return
	}
	say(stderr, slog.LevelError, fmt.Sprintf("crawl: internal error: %v (CRAWL_TRACE=1 prints where)", p), "exit", exitcode.Fatal)
	if os.Getenv("CRAWL_TRACE") == "1" {
		stderr.Write(debug.Stack())
	}
	*code = exitcode.Fatal
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "crawl",
		Short: "Crawl, parse and deliver scholarly literature listings",
		Long: `crawl fetches the "latest literature" listing pages of scholarly journals,
splits each page into paper records and delivers them to sinks: JSON-lines
files or standard output, a PostgreSQL table, NATS JetStream, Kafka, or
Atom feeds a feed reader subscribes to.

` + exitcode.Help(),
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
	}
	root.SetVersionTemplate("crawl {{.Version}}\n")
	root.SetFlagErrorFunc(flagError)
	root.PersistentFlags().String("config", config.DefaultPath, "configuration `FILE`; the default one may be absent, one given must exist")
	root.PersistentFlags().String("log-format", "text", "log format on stderr: text or json")
	root.PersistentFlags().String("cpuprofile", "", "write a CPU profile of the command to this file (go tool pprof)")
	root.PersistentFlags().Var(&addrFlag{}, "metrics-addr", "serve Prometheus metrics (/metrics) on `HOST:PORT`, e.g. 127.0.0.1:9090")
	root.PersistentFlags().String("metrics-file", "", "at the end, write the metrics to this file in node_exporter's textfile format (atomically), for one-shot runs")
	root.PersistentFlags().Bool("pprof", false, "also serve Go's profiler (/debug/pprof) on --metrics-addr; /debug/pprof/cmdline is never served")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if isReadOnly(cmd) {
			sess := of(cmd)
			sess.readOnly.Store(true)
			ctx, cancel := stopOnSignal(cmd.Context(), 0)
			cmd.SetContext(ctx)
			sess.atEnd(cancel)
		}
		if err := noEmptyValues(cmd); err != nil {
			return err
		}
		if err := outputsNotSinks(cmd, commandSinks(cmd)); err != nil {
			return err
		}
		if path, _ := cmd.Flags().GetString("metrics-file"); path != "" {
			if err := app.PrepareOutputFile(path, stateDirFor(cmd)); err != nil {
				return exitcode.UsageError(fmt.Errorf("--metrics-file %s: %w", path, err))
			}
			errw := cmd.ErrOrStderr()
			sess := of(cmd)
			sess.atEnd(func() {
				if err := writeMetricsFile(sess.registry, path); err != nil {
					sayf(errw, slog.LevelError, "crawl: --metrics-file: %v", err)
				}
			})
		}
		withPprof, _ := cmd.Flags().GetBool("pprof")
		addr, _ := cmd.Flags().GetString("metrics-addr")
		if withPprof && addr == "" {
			return exitcode.UsageError(fmt.Errorf("--pprof serves on --metrics-addr: give --metrics-addr too"))
		}
		if addr != "" {
			at, stop, err := startMetrics(of(cmd).registry, addr, withPprof)
			if err != nil {
				return err
			}
			say(cmd.ErrOrStderr(), slog.LevelInfo, fmt.Sprintf("metrics on http://%s/metrics", at), "addr", at)
			of(cmd).atEnd(stop)
		}
		path, _ := cmd.Flags().GetString("cpuprofile")
		if path == "" {
			return nil
		}
		if err := app.PrepareOutputFile(path, stateDirFor(cmd)); err != nil {
			return exitcode.UsageError(fmt.Errorf("--cpuprofile %s: %w", path, err))
		}
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		of(cmd).atEnd(func() { pprof.StopCPUProfile(); f.Close() })
		return nil
	}
	root.AddCommand(newParseCmd(), newBackfillCmd(), newNightlyCmd(), newServeCmd(), newDemoCmd(), newReplayCmd(),
		newEnqueueCmd(), newWorkerCmd(), newStatusCmd(), newStateCmd(), newRunsCmd(), newReportCmd(), newSinkCmd(), newQuarantineCmd(), newConfigCmd(), newExportCmd())
	return root
}

// stateDirFor is the state directory the command works on (--state-dir,
// else the config's state_dir), so that no other output lands in it; ""
// when it cannot tell.
func stateDirFor(cmd *cobra.Command) string {
	if f := cmd.Flags().Lookup("state-dir"); f != nil && f.Value.String() != "" {
		return f.Value.String()
	}
	if cfg, err := loadConfig(cmd); err == nil {
		return cfg.StateDir
	}
	return ""
}

// loadConfig reads --config: the default path may be missing (defaults
// apply), a path given explicitly must exist.
func loadConfig(cmd *cobra.Command) (*config.Config, error) {
	f := cmd.Flags().Lookup("config")
	return config.Load(f.Value.String(), !f.Changed, sink.Registered{})
}

// newEnv loads the configuration and makes the logger the command's
// application layer works with.
func newEnv(cmd *cobra.Command) (*app.Env, error) {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return nil, err
	}
	log, err := newLogger(cmd)
	if err != nil {
		return nil, err
	}
	format, _ := cmd.Flags().GetString("log-format")
	sess := of(cmd)
	return &app.Env{Config: cfg, Log: log, JSON: format == "json", Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(),
		Metrics: sess.metrics, Stop: sess.stop, Signalled: sess.signalCode}, nil
}

// argsAtLeast is cobra.MinimumNArgs reporting a usage error.
func argsAtLeast(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return exitcode.UsageError(fmt.Errorf("%s: expected at least %d argument(s) (usage: %s), got %d", cmd.Name(), n, cmd.UseLine(), len(args)))
		}
		return nil
	}
}

// newLogger makes the slog logger --log-format asks for.
func newLogger(cmd *cobra.Command) (*slog.Logger, error) {
	f, _ := cmd.Flags().GetString("log-format")
	w := cmd.ErrOrStderr()
	switch f {
	case "text":
		// On a terminal the progress bar shows progress: only warnings
		// and errors are logged, so they do not break the bar.
		opts := &slog.HandlerOptions{}
		if terminal(w) {
			opts.Level = slog.LevelWarn
		}
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, nil)), nil
	}
	return nil, exitcode.UsageError(fmt.Errorf("--log-format %q: expected text or json", f))
}

// stopOnSignal returns a context that is cancelled d after the command's
// stop channel closes (d 0: at once), and a function to release it.
func stopOnSignal(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := sessionOf(ctx).stop
	if stop == nil {
		return ctx, cancel
	}
	go func() {
		select {
		case <-stop:
		case <-ctx.Done():
			return
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// checkWritableDir fails when the directory a file is to be written in
