package config_test

import (
	"os"
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/internal/config"
)

// TestReferenceTableIsTheRules: the table of keys in docs/reference.md is
// the one Validate checks by (config.Reference), row for row, so a key,
// a default or a meaning changed in one place shows in both.
func TestReferenceTableIsTheRules(t *testing.T) {
	b, err := os.ReadFile("../../docs/reference.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	head := "| key | default | meaning |\n"
	i := strings.Index(doc, head)
	if i < 0 {
		t.Fatal("docs/reference.md has no table of configuration keys")
	}
	j := strings.Index(doc[i:], "\n\n")
	if j < 0 {
		j = len(doc) - i
	}
	if got, want := doc[i:i+j+1], config.Reference(); got != want {
		t.Errorf("docs/reference.md's table of keys is not config.Reference(); put this in its place:\n%s", want)
	}
}
