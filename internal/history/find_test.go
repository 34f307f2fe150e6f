package history

import (
	"strings"
	"testing"
)

// A run is found by its id, a unique prefix of it, "latest", or its
// number in the # column (1 the oldest; "#3" or "3").
func TestFind(t *testing.T) {
	h := &History{Runs: []RunView{{ID: "20261206T154226Z-c"}, {ID: "20261205T030000Z-b"}, {ID: "20261204T030000Z-a"}}} // newest first
	for _, tt := range []struct{ id, want, err string }{
		{"latest", "20261206T154226Z-c", ""},
		{"1", "20261204T030000Z-a", ""},
		{"#1", "20261204T030000Z-a", ""},
		{"#3", "20261206T154226Z-c", ""},
		{"2", "20261205T030000Z-b", ""},
		{"20261205", "20261205T030000Z-b", ""},
		{"20261204T030000Z-a", "20261204T030000Z-a", ""},
		{"4", "", "run #4: the history numbers its runs #1 to #3"},
		{"9999", "", "no run has this number"},
		{"#4", "", "run #4: the history numbers its runs #1 to #3"},
		{"#0", "", "run #0"},
		{"2026120", "", "runs start with it"},
		{"99", "", "run #99: the history numbers its runs #1 to #3"},
		{"2", "20261205T030000Z-b", ""},
		{"2026", "", "runs start with it"},
		{"20261206", "20261206T154226Z-c", ""},
		{"19990101", "", `run "19990101": no such run`},
		{"x", "", `run "x": no such run`},
		{" ", "", "run id: empty"},
	} {
		v, err := h.Find(tt.id)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Find(%q) = %s, %v; want an error %q", tt.id, v.ID, err, tt.err)
			}
			continue
		}
		if err != nil || v.ID != tt.want {
			t.Errorf("Find(%q) = %s, %v; want %s", tt.id, v.ID, err, tt.want)
		}
	}
}
