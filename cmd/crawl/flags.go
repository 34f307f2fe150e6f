package main

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/litcrawl/litcrawl/internal/config"
	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/redact"
	"github.com/litcrawl/litcrawl/internal/suggest"
	"github.com/litcrawl/litcrawl/sink"
)

// Typed flag values: a flag's value is checked where it enters, when the
// command line is parsed, and a bad one is a usage error naming the flag,
// the value and what is expected ("--replicas 6: expected 1 to 5"), as the
// configuration's errors name the key. Bounds that the configuration file
// shares are checked once more only as part of the configuration
// (config.Validate), which the flags are applied to.

// intIn is an int flag within [lo, hi].
type intIn struct {
	v      *int
	lo, hi int
	what   string // what is counted, for the message ("" none)
}

func newIntIn(v *int, def, lo, hi int, what string) *intIn {
	*v = def
	return &intIn{v: v, lo: lo, hi: hi, what: what}
}

func (f *intIn) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < f.lo || n > f.hi {
		return fmt.Errorf("expected %d to %d%s", f.lo, f.hi, strings.TrimRight(" "+f.what, " "))
	}
	*f.v = n
	return nil
}
func (f *intIn) String() string { return strconv.Itoa(*f.v) }
func (f *intIn) Type() string   { return "int" }

// durationFlag is a duration flag of at least zero, or (positive) above it.
type durationFlag struct {
	v        *time.Duration
	positive bool
	example  string
	lo, hi   time.Duration // bounds, when hi > 0
}

func newDuration(v *time.Duration, def time.Duration, positive bool, example string) *durationFlag {
	*v = def
	return &durationFlag{v: v, positive: positive, example: example}
}

func (f *durationFlag) Set(s string) error {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	switch {
	case err != nil:
		return fmt.Errorf("expected a duration such as %s", f.example)
	case f.positive && d <= 0:
		return fmt.Errorf("expected a positive duration such as %s", f.example)
	case f.hi > 0 && (d < f.lo || d > f.hi):
		return fmt.Errorf("expected a duration from %v to %v", f.lo, f.hi)
	case d < 0:
		return fmt.Errorf("expected 0 or more, such as %s", f.example)
	}
	*f.v = d
	return nil
}

// within bounds the flag's values.
func (f *durationFlag) within(lo, hi time.Duration) *durationFlag {
	f.lo, f.hi = lo, hi
	return f
}

func (f *durationFlag) String() string { return f.v.String() }
func (f *durationFlag) Type() string   { return "duration" }

// addrFlag is a listening address, HOST:PORT (an empty host: every
// interface; port 0: any free port).
type addrFlag struct{ v string }

func (f *addrFlag) Set(s string) error {
	_, port, err := net.SplitHostPort(s)
	if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 0 || n > 65535 {
		return fmt.Errorf("expected HOST:PORT with a port from 0 to 65535, such as 127.0.0.1:9090")
	}
	f.v = s
	return nil
}
func (f *addrFlag) String() string { return f.v }
func (f *addrFlag) Type() string   { return "string" } // read with GetString

// journalsFlag is a repeatable --journal: positive ids, comma-separated
// or one a flag (config.CheckJournal).
type journalsFlag struct {
	v       *[]int64
	changed bool
}

func (f *journalsFlag) Set(s string) error {
	if !f.changed {
		*f.v, f.changed = nil, true
	}
	for _, part := range strings.Split(s, ",") {
		j, err := strconv.ParseInt(strings.TrimSpace(part), 10, 64)
		if err != nil {
			return fmt.Errorf("expected a positive journal id")
		}
		if err := config.CheckJournal(j); err != nil {
			return err
		}
		if !slices.Contains(*f.v, j) { // a journal given twice is crawled once
			*f.v = append(*f.v, j)
		}
	}
	return nil
}

func (f *journalsFlag) String() string {
	parts := make([]string, len(*f.v))
	for i, j := range *f.v {
		parts[i] = strconv.FormatInt(j, 10)
	}
	return "[" + strings.Join(parts, ",") + "]"
}
func (f *journalsFlag) Type() string { return "int64Slice" }

// journalsVar registers --journal.
func journalsVar(fl *pflag.FlagSet, v *[]int64, usage string) {
	fl.Var(&journalsFlag{v: v}, "journal", usage)
	fl.Lookup("journal").DefValue = ""
}

// pflagInvalid is pflag's message for a value its flag refused.
var pflagInvalid = regexp.MustCompile(`^invalid argument "(.*)" for "(?:-\w, )?(--[\w-]+)" flag: (.*)$`)

// flagError is the usage error of a flag the command line got wrong, in
// the project's words: "--replicas 6: expected 1 to 5".
func flagError(cmd *cobra.Command, err error) error {
	if typed, ok := strings.CutPrefix(err.Error(), "unknown flag: --"); ok && cmd != nil {
		var names []string
		cmd.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
		cmd.InheritedFlags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
		if n := suggest.Nearest(typed, names...); n != "" {
			return exitcode.Usagef("unknown flag: --%s; did you mean --%s?", typed, n)
		}
	}
	if m := pflagInvalid.FindStringSubmatch(err.Error()); m != nil {
		why := m[3]
		if strings.HasPrefix(why, "strconv.") { // pflag's own number flags
			why = "expected a whole number"
		}
		return exitcode.Usagef("%s %s: %s", m[2], m[1], why)
	}
	return exitcode.UsageError(err)
}

