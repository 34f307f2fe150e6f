package app

import (
	"testing"
	"time"
)

// Two runs started in the same second get different ids (a nightly run
// tells its own papers from earlier runs' by the id).
func TestRunIDsAreUnique(t *testing.T) {
	now := time.Now()
	seen := map[string]bool{}
	for range 100 {
		id := NewRunID(now)
		if seen[id] {
			t.Fatalf("run id %s twice", id)
		}
		seen[id] = true
	}
}
