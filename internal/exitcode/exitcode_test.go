package exitcode_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/internal/exitcode"
)

func TestOf(t *testing.T) {
	base := errors.New("boom")
	for _, tt := range []struct {
		err  error
		want int
	}{
		{nil, exitcode.OK},
		{base, exitcode.Fatal},
		{exitcode.Usagef("--pages %q: expected A-B", "x"), exitcode.Usage},
		{fmt.Errorf("wrapped: %w", exitcode.UsageError(base)), exitcode.Usage},
		{exitcode.IncompleteError(base), exitcode.Incomplete},
		{exitcode.QualityError(base), exitcode.Quality},
		{fmt.Errorf("stopping: %w", context.Canceled), exitcode.Interrupted},
		{exitcode.Quiet(exitcode.Incomplete), exitcode.Incomplete},
		// The outermost code wins: a usage error about a quality run.
		{exitcode.UsageError(exitcode.QualityError(base)), exitcode.Usage},
	} {
		if got := exitcode.Of(tt.err); got != tt.want {
			t.Errorf("Of(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
	if err := exitcode.IncompleteError(base); !errors.Is(err, base) || err.Error() != "boom" {
		t.Errorf("the error is not kept: %v", err)
	}
	if !exitcode.IsQuiet(exitcode.Quiet(3)) || exitcode.IsQuiet(exitcode.IncompleteError(base)) {
		t.Error("IsQuiet")
	}
}

// TestOneTable: the help and the README list every code of the table,
// with the same meaning words, and nothing else.
func TestOneTable(t *testing.T) {
	help := exitcode.Help()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "### Exit codes")
	section, _, _ = strings.Cut(section, "\n## ")
	rows := regexp.MustCompile(`(?m)^\| (\d+) \|`).FindAllStringSubmatch(section, -1)
	var inReadme []string
	for _, r := range rows {
		inReadme = append(inReadme, r[1])
	}
	var want []string
	for _, c := range exitcode.Codes {
		want = append(want, fmt.Sprint(c.Code))
		if !strings.Contains(strings.Join(strings.Fields(help), " "), c.Meaning) {
			t.Errorf("the help does not say what %d means (%q):\n%s", c.Code, c.Meaning, help)
		}
		if exitcode.Meaning(c.Code) != c.Short {
			t.Errorf("Meaning(%d) = %q", c.Code, exitcode.Meaning(c.Code))
		}
	}
	if strings.Join(inReadme, " ") != strings.Join(want, " ") {
		t.Errorf("README's exit codes %v, the table's %v", inReadme, want)
	}
	if exitcode.Meaning(77) != "unknown" {
		t.Error("Meaning of a code never used")
	}
}
