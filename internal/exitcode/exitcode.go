// Package exitcode is the one vocabulary of outcomes a command ends with
// and the one map from errors to process exit codes: the codes, what each
// means (the help and the run history print them from Codes), the error
// kinds that carry a code (a usage error, an incomplete run, a quality
// alarm), and Of, which turns any error into its code.
package exitcode

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// The exit codes.
const (
	OK          = 0
	Fatal       = 1
	Usage       = 2
	Incomplete  = 3
	Quality     = 4
	Interrupted = 130
	Terminated  = 143
)

// Codes are the exit codes, each with a word or two (Short, as crawl runs
// shows it) and what it means (the help). The help, the README and crawl
// runs say the same.
var Codes = []struct {
	Code           int
	Short, Meaning string
}{
	{OK, "success", "success (a nightly walk cut short at nightly.max_pages included: the run says so, and the next nightly carries on)"},
	{Fatal, "fatal error", "fatal error: the configuration file (the message names the key), the state, a sink, a missing input, or a host that never answered"},
	{Usage, "usage error", "usage error: an unknown command or flag, a bad flag value or argument (the message names it)"},
	{Incomplete, "some pages failed, or records quarantined", "finished, but some pages failed, a sink refused records " +
		"(kept in the quarantine, see crawl quarantine), some inputs yielded nothing or some records carry warnings " +
		"(parse --strict), or the paper is not known (state find)"},
	{Quality, "quality alarm", "quality alarm: the parsed papers lack fields, or a field does not look like what it is " +
		"(the site's layout has probably changed; parse --strict too)"},
	{Interrupted, "interrupted", "interrupted (SIGINT)"},
	{Terminated, "terminated", "terminated (SIGTERM)"},
}

// Meaning says what code means in a few words ("unknown" for a code crawl
// never exits with).
func Meaning(code int) string {
	for _, c := range Codes {
		if c.Code == code {
			return c.Short
		}
	}
	return "unknown"
}

// Help lists the codes for a command's help, one a paragraph, wrapped.
func Help() string {
	var b strings.Builder
	b.WriteString("Exit codes:")
	for _, c := range Codes {
		fmt.Fprintf(&b, "\n  %3d ", c.Code)
		col := 6
		for _, w := range strings.Fields(c.Meaning) {
			if col+1+len(w) > 78 {
				b.WriteString("\n      ")
				col = 6
			}
			b.WriteString(" " + w)
			col += 1 + len(w)
		}
	}
	return b.String()
}

// Error is an error with the code its command exits with. Quiet: the
// command printed its answer, and nothing more is said.
type Error struct {
	Code  int
	Err   error
	Quiet bool
}

func (e *Error) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}
func (e *Error) Unwrap() error { return e.Err }

// UsageError is a mistake in what the caller asked for: a flag, an
// argument or a configuration value (exit 2). Its message names the key
// or flag, the value, and what is expected.
func UsageError(err error) error { return &Error{Code: Usage, Err: err} }

// Usagef is UsageError of a formatted message.
func Usagef(format string, a ...any) error { return UsageError(fmt.Errorf(format, a...)) }

// IncompleteError: the command finished, but not all of it (exit 3).
func IncompleteError(err error) error { return &Error{Code: Incomplete, Err: err} }

// QualityError is a quality alarm (exit 4).
func QualityError(err error) error { return &Error{Code: Quality, Err: err} }

// Quiet ends a command with code and nothing more on stderr.
func Quiet(code int) error { return &Error{Code: code, Quiet: true} }

// IsQuiet says whether err asks for nothing to be printed.
func IsQuiet(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Quiet
}

// Of is the exit code of the error a command ended with: the code it
// carries (the outermost), 130 for a cancelled context, 1 for any other
// error, 0 for none.
func Of(err error) int {
	var e *Error
	switch {
	case err == nil:
		return OK
	case errors.As(err, &e):
		return e.Code
	case errors.Is(err, context.Canceled):
		return Interrupted
	}
	return Fatal
}
