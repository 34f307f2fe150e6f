package frontier

import "github.com/litcrawl/litcrawl/internal/engine"

// WithMinServerVersion makes Connect with o require version v, for a
// test that plays an old server.
func WithMinServerVersion(o Options, v string) Options {
	o.minServerVersion = v
	return o
}

// WalkOf is the job's walk.
func WalkOf(j Job) engine.Walk { return j.walk() }
