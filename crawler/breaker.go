package crawler

import (
	"sync"
	"time"
)

// Breaker is a per-host circuit breaker. After Threshold consecutive
// failures a host is open: requests to it wait until Cooldown has passed;
// then one probe is let through (half-open). A success closes the circuit;
// a failed probe opens it again. Once the circuit has opened MaxOpens
// times in a row with no success between, the host is down: its requests
// fail at once (ErrHostDown) instead of waiting a cooldown each, and only
// a request that comes along after a cooldown has passed probes it. It is
// safe for concurrent use.
type Breaker struct {
	Threshold int
	Cooldown  time.Duration
	// MaxOpens is how many openings in a row make the host down (0: never).
	MaxOpens int

	mu    sync.Mutex
	hosts map[string]*circuit
}

type circuit struct {
	failures  int
	opens     int // openings since the last success
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

// Gate is the breaker's answer for one request.
type Gate int

const (
	Go   Gate = iota // the request may go
	Wait             // the host cools down: ask again after the wait
	Down             // the host is down: fail the request now
)

// Allow says whether a request to host may go now; when it must wait,
// wait is how long until it may ask again.
func (b *Breaker) Allow(host string, now time.Time) (g Gate, wait time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.get(host)
	if c.openUntil.IsZero() {
		return Go, 0
	}
	down := b.MaxOpens > 0 && c.opens >= b.MaxOpens
	if now.Before(c.openUntil) || c.probing {
		if down {
			return Down, 0
		}
		if c.probing {
			// One probe at a time; the others wait a cooldown more at most.
			return Wait, b.Cooldown
		}
		return Wait, c.openUntil.Sub(now)
	}
	c.probing = true
	return Go, 0
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
	if c.failures >= b.Threshold && b.Threshold > 0 {
		if c.openUntil.IsZero() || c.probing {
			c.opens++ // closed → open, or a failed probe
		}
		c.probing = false
		c.openUntil = now.Add(b.Cooldown)
		return true
	}
	c.probing = false
	return false
}

// Opens is how many times in a row host's circuit opened.
func (b *Breaker) Opens(host string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.get(host).opens
}

// State is "closed", "open", "half-open" or "down", for metrics and logs.
func (b *Breaker) State(host string, now time.Time) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.get(host)
	switch {
	case c.openUntil.IsZero():
		return "closed"
	case b.MaxOpens > 0 && c.opens >= b.MaxOpens:
		return "down"
	case now.Before(c.openUntil):
		return "open"
	}
	return "half-open"
}
