package engine

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// A host that goes down fails every page left the same way: the log
// says it twice (the first page, and that more fail so), not once a
// page; a failure of another kind is logged again.
func TestAFailureRepeatedIsLoggedOnce(t *testing.T) {
	var buf bytes.Buffer
	r := &Run{log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	for p := 1; p <= 200; p++ {
		url := fmt.Sprintf("http://h/literature_d1_%d.htm", p)
		r.logFailure(url, fmt.Errorf("fetch %s: host is down", url))
	}
	r.logFailure("http://h/literature_d1_201.htm", errors.New("fetch http://h/literature_d1_201.htm: HTTP 404"))
	if n := strings.Count(buf.String(), "level=WARN"); n != 3 {
		t.Errorf("%d warnings for 200 pages failing one way and one another, want 3:\n%s", n, buf.String())
	}
	if !strings.Contains(buf.String(), "more pages fail the same way") || !strings.Contains(buf.String(), "HTTP 404") {
		t.Errorf("log:\n%s", buf.String())
	}
}
