// Package suggest finds the name a mistyped one was meant to be, for the
// "did you mean" of an error: a configuration key, a sink's parameter.
package suggest

import "strings"

// Nearest is the name in names closest to typed (case aside) within two
// edits, or a third of typed's length when that is more; "" when none is
// that close. Of two as close, the first in alphabetical order.
func Nearest(typed string, names ...string) string {
	best, bestD := "", max(2, len(typed)/3)+1
	lower := strings.ToLower(typed)
	for _, n := range names {
		if d := distance(lower, n); d < bestD || d == bestD && best != "" && n < best {
			best, bestD = n, d
		}
	}
	return best
}

// DidYouMean is "; did you mean NAME?" for the nearest name, or "".
func DidYouMean(typed string, names ...string) string {
	if n := Nearest(typed, names...); n != "" {
		return "; did you mean " + n + "?"
	}
	return ""
}

// distance is the Levenshtein distance of a and b, in bytes.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
