package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
)

// jsonStderr is --log-format json, read from the command line before the
// command runs, so that every line the program writes on stderr (notices,
// errors, hints) is one JSON object, not only the logger's.
var jsonStderr atomic.Bool

// wantsJSON reports whether args ask for --log-format json.
func wantsJSON(args []string) bool {
	for i, a := range args {
		if a == "--" {
			break
		}
		if a == "--log-format=json" || a == "--log-format" && i+1 < len(args) && args[i+1] == "json" {
			return true
		}
	}
	return false
}

// say writes one line on w: text as it is, or with --log-format json one
// JSON object with text as its msg and attrs as its fields.
func say(w io.Writer, level slog.Level, text string, attrs ...any) {
	if jsonStderr.Load() {
		slog.New(slog.NewJSONHandler(w, nil)).Log(context.Background(), level, text, attrs...)
		return
	}
	fmt.Fprintln(w, strings.TrimRight(text, "\n"))
}

// sayf is say with a formatted text and no fields.
func sayf(w io.Writer, level slog.Level, format string, a ...any) {
	say(w, level, fmt.Sprintf(format, a...))
}
