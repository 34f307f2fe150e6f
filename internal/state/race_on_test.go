//go:build race

package state_test

// raceEnabled: built with -race, whose pointer checks (checkptr) turn a
// damaged page into a fatal error of the runtime rather than a panic.
const raceEnabled = true
