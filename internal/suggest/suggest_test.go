package suggest

import "testing"

func TestNearest(t *testing.T) {
	for _, c := range []struct {
		typed string
		names []string
		want  string
	}{
		{"kep", []string{"keep", "base", "title"}, "keep"},
		{"KEEP", []string{"keep", "base"}, "keep"},
		{"tilte", []string{"keep", "base", "title"}, "title"},
		{"zzzzzz", []string{"keep", "base", "title"}, ""},
		{"dealy", []string{"delay", "timeout"}, "delay"},
		{"bse", []string{"base", "bse2"}, "base"}, // one edit each: the first in order
		{"x", nil, ""},
	} {
		if got := Nearest(c.typed, c.names...); got != c.want {
			t.Errorf("Nearest(%q, %q) = %q, want %q", c.typed, c.names, got, c.want)
		}
	}
	if got := DidYouMean("kep", "keep"); got != "; did you mean keep?" {
		t.Errorf("DidYouMean = %q", got)
	}
	if got := DidYouMean("zzzzzz", "keep"); got != "" {
		t.Errorf("DidYouMean of nothing near = %q, want empty", got)
	}
}
