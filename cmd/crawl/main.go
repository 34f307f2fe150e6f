// Command crawl fetches, parses and delivers the "latest literature" listings
// of scholarly journals. Run "crawl --help" for the commands.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/litcrawl/litcrawl/config"
)

// Exit codes; the README lists them.
const (
	exitOK          = 0
	exitFatal       = 1
	exitUsage       = 2
	exitIncomplete  = 3
	exitInterrupted = 130
)

// usageError marks a mistake in the command line (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// exitCodeError carries a specific exit code with its message.
type exitCodeError struct {
	code int
	err  error
}

func (e exitCodeError) Error() string { return e.err.Error() }
func (e exitCodeError) Unwrap() error { return e.err }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line args and returns the process exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "crawl: %v\n", err)
	var ue usageError
	var ce exitCodeError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "Run 'crawl --help' for usage.")
		return exitUsage
	case errors.As(err, &ce):
		return ce.code
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	}
	return exitFatal
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "crawl",
		Short: "Crawl, parse and deliver scholarly literature listings",
		Long: `crawl fetches the "latest literature" listing pages of scholarly journals,
splits each page into paper records and delivers them as JSON lines.

Exit codes: 0 success, 1 fatal error, 2 usage error, 3 finished with
inputs that yielded nothing or records with warnings (--strict),
130 interrupted.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.PersistentFlags().String("config", config.DefaultPath, "configuration file (may be absent when not given explicitly)")
	root.AddCommand(newParseCmd())
	return root
}

// loadConfig reads --config: the default path may be missing (defaults
// apply), a path given explicitly must exist.
func loadConfig(cmd *cobra.Command) (*config.Config, error) {
	f := cmd.Flags().Lookup("config")
	return config.Load(f.Value.String(), !f.Changed)
}

// argsAtLeast is cobra.MinimumNArgs reporting a usage error.
func argsAtLeast(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return usageError{fmt.Errorf("%s: needs at least %d argument(s), got %d", cmd.CommandPath(), n, len(args))}
		}
		return nil
	}
}
