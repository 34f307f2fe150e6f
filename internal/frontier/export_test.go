package frontier

import "github.com/litcrawl/litcrawl/internal/engine"

// SetMinServerVersion makes Connect require version v, for a test that
// plays an old server; it returns the restore.
func SetMinServerVersion(v string) (restore func()) {
	old := minServerVersion
	minServerVersion = v
	return func() { minServerVersion = old }
}

// WalkOf is the job's walk.
func WalkOf(j Job) engine.Walk { return j.walk() }
