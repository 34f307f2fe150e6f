package report

import (
	"testing"
	"time"

	"gonum.org/v1/plot"
)

// Runs close together (minutes apart, or within a day) get time axis
// labels that do not repeat: each label names a distinct time.
func TestTimeTicksDoNotRepeat(t *testing.T) {
	start := time.Date(2026, 12, 6, 15, 41, 25, 0, time.UTC)
	for _, span := range []time.Duration{90 * time.Second, 50 * time.Minute, 20 * time.Hour, 40 * 24 * time.Hour} {
		p := plot.New()
		a := xAxis{span: span}
		a.apply(p)
		lo := float64(start.Unix())
		seen := map[string]bool{}
		labelled := 0
		for _, tk := range p.X.Tick.Marker.Ticks(lo, lo+span.Seconds()) {
			if tk.Label == "" {
				continue
			}
			labelled++
			if seen[tk.Label] {
				t.Errorf("span %v: the label %q twice", span, tk.Label)
			}
			seen[tk.Label] = true
		}
		if labelled < 2 {
			t.Errorf("span %v: %d labels", span, labelled)
		}
	}
}
