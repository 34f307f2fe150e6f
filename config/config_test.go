package config_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/config"
)

func write(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoad(t *testing.T) {
	c, err := config.Load(write(t, "sinks:\n  - jsonl:out/papers-{date}.jsonl\n  - nats://127.0.0.1:4222/papers.new?stream=PAPERS\n"), false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Sinks, []string{"jsonl:out/papers-{date}.jsonl", "nats://127.0.0.1:4222/papers.new?stream=PAPERS"}) {
		t.Errorf("sinks = %q", c.Sinks)
	}
	if c, err := config.Load(write(t, ""), false); err != nil || len(c.Sinks) != 0 {
		t.Errorf("empty file: %v %+v", err, c)
	}
}

func TestLoadErrorsNameTheKey(t *testing.T) {
	tests := map[string]string{
		"sinks:\n  - jsonl:a\n  - ftp://x\n":         "sinks[1]",
		"sinks:\n  - nats://h:1/s\n":                 "expected ?stream=NAME",
		"sink:\n  - jsonl:a\n":                       "field sink not found",
		"sinks: jsonl:a\n":                           "cannot unmarshal",
		"sinks:\n  - kafka://u:hunter2@h:1/t?zz=1\n": "REDACTED",
	}
	for text, want := range tests {
		_, err := config.Load(write(t, text), false)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want it to mention %q", text, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%q: the password leaks: %v", text, err)
		}
	}
}

func TestMissingFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	if c, err := config.Load(missing, true); err != nil || c == nil {
		t.Errorf("optional missing file: %v", err)
	}
	if _, err := config.Load(missing, false); err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Errorf("required missing file: %v", err)
	}
}

// The shipped config.yaml loads.
func TestShippedConfig(t *testing.T) {
	if _, err := config.Load("../config.yaml", false); err != nil {
		t.Fatal(err)
	}
}
