package main

import (
	"bytes"
	"log/slog"
	"testing"
)

// A warning logged while a progress bar is drawn clears the bar's line
// first: it never lands on the bar's line.
func TestWarningClearsTheProgressBar(t *testing.T) {
	var out bytes.Buffer
	n := &notices{Writer: &out}
	bar := barWriter(n)
	log := slog.New(slog.NewTextHandler(n, nil))
	bar.Write([]byte("\r pages 3/10 [===>    ]"))
	log.Warn("host slow")
	log.Warn("host slow again")
	bar.Write([]byte("\r pages 4/10 [====>   ]"))
	got := out.String()
	want := "\r pages 3/10 [===>    ]\r\x1b[Ktime="
	if len(got) < len(want) || got[:len(want)] != want {
		t.Fatalf("the warning is not on a cleared line: %q", got)
	}
	if bytes.Count(out.Bytes(), []byte("\x1b[K")) != 1 {
		t.Errorf("the line is cleared once per bar drawn, not per line: %q", got)
	}
	var plain bytes.Buffer
	if barWriter(&plain) != &plain {
		t.Error("a writer that is not stderr's notices is the bar's as it is")
	}
}
