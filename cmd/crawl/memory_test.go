package main

import (
	"math"
	"runtime/debug"
	"testing"
)

// The crawl's soft memory limit grows with the requests in flight (plus
// room for the state's recent papers), and a
// GOMEMLIMIT in the environment is left to the Go runtime.
func TestLimitMemory(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "")
	for _, tt := range []struct {
		concurrency int
		want        int64
	}{{1, 22 << 20}, {4, 28 << 20}, {64, 148 << 20}} {
		limitMemory(tt.concurrency)
		if got := debug.SetMemoryLimit(-1); got != tt.want {
			t.Errorf("concurrency %d: limit %d MiB, want %d MiB", tt.concurrency, got>>20, tt.want>>20)
		}
	}
	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "off")
	limitMemory(4)
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT set, the limit was changed to %d MiB", got>>20)
	}
}
