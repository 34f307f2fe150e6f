package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/textsafe"
	"github.com/litcrawl/litcrawl/sink"
)

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

// say writes one line on w: text as it is, or with --log-format json (read
// from the command line before the command runs, so that every line on
// stderr is one JSON object, not only the logger's: notices) one JSON
// object with text as its msg and attrs as its fields.
//
// The text is made safe for a terminal (textsafe.Lines): a message may
// quote outside text (a file name found in a directory, a server's reply).
func say(w io.Writer, level slog.Level, text string, attrs ...any) {
	text = textsafe.Lines(text)
	if jsonNotices(w) {
		slog.New(slog.NewJSONHandler(w, nil)).Log(context.Background(), level, text, attrs...)
		return
	}
	fmt.Fprintln(w, strings.TrimRight(text, "\n"))
}

// sayf is say with a formatted text and no fields.
func sayf(w io.Writer, level slog.Level, format string, a ...any) {
	say(w, level, fmt.Sprintf(format, a...))
}

// refuseAppend refuses JSONL sinks whose file already holds records: parse
// and replay write without a crawl state, so nothing would tell their
// records from what was there (crawls keep their exactly-once resume).
// --append allows it.
func refuseAppend(urls, flags []string) error {
	for i, u := range urls {
		if sink.Scheme(u) != "jsonl" {
			continue
		}
		p := strings.TrimPrefix(u, "jsonl:")
		if p == "-" || p == "" {
			continue
		}
		p = strings.Replace(p, "{date}", time.Now().UTC().Format("2006-01-02"), 1)
		if info, err := os.Stat(p); err == nil && info.Mode().IsRegular() && info.Size() > 0 {
			flag := flags[i]
			if flag == "" {
				flag = fmt.Sprintf("sinks[%d] %s (configuration)", i, u)
			}
			return exitcode.UsageError(fmt.Errorf("%s: %s already holds records: give --append to add to it, or another file", flag, p))
		}
	}
	return nil
}