// typedVar registers a typed flag value; a zero default is not shown in
// the help (as pflag does for its own types).
func typedVar(fl *pflag.FlagSet, v pflag.Value, name, usage string) {
	fl.Var(v, name, usage)
	if d := fl.Lookup(name).DefValue; d == "0" || d == "0s" {
		fl.Lookup(name).DefValue = ""
	}
}

// sinkFlags say where records go, for every command that delivers: --sink
// (repeatable) and -o FILE (jsonl:FILE), replacing the configuration's
// sinks; and for those that keep no state (parse, replay), --append.
type sinkFlags struct {
	urls      []string
	out       string
	appendOK  bool
	stateless bool
}

func (s *sinkFlags) register(fl *pflag.FlagSet, stateless bool, defaults string) {
	s.stateless = stateless
	fl.StringArrayVar(&s.urls, "sink", nil, "deliver records to this sink `URL` (repeat to fan out): jsonl:PATH, - (stdout), postgres://USER@HOST:PORT/DB?table=papers, "+
		"nats://HOST:PORT/SUBJECT?stream=NAME, kafka://HOST:PORT/TOPIC, atom:DIR (an Atom feed per journal); "+defaults)
	fl.StringVarP(&s.out, "output", "o", "", "write the records to the JSONL file `FILE` (short for --sink jsonl:FILE)")
	if stateless {
		fl.BoolVar(&s.appendOK, "append", false, "add to a JSONL sink file that already holds records (refused otherwise)")
	}
}

// given says whether --sink, -o or --append was given.
func (s *sinkFlags) given(cmd *cobra.Command) bool {
	return cmd.Flags().Changed("sink") || s.out != "" || s.appendOK
}

// replaces says --sink or -o was given: they replace every sink of the
// file, a journal's too.
func (s *sinkFlags) replaces(cmd *cobra.Command) bool {
	return cmd.Flags().Changed("sink") || s.out != ""
}

// journalSinks are the configured journals' own sinks, unless --sink or
// -o replace every sink; a stateless command refuses a JSONL file of
// theirs that holds records, as resolve does.
func (s *sinkFlags) journalSinks(cmd *cobra.Command, cfg *config.Config) (map[int64][]string, error) {
	if s.replaces(cmd) {
		return nil, nil
	}
	js := cfg.JournalSinks()
	if s.stateless && !s.appendOK {
		for _, j := range slices.Sorted(maps.Keys(js)) {
			names := make([]string, len(js[j]))
			for i, u := range js[j] {
				names[i] = fmt.Sprintf("journal %d's sinks[%d] %s (configuration)", j, i, redact.URL(u))
			}
			if err := refuseAppend(js[j], names); err != nil {
				return nil, err
			}
		}
	}
	return js, nil
}

// resolve is the sink URLs: the flags', each checked and named by the flag
// that gave it, else the configured ones (checked with the file). A
// stateless command refuses a JSONL file that holds records, unless
// --append (refuseAppend).
func (s *sinkFlags) resolve(cmd *cobra.Command, configured []string) ([]string, error) {
	urls, flags := configured, make([]string, len(configured))
	if s.replaces(cmd) {
		urls, flags = slices.Clone(s.urls), make([]string, 0, len(s.urls)+1)
		for _, u := range s.urls {
			if err := sink.CheckURL(u); err != nil {
				var ue *sink.URLError
				if errors.As(err, &ue) {
					return nil, exitcode.Usagef("--sink %s: %s", ue.URL, ue.Reason)
				}
				return nil, exitcode.Usagef("--sink: %w", err)
			}
			if slices.ContainsFunc(urls[:len(flags)], func(o string) bool { return sink.Same(o) == sink.Same(u) }) {
				return nil, exitcode.Usagef("--sink %s: given twice (the same destination): expected each sink once", redact.URL(u))
			}
			flags = append(flags, "--sink "+redact.URL(u))
		}
		if s.out != "" {
			urls, flags = append(urls, "jsonl:"+s.out), append(flags, "-o "+s.out)
		}
	}
	if s.stateless && !s.appendOK {
		if err := refuseAppend(urls, flags); err != nil {
			return nil, err
		}
	}
	return urls, nil
}

// noEmptyValues refuses a path or URL flag given as "" (an unset shell
// variable): --offline "" would crawl the live site, --state-dir "" use
// the default state.
func noEmptyValues(cmd *cobra.Command) error {
	var err error
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if err == nil && f.Value.Type() == "string" && strings.TrimSpace(f.Value.String()) == "" {
			err = exitcode.Usagef("--%s \"\": expected a value (an unset variable?)", f.Name)
		}
	})
	return err
}

// stateDirVar registers --state-dir, for every command that reads or
// writes a crawl state.
func stateDirVar(fl *pflag.FlagSet, dir *string) {
	fl.StringVar(dir, "state-dir", "", "crawl state directory (default: state_dir from the config)")
}

// listen opens the TCP address a flag gave; an address in use is said with
// the flag to change (flag "--addr": "crawl serve --addr").
func listen(flag, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("%s %s: the address is in use (another process listens there): give another with %s (port 0 picks a free one)", flag, addr, flag)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, addr, err)
	}
	return ln, nil
}
