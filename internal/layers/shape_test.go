package layers

import (
	"regexp"
	"testing"

	"github.com/fzipp/gocyclo"
)

// maxComplexity is the most branches a function outside the parser may
// have (gocyclo's cyclomatic complexity): above it, a reader cannot hold
// the function's cases at once; split it into steps that have names.
const maxComplexity = 30

// TestNoFunctionTooComplex: no function of the module outside parser/
// and the tests is over maxComplexity (the parser's stages are held to
// it in their own round).
func TestNoFunctionTooComplex(t *testing.T) {
	ignore := regexp.MustCompile(`(_test\.go$|/parser/|/testdata/)`)
	stats := gocyclo.Analyze([]string{"../.."}, ignore)
	if len(stats) < 500 {
		t.Fatalf("gocyclo read %d functions: not the module", len(stats))
	}
	for _, s := range stats {
		if s.Complexity > maxComplexity {
			t.Errorf("%s: %s.%s has a cyclomatic complexity of %d, more than %d", s.Pos, s.PkgName, s.FuncName, s.Complexity, maxComplexity)
		}
	}
}
