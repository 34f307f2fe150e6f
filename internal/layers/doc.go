// Package layers holds the test of the module's import layers: the table
// in docs/architecture.md ("Layers, as a test holds them") says which
// package may import which, and what each may link however deep; the
// test reads the table and `go list` of every package and fails on what
// the table does not allow. It has no code of its own.
package layers
