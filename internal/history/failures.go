package history

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/litcrawl/litcrawl/internal/engine"
)

// FailureGroup is the failed pages of one journal that failed the same
// way (their errors alike but for the page's URL).
type FailureGroup struct {
	Journal int64
	Pages   []int
	Text    string // the error, its URL as "…"
	First   string // the first page's error, whole
}

// GroupFailures groups the failures by journal and error, in the order
// they first appear: a host that went down fails every page left the same
// way, and the summary says it once, not once a page.
func GroupFailures(fs []engine.PageFailure) []*FailureGroup {
	var out []*FailureGroup
	byKey := map[string]*FailureGroup{}
	for _, f := range fs {
		text := urlInError.ReplaceAllStringFunc(f.Error, func(u string) string {
			return "…" + u[len(strings.TrimRight(u, ":;,.)")):] // (the punctuation after it stays)
		})
		key := fmt.Sprint(f.Journal) + " " + text
		g := byKey[key]
		if g == nil {
			g = &FailureGroup{Journal: f.Journal, Text: text, First: f.Error}
			byKey[key] = g
			out = append(out, g)
		}
		g.Pages = append(g.Pages, f.Page)
	}
	return out
}

// urlInError is a URL in an error's text.
var urlInError = regexp.MustCompile(`https?://[^\s"]+`)

// PageRanges writes page numbers as ranges: "3, 79-120, 122-300".
func PageRanges(pages []int) string {
	ps := slices.Clone(pages)
	slices.Sort(ps)
	ps = slices.Compact(ps)
	var b strings.Builder
	for i := 0; i < len(ps); {
		j := i
		for j+1 < len(ps) && ps[j+1] == ps[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		if j == i {
			fmt.Fprintf(&b, "%d", ps[i])
		} else {
			fmt.Fprintf(&b, "%d-%d", ps[i], ps[j])
		}
		i = j + 1
	}
	return b.String()
}

// String is the group as one line: "journal 7 page 3: …", or "journal 7,
// 221 pages (80-300): fetch …: host is down".
func (g *FailureGroup) String() string {
	if len(g.Pages) == 1 {
		return fmt.Sprintf("journal %d page %d: %s", g.Journal, g.Pages[0], g.First)
	}
	return fmt.Sprintf("journal %d, %d pages (%s): %s", g.Journal, len(g.Pages), PageRanges(g.Pages), g.Text)
}
