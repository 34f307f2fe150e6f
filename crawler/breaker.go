package crawler

import (
	"sync"
	"time"
)

// Breaker is a per-host circuit breaker. After Threshold consecutive
// failures a host is open: requests to it wait until Cooldown has passed;
// then one probe is let through (half-open). A success closes the circuit;
// a failed probe opens it again. It is safe for concurrent use.
type Breaker struct {
	Threshold int
	Cooldown  time.Duration

	mu    sync.Mutex
	hosts map[string]*circuit
}

type circuit struct {
	failures  int
	openUntil time.Time
	probing   bool
}

func (b *Breaker) get(host string) *circuit {
	if b.hosts == nil {
		b.hosts = map[string]*circuit{}
	}
	c := b.hosts[host]
	if c == nil {
		c = &circuit{}
		b.hosts[host] = c
	}
	return c
}

// Allow says whether a request to host may go now; if not, wait is how
// long until it may ask again.
func (b *Breaker) Allow(host string, now time.Time) (ok bool, wait time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.get(host)
	if c.openUntil.IsZero() {
		return true, 0
	}
	if now.Before(c.openUntil) {
		return false, c.openUntil.Sub(now)
	}
	if c.probing {
		// One probe at a time; the others wait a cooldown more at most.
		return false, b.Cooldown
	}
	c.probing = true
	return true, 0
}

// Success records a good response from host and closes its circuit.
func (b *Breaker) Success(host string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	*b.get(host) = circuit{}
}

// Failure records a failed request to host; it reports whether the circuit
// is now open.
func (b *Breaker) Failure(host string, now time.Time) (open bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.get(host)
	c.failures++
	c.probing = false
	if c.failures >= b.Threshold && b.Threshold > 0 {
		c.openUntil = now.Add(b.Cooldown)
		return true
	}
	return false
}

// State is "closed", "open" or "half-open", for metrics and logs.
func (b *Breaker) State(host string, now time.Time) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.get(host)
	switch {
	case c.openUntil.IsZero():
		return "closed"
	case now.Before(c.openUntil):
		return "open"
	}
	return "half-open"
}
