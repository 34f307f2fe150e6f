package testsite

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"time"
)

// Profile makes faults at random, at set rates, for pages that have no
// scripted fault. The choice for a request depends only on the seed, the
// path and how many times the path was asked for, so a crawl sees the same
// faults for the same seed (deterministic per seed).
type Profile struct {
	Name string
	// Rates are the chance of each fault for one request (their sum is at
	// most 1).
	Status5xx, TooMany, Reset, Truncate, Slow, SoftBlock float64
	// RetryAfter is sent with 429s.
	RetryAfter string
	// SlowBy is how long a slow response waits before it starts.
	SlowBy time.Duration
}

// Profiles are the named fault profiles of `crawl serve --faults`.
var Profiles = map[string]Profile{
	"none": {Name: "none"},
	"flaky": {Name: "flaky", Status5xx: 0.06, TooMany: 0.03, Reset: 0.02, Truncate: 0.02, Slow: 0.03, SoftBlock: 0.02,
		RetryAfter: "1", SlowBy: 300 * time.Millisecond},
	"hostile": {Name: "hostile", Status5xx: 0.2, TooMany: 0.1, Reset: 0.08, Truncate: 0.08, Slow: 0.08, SoftBlock: 0.08,
		RetryAfter: "2", SlowBy: time.Second},
}

// ProfileNamed looks a profile up, with an error naming the choices.
// "attack" is not a random profile but a set of journals (Site.SetAttack);
// as a random profile it is none.
func ProfileNamed(name string) (Profile, error) {
	if name == "attack" {
		return Profile{Name: "attack"}, nil
	}
	p, ok := Profiles[name]
	if !ok {
		return Profile{}, fmt.Errorf("fault profile %q: expected none, flaky, hostile or attack", name)
	}
	return p, nil
}

// decide picks the fault (or none) for the n-th request to path.
func (p Profile) decide(seed int64, path string, n int) (Fault, bool) {
	// SHA-256 mixes every input bit into every output bit (FNV does not:
	// its high bits hardly move when only n changes, so a page would meet
	// the same fault on every try).
	sum := sha256.Sum256(fmt.Appendf(nil, "%d|%s|%d", seed, path, n))
	x := float64(binary.BigEndian.Uint64(sum[:8])>>11) / float64(1<<53) // uniform in [0, 1)
	for _, c := range []struct {
		rate  float64
		fault Fault
	}{
		{p.Status5xx, Fault{Kind: Status, Status: 503}},
		{p.TooMany, Fault{Kind: TooMany, RetryAfter: p.RetryAfter}},
		{p.Reset, Fault{Kind: Reset}},
		{p.Truncate, Fault{Kind: Truncate}},
		{p.Slow, Fault{Kind: slow, delay: p.SlowBy}},
		{p.SoftBlock, Fault{Kind: SoftBlock}},
	} {
		if x < c.rate {
			return c.fault, true
		}
		x -= c.rate
	}
	return Fault{}, false
}
