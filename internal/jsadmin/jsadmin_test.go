package jsadmin

import (
	"strings"
	"testing"
)

func TestVersions(t *testing.T) {
	for _, tt := range []struct {
		a, b  string
		older bool
	}{
		{"2.9.10", "2.9.10", false},
		{"2.9.9", "2.9.10", true},
		{"2.10.0", "2.9.10", false},
		{"v2.15.2", "2.9.10", false},
		{"2.9.10-beta.1", "2.9.10", false},
		{"1.4.1", "2.9.10", true},
		{"", "2.9.10", true},
	} {
		if got := Older(tt.a, tt.b); got != tt.older {
			t.Errorf("Older(%q, %q) = %v", tt.a, tt.b, got)
		}
	}
	if err := CheckVersion("2.8.4", MinServerVersion); err == nil || !strings.Contains(err.Error(), "2.8.4") || !strings.Contains(err.Error(), "2.9.10") {
		t.Errorf("CheckVersion: %v", err)
	}
}
